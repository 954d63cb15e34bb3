import { Body, Controller, Get, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiConflictResponse, ApiForbiddenResponse, ApiOkResponse, ApiOperation, ApiTags, ApiTooManyRequestsResponse, ApiUnauthorizedResponse, ApiUnprocessableEntityResponse } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { AuditService } from '../../audit/audit.service';
import { Audited } from '../../audit/audited.decorator';
import { SessionRepository } from '../../backends/ports/session.repository';
import { ADMIN_COOKIE, AdminOnly, CurrentPrincipal, Public } from '../../common/auth/decorators';
import type { Principal } from '../../common/auth/principal';
import { AppConfig } from '../../config/app-config';
import { SettingsService } from '../../config/settings.service';
import { AdminAuthService, endSession } from './admin-auth.service';
import { AdminPasswordService } from './admin-password.service';
import { DEVICE_COOKIE, DEVICE_COOKIE_MAX_AGE_MS, deviceCookieValue, triedUsername } from './device-cookie';
import { ChangePasswordDto, ChangePasswordResponseDto, LoginDto, LoginResponseDto, LogoutResponseDto, MeResponseDto } from './dto/login.dto';

/** Admin sign-in (CONTRACT §5). */
@ApiTags('admin session')
@Controller('api')
export class AdminAuthController {
  constructor(
    private readonly auth: AdminAuthService,
    private readonly cfg: AppConfig,
    private readonly password: AdminPasswordService,
    private readonly sessions: SessionRepository,
    private readonly settings: SettingsService,
    private readonly audit: AuditService,
  ) {}

  @Public()
  @Audited('admin.login', { target: () => null, context: (req) => ({ username: triedUsername(req) }), undo: endSession })
  @Post('login')
  @HttpCode(200)
  @ApiOperation({ summary: 'Sign in as the administrator; sets the HttpOnly session cookie memstore.sid' })
  @ApiOkResponse({ type: LoginResponseDto, description: 'Signed in' })
  @ApiUnauthorizedResponse({ description: 'Wrong username or password' })
  @ApiTooManyRequestsResponse({ description: 'Too many failed attempts from this address (Retry-After says when to retry)' })
  async login(@Body() dto: LoginDto, @Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<LoginResponseDto> {
    const username = await this.auth.login(req, dto.username ?? '', dto.password ?? '');
    // This browser's failures are counted apart from everyone else's from now on (decision 0052).
    const secure = this.cfg.cookieSecure === 'auto' ? req.secure : this.cfg.cookieSecure;
    res.cookie(DEVICE_COOKIE, deviceCookieValue(this.settings.serviceKey(), triedUsername(req)), {
      path: '/api/login',
      httpOnly: true,
      sameSite: 'strict',
      secure,
      maxAge: DEVICE_COOKIE_MAX_AGE_MS,
    });
    return { ok: true, username, must_change_password: this.password.mustChange() };
  }

  @AdminOnly()
  @Audited('admin.password_change', { target: () => null, detail: (_req, result) => ({ sessions_signed_out: (result as ChangePasswordResponseDto).sessions_signed_out }) })
  @Post('admin/password')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Change the admin password',
    description: 'Needs the current password. Every other admin session is signed out; this one stays. Refused (409) while MEMSTORE_ADMIN_PASSWORD or MEMSTORE_ADMIN_PASSWORD_HASH sets the password.',
  })
  @ApiOkResponse({ type: ChangePasswordResponseDto, description: 'Changed' })
  @ApiForbiddenResponse({ description: 'The current password is wrong' })
  @ApiConflictResponse({ description: 'The environment sets the admin password' })
  @ApiUnprocessableEntityResponse({ description: 'The new password is too short, too long or the same as the current one' })
  async changePassword(@Body() dto: ChangePasswordDto, @Req() req: Request): Promise<ChangePasswordResponseDto> {
    const signedOut = await this.password.change(dto.current_password, dto.new_password, this.sessions, req.sessionID);
    return { ok: true, sessions_signed_out: signedOut };
  }

  @Public()
  @Post('logout')
  @HttpCode(200)
  @ApiOperation({ summary: 'Sign out (idempotent); ends the session and clears the cookie' })
  @ApiOkResponse({ type: LogoutResponseDto, description: 'Signed out (also when there was no session)' })
  async logout(@Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<LogoutResponseDto> {
    // Only a sign-out that ends a session is an entry (anonymous calls cannot fill the log). Best effort:
    // a sign-out is never refused because the audit log is unavailable (decision 0051).
    if (req.session?.admin) await this.audit.record('admin.logout', { req, target: null }).catch(() => undefined);
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
    if (principal.kind === 'admin') return { ok: true, authenticated: true, kind: 'admin', username: principal.username, must_change_password: this.password.mustChange() };
    return { ok: true, authenticated: true, kind: 'token', token_id: principal.tokenId, scopes: principal.scopes };
  }
}
