import { Module } from '@nestjs/common';
import { AdminAuthModule } from '../admin/auth/admin-auth.module';
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
export class OAuthModule {}
