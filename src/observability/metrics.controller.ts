import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { MetricsAccess } from '../common/auth/decorators';
import { MetricsService } from './metrics.service';

@ApiTags('meta')
@Controller()
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get('metrics')
  @MetricsAccess()
  @ApiOperation({
    summary: 'Prometheus metrics (text exposition format)',
    description:
      'Requests and latency by route template and status, search latency by mode, memories per backend, backend health and check latency, ' +
      'failed sign-ins, throttled requests and process metrics. Readable by the signed-in admin, a token with scope `metrics:read`, ' +
      'or without credentials from an address in MEMSTORE_METRICS_ALLOWED_IPS (empty by default: never public).',
  })
  @ApiProduces('text/plain')
  @ApiOkResponse({ description: 'Prometheus text format 0.0.4', schema: { type: 'string' } })
  async scrape(@Res({ passthrough: true }) res: Response): Promise<string> {
    const { contentType, body } = await this.metrics.render();
    res.setHeader('Content-Type', contentType);
    res.setHeader('Cache-Control', 'no-store');
    return body;
  }
}
