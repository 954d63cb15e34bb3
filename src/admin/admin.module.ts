import { Module } from '@nestjs/common';
import { AdminConfigController } from './config/admin-config.controller';
import { AdminConfigService } from './config/admin-config.service';

@Module({
  controllers: [AdminConfigController],
  providers: [AdminConfigService],
})
export class AdminModule {}
