import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength } from 'class-validator';

/** Body of POST /api/login. */
export class LoginDto {
  @ApiPropertyOptional({ example: 'admin', default: '' })
  @IsOptional()
  @MaxLength(200, { message: 'String should have at most 200 characters', context: { type: 'string_too_long', ctx: { max_length: 200 } } })
  @IsString({ message: 'Input should be a valid string' })
  username?: string = '';

  @ApiPropertyOptional({ example: 'correct horse battery staple', default: '', format: 'password' })
  @IsOptional()
  @MaxLength(1024, { message: 'String should have at most 1024 characters', context: { type: 'string_too_long', ctx: { max_length: 1024 } } })
  @IsString({ message: 'Input should be a valid string' })
  password?: string = '';
}

export class LoginResponseDto {
  @ApiProperty({ example: true })
  ok: true;

  @ApiProperty({ example: 'admin' })
  username: string;

  @ApiProperty({ example: false, description: 'The password is the one generated at the first start: choose your own (POST /api/admin/password).' })
  must_change_password: boolean;
}

/** Body of POST /api/admin/password. */
export class ChangePasswordDto {
  @ApiProperty({ format: 'password', example: 'the password you signed in with' })
  @MaxLength(1024, { message: 'String should have at most 1024 characters', context: { type: 'string_too_long', ctx: { max_length: 1024 } } })
  @IsString({ message: 'Input should be a valid string' })
  current_password: string;

  @ApiProperty({ format: 'password', minLength: 12, example: 'a long passphrase of your own', description: 'At least 12 characters, at most 72 bytes (bcrypt).' })
  @MaxLength(1024, { message: 'String should have at most 1024 characters', context: { type: 'string_too_long', ctx: { max_length: 1024 } } })
  @IsString({ message: 'Input should be a valid string' })
  new_password: string;
}

export class ChangePasswordResponseDto {
  @ApiProperty({ example: true })
  ok: true;

  @ApiProperty({ example: 1, description: 'Other admin sessions that were signed out (this one stays signed in).' })
  sessions_signed_out: number;
}

export class LogoutResponseDto {
  @ApiProperty({ example: true })
  ok: true;
}

/** GET /api/me: anonymous, admin session, or API token. */
export class MeResponseDto {
  @ApiProperty({ example: true })
  ok: true;

  @ApiProperty({ example: true })
  authenticated: boolean;

  @ApiPropertyOptional({ enum: ['admin', 'token'], example: 'admin' })
  kind?: 'admin' | 'token';

  @ApiPropertyOptional({ example: 'admin', description: 'kind=admin only' })
  username?: string;

  @ApiPropertyOptional({ example: false, description: 'kind=admin only: the password is the generated one; the page asks to choose another' })
  must_change_password?: boolean;

  @ApiPropertyOptional({ example: '3f9a0c1d2e4b5a69', description: 'kind=token only' })
  token_id?: string;

  @ApiPropertyOptional({ type: [String], example: ['memory:read'], description: 'kind=token only' })
  scopes?: string[];
}
