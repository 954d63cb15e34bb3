import { Body, Controller, Get, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags, ApiTooManyRequestsResponse, ApiUnauthorizedResponse } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Audited } from '../../audit/audited.decorator';
import { ADMIN_COOKIE, CurrentPrincipal, Public } from '../../common/auth/decorators';
import type { Principal } from '../../common/auth/principal';
import { AppConfig } from '../../config/app-config';
import { AdminAuthService } from './admin-auth.service';
import { LoginDto, LoginResponseDto, LogoutResponseDto, MeResponseDto } from './dto/login.dto';

/** Admin sign-in (CONTRACT §5). */
@ApiTags('admin session')
@Controller('api')
export class AdminAuthController {
  constructor(
    private readonly auth: AdminAuthService,
    private readonly cfg: AppConfig,
  ) {}

  @Public()
  @Audited('admin.login', { target: () => null })
  @Post('login')
  @HttpCode(200)
  @ApiOperation({ summary: 'Sign in as the administrator; sets the HttpOnly session cookie memstore.sid' })
  @ApiOkResponse({ type: LoginResponseDto, description: 'Signed in' })
  @ApiUnauthorizedResponse({ description: 'Wrong username or password' })
  @ApiTooManyRequestsResponse({ description: 'Too many failed attempts from this address (Retry-After says when to retry)' })
  async login(@Body() dto: LoginDto, @Req() req: Request): Promise<LoginResponseDto> {
    const username = await this.auth.login(req, dto.username ?? '', dto.password ?? '');
    return { ok: true, username };
  }

  @Public()
  @Post('logout')
  @HttpCode(200)
  @ApiOperation({ summary: 'Sign out (idempotent); ends the session and clears the cookie' })
  @ApiOkResponse({ type: LogoutResponseDto, description: 'Signed out (also when there was no session)' })
  async logout(@Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<LogoutResponseDto> {
    await this.auth.logout(req);
    const secure = this.cfg.cookieSecure === 'auto' ? req.secure : this.cfg.cookieSecure;
    res.clearCookie(ADMIN_COOKIE, { path: '/', httpOnly: true, sameSite: 'lax', secure });
    return { ok: true };
  }

  @Public()
  @Get('me')
  @ApiOperation({ summary: 'Who is calling: anonymous, the signed-in admin, or an API token' })
  @ApiOkResponse({ type: MeResponseDto, description: 'The caller' })
  me(@CurrentPrincipal() principal: Principal | undefined): MeResponseDto {
    if (!principal) return { ok: true, authenticated: false };
    if (principal.kind === 'admin') return { ok: true, authenticated: true, kind: 'admin', username: principal.username };
    return { ok: true, authenticated: true, kind: 'token', token_id: principal.tokenId, scopes: principal.scopes };
  }
}
