import { Controller, Get, NotFoundException } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Public } from '../common/auth/decorators';
import { OAUTH_SCOPES, OAuthService } from './oauth.service';

/**
 * Protected Resource Metadata (RFC 9728) of the OAuth MCP endpoint only. /mcp has none, and there
 * is none at the root: Claude Code and Cursor would otherwise drop a configured Bearer header.
 */
@ApiExcludeController()
@Controller('.well-known/oauth-protected-resource')
export class OAuthMetadataController {
  constructor(private readonly oauth: OAuthService) {}

  @Get('mcp/oauth')
  @Public()
  resource(): Record<string, unknown> {
    const urls = this.oauth.urls;
    if (!urls) throw new NotFoundException('OAuth is not enabled on this service');
    return {
      resource: urls.resource,
      authorization_servers: [urls.issuer],
      scopes_supported: OAUTH_SCOPES,
      bearer_methods_supported: ['header'],
      resource_name: 'Memory Store',
    };
  }
}
