import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsOptional, IsString, MaxLength } from 'class-validator';
import { IsRealDateTime } from '../../common/iso-date';
import { MEMORY_SCOPES, MEMORY_TYPES, type MemoryScope, type MemoryType } from '../../backends/ports/memory.model';
import { OneOf, QueryBool, QueryInt, QueryNumber } from './validators';

const STRING = { message: 'Input should be a valid string', context: { type: 'string_type', ctx: {} } };

/** Query of GET /api/memories (spec §4, CONTRACT §3). */
export class ListMemoriesQueryDto {
  /** Full-text query; empty means the newest-first list. `"a phrase"` must match as a phrase, `-word` excludes. */
  @ApiPropertyOptional({ example: 'deploy "blue green" -staging', maxLength: 1000 })
  @IsOptional()
  @IsString(STRING)
  @MaxLength(1000, { message: 'String should have at most 1000 characters', context: { type: 'string_too_long', ctx: { max_length: 1000 } } })
  q?: string = '';

  @ApiPropertyOptional({ enum: MEMORY_TYPES })
  @IsOptional()
  @OneOf(MEMORY_TYPES)
  type?: MemoryType;

  @ApiPropertyOptional({ enum: MEMORY_SCOPES })
  @IsOptional()
  @OneOf(MEMORY_SCOPES)
  scope?: MemoryScope;

  /** Only memories of this agent. */
  @IsOptional()
  @IsString(STRING)
  agent?: string;

  /** Only memories of this project. */
  @IsOptional()
  @IsString(STRING)
  project?: string;

  /** Only memories carrying this tag; repeat the parameter (at most 50 times) to require several tags. */
  @ApiPropertyOptional({ type: [String], example: ['infra'], maxItems: 50 })
  @Transform(({ value }: { value: unknown }) => (value === undefined || Array.isArray(value) ? value : [value]))
  @IsOptional()
  @IsString({ each: true, ...STRING })
  @ArrayMaxSize(50, { message: 'List should have at most 50 items', context: { type: 'too_long', ctx: { max_length: 50 } } })
  @IsArray()
  tag?: string[];

  /** Only memories created in the last N days (N ≥ 1). */
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 36500, example: 7 })
  @IsOptional()
  @QueryInt({ min: 1, max: 36500 })
  days?: number;

  /** Only memories created at or after this ISO-8601 date-time. */
  @ApiPropertyOptional({ format: 'date-time', example: '2026-11-01T00:00:00.000Z', description: 'An ISO-8601 date or date-time that exists (2026-02-31 is refused)' })
  @IsOptional()
  @IsRealDateTime({ message: 'Input should be a valid datetime (a real date, ISO 8601)', context: { type: 'datetime_parsing', ctx: {} } })
  since?: string;

  /** Page size, 1 to 200. */
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 200, default: 20 })
  @IsOptional()
  @QueryInt({ min: 1, max: 200 })
  limit: number = 20;

  /** 1-based page (offset mode). */
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 999999999999999, default: 1 })
  @IsOptional()
  @QueryInt({ min: 1 })
  page: number = 1;

  /** Absolute offset; overrides page. */
  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: 999999999999999 })
  @IsOptional()
  @QueryInt({ min: 0 })
  skip?: number;

  /**
   * Search only: `hybrid` (default; full-text and meaning fused), `keyword` (full-text only) or
   * `semantic` (meaning only). Without an embedding model every search is keyword
   * (`search_mode` in the answer says which ran).
   */
  @ApiPropertyOptional({ enum: ['hybrid', 'keyword', 'semantic'], default: 'hybrid' })
  @IsOptional()
  @OneOf(['hybrid', 'keyword', 'semantic'])
  mode?: 'hybrid' | 'keyword' | 'semantic';

  /**
   * Search only: when the question is asked (default now). Times in `q` ("last week", "in May",
   * "two months ago", "on 8 May 2023") are resolved against it and rank the memories created then
   * higher in hybrid and semantic mode (a preference: never a filter).
   */
  @ApiPropertyOptional({
    format: 'date-time',
    example: '2023-05-20T12:00:00.000Z',
    description: 'Search only: when the question is asked, an ISO-8601 date or date-time that exists (default now). Times in q ("last week", "in May") are read from it.',
  })
  @IsOptional()
  @IsRealDateTime({ message: 'Input should be a valid datetime (a real date, ISO 8601)', context: { type: 'datetime_parsing', ctx: {} } })
  query_date?: string;

  /**
   * Semantic and hybrid search: the relevance floor, 0..1 (default 0.4). Rows scoring below it
   * are not answers: a search that nothing answers returns no rows, and `total` counts only rows
   * at or above the floor. 0 keeps every candidate; keyword mode ignores it (it has no floor).
   */
  @ApiPropertyOptional({ type: 'number', minimum: 0, maximum: 1, example: 0.4 })
  @IsOptional()
  @QueryNumber({ min: 0, max: 1 })
  min_score?: number;

  /** Search only: each row also carries `explain`, the signals that placed it (matched words, cosine, keyword score, neighbour boost, final score, the floor). */
  @ApiPropertyOptional({ type: 'boolean', default: false })
  @IsOptional()
  @QueryBool()
  explain?: boolean;

  /** `next_cursor` of a previous page; list mode only: with `q` it is refused (422). */
  @IsOptional()
  @IsString(STRING)
  after?: string;

  /** Also memories that a newer one superseded (decision 0130); by default they are left out. */
  @ApiPropertyOptional({ type: Boolean, default: false })
  @IsOptional()
  @QueryBool()
  include_superseded?: boolean;

  /** Answer as of this ISO-8601 moment: memories created by then and (unless include_superseded) not yet superseded then. */
  @ApiPropertyOptional({ format: 'date-time', example: '2026-06-01T00:00:00.000Z', description: 'An ISO-8601 date or date-time that exists' })
  @IsOptional()
  @IsRealDateTime({ message: 'Input should be a valid datetime (a real date, ISO 8601)', context: { type: 'datetime_parsing', ctx: {} } })
  as_of?: string;
}
