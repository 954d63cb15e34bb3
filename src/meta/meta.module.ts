import { Module } from '@nestjs/common';
import { MetaController } from './meta.controller';
import { MetaService } from './meta.service';

/** Health, guide, skill prompt and skill pack. OpenAPI, /docs and /redoc: see openapi.ts. */
@Module({
  controllers: [MetaController],
  providers: [MetaService],
  exports: [MetaService],
})
export class MetaModule {}
