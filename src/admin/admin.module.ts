import { Module } from '@nestjs/common';
import { AdminAuthModule } from './auth/admin-auth.module';
import { AdminConfigController } from './config/admin-config.controller';
import { AdminConfigService } from './config/admin-config.service';

/** The administrator's surface: sign-in and sessions, configuration and backend checks. */
@Module({
  imports: [AdminAuthModule],
  controllers: [AdminConfigController],
  providers: [AdminConfigService],
})
export class AdminModule {}
