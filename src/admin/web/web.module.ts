import { Module } from '@nestjs/common';
import { WebAssetsService } from './web-assets.service';
import { WebController } from './web.controller';

/** Serves the admin page built from web/ (see web/vite.config.ts). */
@Module({
  controllers: [WebController],
  providers: [WebAssetsService],
})
export class AdminWebModule {}
