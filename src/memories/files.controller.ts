import { Controller, Get, Optional, Param, Query, Res, StreamableFile } from '@nestjs/common';
import { ApiExcludeEndpoint } from '@nestjs/swagger';
import type { Response } from 'express';
import { verifyFileSignature } from '../backends/filesystem/url-signer';
import { objectKeyProblem } from '../backends/ports/object-key';
import { ObjectStore } from '../backends/ports/object-store.port';
import { Public } from '../common/auth/decorators';
import { ForbiddenError, NotFoundError } from '../common/errors';
import { SettingsService } from '../config/settings.service';
import { TokensService } from '../tokens/tokens.service';
import { MARKDOWN_TYPE } from './memories.service';
import { idFromKey } from './memory-id';

/**
 * Signed download URLs of the filesystem object store (CONTRACT §3): public, because the HMAC
 * signature (service key, over the key, the expiry and the token that asked for it) is the
 * credential. A tampered or expired link, or one whose token is no longer valid, gets 403. Links a
 * token asks for are served here on every object store (decision 0052), so revoking the token ends them.
 */
@Controller('api/files')
export class FilesController {
  constructor(
    private readonly store: ObjectStore,
    private readonly settings: SettingsService,
    // Absent in the command-line context (no HTTP there); TokensModule is global in the app.
    @Optional() private readonly tokens?: TokensService,
  ) {}

  @Get('*key')
  @Public()
  @ApiExcludeEndpoint()
  async download(
    @Param('key') keyParam: string | string[],
    @Query('expires') expires: unknown,
    @Query('sig') sig: unknown,
    @Query('tok') tok: unknown,
    @Res({ passthrough: true }) res: Response,
  ): Promise<StreamableFile> {
    const key = Array.isArray(keyParam) ? keyParam.join('/') : String(keyParam ?? '');
    const check = objectKeyProblem(key) ? 'invalid' : verifyFileSignature(this.settings.serviceKey(), key, expires, sig, Date.now(), tok);
    if (check === 'invalid') throw new ForbiddenError('Invalid download link: the signature does not match');
    if (check === 'expired') throw new ForbiddenError('Download link expired');
    // A link a token made dies with the token (revoked, expired, deleted or no longer memory:read).
    if (typeof tok === 'string' && !(await this.tokens?.stillAllows(tok, 'memory:read'))) throw new ForbiddenError('Download link revoked: the API token that made it is no longer valid');
    let body: Buffer;
    try {
      body = await this.store.get(key);
    } catch (e) {
      if (e instanceof NotFoundError) throw new NotFoundError('File not found');
      throw e;
    }
    // A version's object (memories/<id>.v<n>-<write>.md) downloads as <id>.md, like the old layout.
    const id = idFromKey(key);
    const filename = id ? `${id}.md` : key.slice(key.lastIndexOf('/') + 1).replace(/[^A-Za-z0-9._-]/g, '_');
    res.setHeader('Cache-Control', 'private, no-store');
    return new StreamableFile(body, {
      type: key.endsWith('.md') ? MARKDOWN_TYPE : 'application/octet-stream',
      disposition: `attachment; filename="${filename}"`,
      length: body.length,
    });
  }
}
