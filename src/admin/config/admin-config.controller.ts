import { Body, Controller, Get, Header, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags, ApiUnprocessableEntityResponse } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Audited, bodyFields } from '../../audit/audited.decorator';
import { AdminOnly, Authenticated, CurrentPrincipal, Public } from '../../common/auth/decorators';
import type { Principal } from '../../common/auth/principal';
import { baseUrl } from '../../common/base-url';
import { AppConfig, SETTING_KEYS } from '../../config/app-config';
import { AdminConfigService } from './admin-config.service';
import {
  ConfigPathResponseDto,
  ConfigResponseDto,
  DeriveEndpointResponseDto,
  NotReadyResponseDto,
  RawConfigResponseDto,
  ReadyResponseDto,
  SaveConfigResponseDto,
  SchemaResponseDto,
  StatusResponseDto,
  TestBackendsResponseDto,
} from './dto/config-responses.dto';
import { DeriveEndpointDto } from './dto/derive-endpoint.dto';
import { SaveConfigDto } from './dto/save-config.dto';
import { TestBackendsDto } from './dto/test-backends.dto';

/** Admin configuration routes (CONTRACT §5). Thin: the work is in AdminConfigService. */
@ApiTags('admin')
@Controller('api')
export class AdminConfigController {
  constructor(
    private readonly service: AdminConfigService,
    private readonly cfg: AppConfig,
  ) {}

  @Get('schema')
  @AdminOnly()
  @ApiOperation({ summary: 'Settings form definition', description: 'Sections and fields of the configuration form (key, label, type, secret, required, help).' })
  @ApiOkResponse({ type: SchemaResponseDto })
  schema() {
    return { ok: true, schema: this.service.schema() };
  }

  @Get('config')
  @AdminOnly()
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    summary: 'Settings in effect (secrets masked)',
    description: 'Values in effect with secrets masked, where each comes from (env, file, credentials, default), completeness, a one-line status and the active adapters.',
  })
  @ApiOkResponse({ type: ConfigResponseDto })
  async getConfig() {
    return { ok: true, ...(await this.service.config()) };
  }

  @Post('config')
  @HttpCode(200)
  @AdminOnly()
  @Audited('settings.update', { target: () => null, detail: (req) => ({ keys: bodyFields(req).filter((k) => (SETTING_KEYS as readonly string[]).includes(k)) }) })
  @ApiOperation({
    summary: 'Save settings (partial)',
    description:
      'Absent or null = unchanged, "" = cleared. Credentials go to the encrypted credential store, the rest to the config file. Takes effect without a restart; incomplete settings are saved anyway and reported in `missing`.',
  })
  @ApiOkResponse({ type: SaveConfigResponseDto })
  @ApiUnprocessableEntityResponse({ description: 'A value has the wrong type or format' })
  async saveConfig(@Body() body: SaveConfigDto) {
    return { ok: true, ...(await this.service.save(body)) };
  }

  @Get('config/raw')
  @AdminOnly()
  @Header('Cache-Control', 'no-store') // secrets in clear: never cached
  @ApiOperation({ summary: 'Settings in effect, unmasked' })
  @ApiOkResponse({ type: RawConfigResponseDto })
  raw() {
    return { ok: true, ...this.service.raw() };
  }

  @Get('config/path')
  @AdminOnly()
  @ApiOperation({ summary: 'Where the config file and the credential store are' })
  @ApiOkResponse({ type: ConfigPathResponseDto })
  path() {
    return { ok: true, ...this.service.paths() };
  }

  @Post('test')
  @HttpCode(200)
  @AdminOnly()
  @Audited('backend.test', {
    target: (req) => (req.body as TestBackendsDto)?.target ?? 'all',
    detail: (_, r) => backendTestDetail(r),
    outcome: (r) => (Object.values(backendTestDetail(r)).every((ok) => ok) ? 'success' : 'failure'),
  })
  @ApiOperation({
    summary: 'Test the backends',
    description: 'Writes, reads and deletes a probe on the active document database and/or object store. target: all, docdb (alias mongodb), objstore (aliases s3, r2).',
  })
  @ApiOkResponse({ type: TestBackendsResponseDto })
  @ApiUnprocessableEntityResponse({ description: 'Unknown target' })
  async test(@Body() body: TestBackendsDto) {
    return { ok: true, ...(await this.service.test(body.target ?? 'all')) };
  }

  @Post('derive-endpoint')
  @HttpCode(200)
  @AdminOnly()
  @ApiOperation({ summary: 'Resolve the object store endpoint', description: 'An explicit endpoint wins; a Cloudflare account id gives https://<account_id>.r2.cloudflarestorage.com.' })
  @ApiOkResponse({ type: DeriveEndpointResponseDto })
  @ApiUnprocessableEntityResponse({ description: 'Neither an account id nor an endpoint, or an invalid one' })
  derive(@Body() body: DeriveEndpointDto) {
    return { ok: true, ...this.service.deriveEndpoint(body) };
  }

  @Get('ready')
  @Public()
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    summary: 'Readiness probe',
    description:
      'Whether both backends (document database, object store) answer: 200 when they do; else 503 with the error envelope plus `status: "not_ready"` and `not_ready`, the list of backends that do not answer (`docdb`, `objstore`), and no other detail. The liveness probe is /api/health.',
  })
  @ApiOkResponse({ type: ReadyResponseDto, description: 'Ready to serve' })
  async ready(@Res({ passthrough: true }) res: Response): Promise<ReadyResponseDto | NotReadyResponseDto> {
    const { ready, notReady } = await this.service.readiness();
    if (ready) return { ok: true, status: 'ready' };
    res.status(503);
    const names = { docdb: 'document database', objstore: 'object store' };
    return { ok: false, status: 'not_ready', error: `Not ready: the ${notReady.map((b) => names[b]).join(' and the ')} ${notReady.length > 1 ? 'do' : 'does'} not answer`, not_ready: notReady };
  }

  @Get('status')
  @Authenticated()
  @ApiOperation({
    summary: 'Backend health summary',
    description:
      'Document database and object store health, the public URL, memory count, search mode and embeddings (provider, model, pending). Admin session or any valid API token; token holders see "reachable" instead of adapter details.',
  })
  @ApiOkResponse({ type: StatusResponseDto })
  async status(@Req() req: Request, @CurrentPrincipal() principal: Principal | undefined) {
    const s = await this.service.status(principal?.kind === 'admin');
    return { ok: true, docdb: s.docdb, objstore: s.objstore, public_url: baseUrl(this.cfg, req), memories: s.memories, embeddings: s.embeddings };
  }
}

/** Which backends a test reached (true) or not (false); never their descriptions or errors with hosts. */
function backendTestDetail(result: unknown): Record<string, boolean> {
  const results = (result as { results?: Record<string, { ok: boolean } | undefined> }).results ?? {};
  return Object.fromEntries(
    Object.entries(results)
      .filter(([, r]) => r)
      .map(([k, r]) => [k, r!.ok]),
  );
}
