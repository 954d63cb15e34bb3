import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { IsRealDateTime } from '../../common/iso-date';
import { AUDIT_ACTIONS } from '../audit.service';

export class AuditQueryDto {
  /** Page size (default 50). */
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(200)
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 200, default: 50 })
  limit?: number;

  /** `next_cursor` of the previous page. */
  @IsOptional()
  @IsString()
  @Matches(/^[0-9a-z]{9}[0-9a-f]{12}$/, { message: 'cursor must be a next_cursor value from a previous page' })
  @ApiPropertyOptional({ description: 'next_cursor of the previous page', pattern: '^[0-9a-z]{9}[0-9a-f]{12}$' })
  cursor?: string;

  @IsOptional()
  @IsIn(AUDIT_ACTIONS)
  @ApiPropertyOptional({ enum: AUDIT_ACTIONS, description: 'Only this action' })
  action?: string;

  /** A token id, or the admin username. */
  @IsOptional()
  @IsString()
  @MaxLength(200)
  @ApiPropertyOptional({ description: 'Only this actor: a token id, or the admin username' })
  actor?: string;

  @IsOptional()
  @IsRealDateTime()
  @ApiPropertyOptional({ format: 'date-time', description: 'Only entries at or after this time (ISO 8601)', example: '2026-01-31T00:00:00Z' })
  since?: string;
}

export class AuditActorDto {
  @ApiProperty({ enum: ['admin', 'token', 'anonymous'] })
  kind!: string;
  @ApiProperty({ type: String, nullable: true, description: 'Admin username or token id' })
  id!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Token name (admin: the username)' })
  name!: string | null;
}

export class AuditEntryDto {
  @ApiProperty({ description: 'Sortable entry id' })
  id!: string;
  @ApiProperty({ format: 'date-time' })
  at!: string;
  @ApiProperty({ enum: AUDIT_ACTIONS })
  action!: string;
  @ApiProperty({ enum: ['success', 'failure'] })
  outcome!: string;
  @ApiProperty({ type: AuditActorDto })
  actor!: AuditActorDto;
  @ApiProperty({ type: String, nullable: true, description: 'Token id or memory id acted on' })
  target!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Client address' })
  address!: string | null;
  @ApiProperty({ type: String, nullable: true })
  request_id!: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'Non-secret facts: field names, counts, the error of a failure' })
  detail!: Record<string, unknown>;
}

export class AuditListResponseDto {
  @ApiProperty({ enum: [true] })
  ok!: true;
  @ApiProperty({ type: [AuditEntryDto], description: 'Newest first' })
  entries!: AuditEntryDto[];
  @ApiProperty({ type: String, nullable: true, description: 'Pass as cursor for the next (older) page; null on the last page' })
  next_cursor!: string | null;
}
