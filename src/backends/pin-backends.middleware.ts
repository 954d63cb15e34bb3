import { Injectable, NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { BackendsService } from './backends.service';

/**
 * Pins the adapters active when a request arrives for the whole request, so that a request in
 * flight during a backend switch finishes on the old adapters (they are closed only after a
 * drain period).
 */
@Injectable()
export class PinBackendsMiddleware implements NestMiddleware {
  constructor(private readonly backends: BackendsService) {}

  use(_req: Request, _res: Response, next: NextFunction): void {
    this.backends.pin(() => next());
  }
}
