import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post } from '@nestjs/common';
import { ApiCreatedResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags, ApiUnprocessableEntityResponse } from '@nestjs/swagger';
import { Audited, bodyFields } from '../audit/audited.decorator';
import { CurrentPrincipal, TokenManagers } from '../common/auth/decorators';
import type { Principal } from '../common/auth/principal';
import { CreateTokenDto, UpdateTokenDto } from './dto/create-token.dto';
import type { TokenRecord } from '../backends/ports/token.repository';
import { CreatedTokenResponseDto, mapToken, TokenDeletedResponseDto, TokenDto, TokenListResponseDto, TokenRate, TokenResponseDto } from './dto/token-response.dto';
import { TokensService } from './tokens.service';

/** What a tokens:manage token may do (decision 0105), stated in each operation's OpenAPI description. */
const MANAGER_NOTE =
  'A `tokens:manage` token sees and manages only tokens whose `namespaces` lie inside its own (any other answers 404, as if absent), and grants only namespaces inside its own, scopes it holds, a rate limit no higher than its own and no expiry later than its own (403 naming what exceeds). The admin manages all.';

const TOKEN_ID_PARAM = { name: 'token_id', description: '16 lowercase hex characters', example: '3f9a0c1d2e4b5a69' };

/** Token management (CONTRACT §4): the admin manages all; a `tokens:manage` token those inside its own binding (decision 0105). */
@ApiTags('tokens')
@TokenManagers()
@Controller('api/tokens')
export class TokensController {
  constructor(private readonly tokens: TokensService) {}

  private rate(t: TokenRecord): TokenRate {
    return { limit: this.tokens.rateLimitOf(t), recent: this.tokens.recentRate(t.id) };
  }

  private view(t: TokenRecord): TokenDto {
    return mapToken(t, this.rate(t));
  }

  @Get()
  @ApiOperation({ summary: 'List API tokens (metadata only, newest first)', description: MANAGER_NOTE })
  @ApiOkResponse({ type: TokenListResponseDto, description: 'Token records, newest first' })
  async list(@CurrentPrincipal() who: Principal): Promise<TokenListResponseDto> {
    const now = Date.now();
    return { ok: true, tokens: (await this.tokens.list(who)).map((t) => mapToken(t, this.rate(t), now)) };
  }

  @Post()
  @HttpCode(201)
  @Audited('token.create', {
    target: (_, r) => (r as CreatedTokenResponseDto).token.id,
    detail: (_, r) => ({ name: (r as CreatedTokenResponseDto).token.name, scopes: (r as CreatedTokenResponseDto).token.scopes, namespaces: (r as CreatedTokenResponseDto).token.namespaces }),
  })
  @ApiOperation({ summary: 'Create an API token; the plaintext is returned once', description: MANAGER_NOTE })
  @ApiCreatedResponse({ type: CreatedTokenResponseDto, description: 'The new token record and its plaintext (shown only here)' })
  @ApiUnprocessableEntityResponse({ description: 'Unknown scope or preset, both expiry fields, a past expires_at, an invalid allowed_ips or namespaces entry' })
  async create(@Body() dto: CreateTokenDto, @CurrentPrincipal() who: Principal): Promise<CreatedTokenResponseDto> {
    const { record, plaintext } = await this.tokens.create(dto, who);
    return { ok: true, token: mapToken(record, this.rate(record)), plaintext };
  }

  @Patch(':token_id')
  @Audited('token.update', { detail: (req) => ({ fields: bodyFields(req) }) })
  @ApiOperation({ summary: 'Change a token (name, scopes, namespaces, expiry, allow-list, unrevoke); the secret is not rotated', description: MANAGER_NOTE })
  @ApiParam(TOKEN_ID_PARAM)
  @ApiOkResponse({ type: TokenResponseDto, description: 'The token record' })
  @ApiNotFoundResponse({ description: 'Token not found (or, for a tokens:manage token, outside its namespaces)' })
  async update(@Param('token_id') id: string, @Body() dto: UpdateTokenDto, @CurrentPrincipal() who: Principal): Promise<TokenResponseDto> {
    return { ok: true, token: this.view(await this.tokens.update(id, dto, who)) };
  }

  @Post(':token_id/revoke')
  @HttpCode(200)
  @Audited('token.revoke')
  @ApiOperation({ summary: 'Revoke a token (idempotent); it gets 401 from then on', description: MANAGER_NOTE })
  @ApiParam(TOKEN_ID_PARAM)
  @ApiOkResponse({ type: TokenResponseDto, description: 'The token record' })
  @ApiNotFoundResponse({ description: 'Token not found (or, for a tokens:manage token, outside its namespaces)' })
  async revoke(@Param('token_id') id: string, @CurrentPrincipal() who: Principal): Promise<TokenResponseDto> {
    return { ok: true, token: this.view(await this.tokens.revoke(id, who)) };
  }

  @Delete(':token_id')
  @Audited('token.delete')
  @ApiOperation({ summary: 'Delete a token for good', description: MANAGER_NOTE })
  @ApiParam(TOKEN_ID_PARAM)
  @ApiOkResponse({ type: TokenDeletedResponseDto, description: 'Deleted' })
  @ApiNotFoundResponse({ description: 'Token not found (or, for a tokens:manage token, outside its namespaces)' })
  async delete(@Param('token_id') id: string, @CurrentPrincipal() who: Principal): Promise<TokenDeletedResponseDto> {
    await this.tokens.delete(id, who);
    return { ok: true, deleted: true, id };
  }
}
