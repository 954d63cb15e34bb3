import { MiddlewareConsumer, Module, NestModule, RequestMethod } from '@nestjs/common';
import { AdminAuthModule } from '../admin/auth/admin-auth.module';
import { LoginThrottleMiddleware } from '../admin/auth/login-throttle.middleware';
import { OAuthConsentController } from './oauth-consent.controller';
import { OAuthMetadataController } from './oauth-metadata.controller';
import { OAuthService } from './oauth.service';

/** OAuth 2.1 for MCP connectors (MEMSTORE_OAUTH): the authorization server at /oauth, its consent page, the resource metadata. */
@Module({
  imports: [AdminAuthModule],
  controllers: [OAuthConsentController, OAuthMetadataController],
  providers: [OAuthService],
  exports: [OAuthService],
})
export class OAuthModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    // The consent page's sign-in checks the admin password: throttled like POST /api/login.
    consumer.apply(LoginThrottleMiddleware).forRoutes({ path: 'oauth-consent/:uid/login', method: RequestMethod.POST });
  }
}
