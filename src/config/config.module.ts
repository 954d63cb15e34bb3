import { DynamicModule, Global, Module } from '@nestjs/common';
import { AppConfig } from './app-config';
import { SettingsService } from './settings.service';

/** The boot configuration (validated once) and the admin-editable settings store. */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(cfg: AppConfig): DynamicModule {
    return {
      module: ConfigModule,
      providers: [{ provide: AppConfig, useValue: cfg }, SettingsService],
      exports: [AppConfig, SettingsService],
    };
  }
}
