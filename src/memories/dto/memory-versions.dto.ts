import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional } from 'class-validator';
import { MemoryDto } from './memory-response.dto';
import { QueryInt } from './validators';

/** What an imported file claimed about itself (never taken as who wrote it). */
export class ImportClaimDto {
  @ApiProperty({ type: Object, nullable: true, example: { kind: 'admin', id: 'admin', name: null } })
  claimed_author: { kind: 'token' | 'admin'; id: string; name: string | null } | null;
  @ApiProperty({ example: 7 })
  claimed_version: number;
  @ApiProperty({ format: 'date-time', example: '2020-01-01T00:00:00.000Z' })
  claimed_created_at: string;
  @ApiProperty({ format: 'date-time', example: '2020-01-01T00:00:00.000Z' })
  claimed_updated_at: string;
}

/** Who wrote a version: an API token (id and name at the time) or the signed-in administrator. */
export class AuthorDto {
  @ApiProperty({ enum: ['token', 'admin'], example: 'token' })
  kind: 'token' | 'admin';
  /** Token id, or the admin's user name. */
  @ApiProperty({ example: '3f9a2c1d4e5b6a70' })
  id: string;
  /** Token name at the time of the write (null for the admin). */
  @ApiProperty({ type: String, nullable: true, example: 'release-bot' })
  name: string | null;
  /** Only on a version written by an import: the author above is the importer; this is what the file claimed. */
  @ApiPropertyOptional({ type: () => ImportClaimDto })
  imported?: ImportClaimDto;
}

/** One kept version of a memory. */
export class VersionDto {
  @ApiProperty({ example: 3, minimum: 1 })
  version: number;
  @ApiProperty({ format: 'date-time', example: '2026-11-21T09:30:00.000Z' })
  updated_at: string;
  @ApiProperty({ type: String, nullable: true, example: 'Deployment policy' })
  title: string | null;
  /** Bytes of content (UTF-8). */
  @ApiProperty({ example: 412 })
  size: number;
  @ApiProperty({ type: AuthorDto, nullable: true })
  author: AuthorDto | null;
  /** Whether this is the memory's current version. */
  @ApiProperty({ example: false })
  current: boolean;
}

export class VersionListResponseDto {
  @ApiProperty({ example: true })
  ok: true;
  /** Newest first. */
  @ApiProperty({ type: [VersionDto] })
  rows: VersionDto[];
  @ApiProperty({ example: 1 })
  count: number;
  /** Versions kept (at most the memory_history_keep setting, default 20). */
  @ApiProperty({ example: 1 })
  total: number;
  @ApiProperty({ example: 1 })
  page: number;
  @ApiProperty({ example: 20 })
  page_size: number;
  @ApiProperty({ example: false })
  has_next: boolean;
  @ApiProperty({ example: 1 })
  current_version: number;
}

export class VersionResponseDto {
  @ApiProperty({ example: true })
  ok: true;
  version: VersionDto;
  /** The memory as it was at that version. */
  memory: MemoryDto;
}

export class VersionListQueryDto {
  @ApiPropertyOptional({ type: 'integer', default: 20, minimum: 1, maximum: 100 })
  @IsOptional()
  @QueryInt({ min: 1, max: 100 })
  limit: number = 20;

  /** 1-based page. */
  @ApiPropertyOptional({ type: 'integer', default: 1, minimum: 1, maximum: 100000 })
  @IsOptional()
  @QueryInt({ min: 1, max: 100000 })
  page: number = 1;
}
