import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { AdminModule } from './admin/admin.module';
import { AuditModule } from './audit/audit.module';
import { AdminWebModule } from './admin/web/web.module';
import { BackendsModule } from './backends/backends.module';
import { AuthGuard } from './common/auth/auth.guard';
import { AllExceptionsFilter } from './common/http-exception.filter';
import { AppValidationPipe } from './common/validation.pipe';
import { AppConfig } from './config/app-config';
import { ConfigModule } from './config/config.module';
import { EmbeddingsModule } from './embeddings/embeddings.module';
import { McpModule } from './mcp/mcp.module';
import { OAuthModule } from './oauth/oauth.module';
import { MemoriesModule } from './memories/memories.module';
import { MetaModule } from './meta/meta.module';
import { ObservabilityModule } from './observability/observability.module';
import { PortabilityModule } from './portability/portability.module';
import { TokensModule } from './tokens/tokens.module';

/**
 * The whole service. The global pipeline (validation pipe, exception filter, deny-by-default
 * auth guard) is registered here as providers so a test module gets exactly the production one.
 * The modules' routes are registered in the order of `imports`, each one more layer for the
 * requests after it to pass: the memories routes, the agents' hot path, come first.
 */
@Module({})
export class AppModule {
  static register(cfg: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(cfg),
        BackendsModule,
        EmbeddingsModule,
        MemoriesModule,
        TokensModule,
        AdminModule,
        AdminWebModule,
        MetaModule,
        McpModule,
        OAuthModule,
        ObservabilityModule,
        AuditModule,
        PortabilityModule,
      ],
      providers: [
        { provide: APP_PIPE, useClass: AppValidationPipe },
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
        { provide: APP_GUARD, useClass: AuthGuard },
      ],
    };
  }
}
