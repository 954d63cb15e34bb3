import { ApiProperty, ApiPropertyOptional, OmitType } from '@nestjs/swagger';
import { MEMORY_SCOPES, MEMORY_TYPES } from '../../backends/ports/memory.model';

const ID = '6740a1b2c3d4e5f601234567';
const AT = '2026-11-21T09:30:00.000Z';

/** A memory as fetch, create and patch return it. */
export class MemoryDto {
  @ApiProperty({ example: ID, pattern: '^[0-9a-f]{24}$' })
  id: string;
  @ApiProperty({ example: 'default', description: 'The namespace the memory belongs to (issue 43): the request’s own; `default` for a token bound to it or to *' })
  namespace: string;
  @ApiProperty({ type: String, nullable: true, example: 'Deployment policy' })
  title: string | null;
  @ApiProperty({ enum: MEMORY_TYPES, example: 'decision' })
  type: string;
  @ApiProperty({ example: 'Deploys go through the blue-green pipeline; never deploy on Fridays.' })
  content: string;
  @ApiProperty({ type: [String], example: ['deploy', 'policy'] })
  tags: string[];
  @ApiProperty({ enum: MEMORY_SCOPES, example: 'project' })
  scope: string;
  @ApiProperty({ type: String, nullable: true, example: 'release-bot' })
  agent: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'payments' })
  project: string | null;
  @ApiProperty({ format: 'date-time', example: AT })
  created_at: string;
  @ApiProperty({ format: 'date-time', example: AT })
  updated_at: string;
  /** Write counter: 1 on create, +1 on every change; also the ETag (`"<version>"`) for If-Match. */
  @ApiProperty({ type: Number, example: 1, minimum: 1 })
  version: number;
  /** Set when a newer memory replaced this one (`supersedes`, decision 0130): the newer memory's id. */
  @ApiPropertyOptional({ example: ID, pattern: '^[0-9a-f]{24}$' })
  superseded_by?: string;
  /** Set with superseded_by: when the superseding write happened (the end of this memory's validity). */
  @ApiPropertyOptional({ format: 'date-time', example: AT })
  valid_to?: string;
}

/**
 * What a write answers to a token without memory:read (decision 0050): the id, version and
 * timestamps, plus only the fields the request itself set; never stored content it did not send.
 */
export class WrittenMemoryDto {
  @ApiProperty({ example: ID, pattern: '^[0-9a-f]{24}$' })
  id: string;
  @ApiProperty({ format: 'date-time', example: AT })
  created_at: string;
  @ApiProperty({ format: 'date-time', example: AT })
  updated_at: string;
  @ApiProperty({ type: Number, example: 2, minimum: 1 })
  version: number;
  // Only the fields the request set (no validation decorators: a response, never parsed).
  @ApiPropertyOptional({ type: String, nullable: true })
  title?: string | null;
  @ApiPropertyOptional({ enum: MEMORY_TYPES })
  type?: string;
  @ApiPropertyOptional()
  content?: string;
  @ApiPropertyOptional({ type: [String] })
  tags?: string[];
  @ApiPropertyOptional({ enum: MEMORY_SCOPES })
  scope?: string;
  @ApiPropertyOptional({ type: String, nullable: true })
  agent?: string | null;
  @ApiPropertyOptional({ type: String, nullable: true })
  project?: string | null;
}

export class MemoryResponseDto {
  @ApiProperty({ example: true })
  ok: true;
  memory: MemoryDto;
}

/** A stored memory that looks like a near-copy of the one just created. */
export class SimilarMemoryDto {
  @ApiProperty({ example: ID })
  id: string;
  @ApiProperty({ type: String, nullable: true, example: 'Deployment policy' })
  title: string | null;
  /** Cosine similarity of the two memories' embeddings (0..1). */
  @ApiProperty({ example: 0.93 })
  score: number;
  /** True when it looks like an older statement of what the new memory says (same subject, different text): pass `supersedes` if the new one replaces it. */
  @ApiProperty({ example: false })
  likely_update: boolean;
}

/** POST /api/memories: the memory, and up to 3 near-copies already stored (update one of them instead of piling up copies). */
export class CreatedMemoryResponseDto extends MemoryResponseDto {
  @ApiProperty({ type: [SimilarMemoryDto], description: 'At most 3 stored memories whose meaning is very close (cosine >= 0.86); empty when search is keyword-only.' })
  similar: SimilarMemoryDto[];
  /** Present when a hint is a likely update: a sentence saying how to pass `supersedes` (decision 0130). */
  @ApiPropertyOptional({ example: 'This looks like a newer statement of 6740a1b2c3d4e5f601234567. If it replaces it, pass supersedes: ["6740a1b2c3d4e5f601234567"] …' })
  hint?: string;
}

/** Why a search row is where it is (explain=true; src/memories/search/relevance.ts). */
export class SearchExplainDto {
  /** Query words the memory holds (stems match: "deploy" finds "Deployments"). */
  @ApiProperty({ type: [String], example: ['deploy'] })
  matched_words: string[];
  /** Quoted phrases of the query found as phrases (they weigh; in semantic and hybrid searches they never filter). */
  @ApiProperty({ type: [String], example: [] })
  matched_phrases: string[];
  /** The backend's own keyword score when the memory is in the keyword list (its scale depends on the backend), else null. */
  @ApiProperty({ type: Number, nullable: true, example: 7.31 })
  keyword_score: number | null;
  /** Keyword evidence 0..1: the share of the query's rarity-weighted words it holds, scaled by how rare the rarest of them is. */
  @ApiProperty({ example: 0.83 })
  keyword: number;
  /** Cosine similarity of the memory's vector and the query's; null while the memory waits for its embedding. */
  @ApiProperty({ type: Number, nullable: true, example: 0.71 })
  cosine: number | null;
  /** Semantic evidence 0..1: the cosine, calibrated (0 at what unrelated text scores; a memory that is not a conversation turn gets 0.2 more, since a note embedded alone scores lower cosines). */
  @ApiProperty({ example: 0.53 })
  semantic: number;
  /** What the memory's conversation neighbours among the hits added (conversation turns only). */
  @ApiProperty({ example: 0 })
  neighbour_boost: number;
  /** Further per-row signals by name (for example a date match), each what it added (`long_memory`: what a long text's length cost its words); `same_session` only moved the row down the order (its score is unchanged). */
  @ApiProperty({ type: 'object', additionalProperties: { type: 'number' }, example: {} })
  signals: Record<string, number>;
  /** A second stage's score for the row, when one ran; null otherwise. */
  @ApiProperty({ type: Number, nullable: true, example: null })
  rescore: number | null;
  /** The row's final score (same as `score`). */
  @ApiProperty({ example: 0.92 })
  score: number;
  /** The floor in force: rows scoring below it are not returned. */
  @ApiProperty({ example: 0.4 })
  floor: number;
}

/** A list/search row: every field of a memory but content, and a snippet instead. */
export class MemoryRowDto extends OmitType(MemoryDto, ['content'] as const) {
  /** List mode: the start of the content; search mode: the passage around the best match. */
  @ApiProperty({ example: 'Deploys go through the blue-green pipeline; never deploy on Fridays.' })
  snippet: string;
  /**
   * Search mode only: relevance, higher is better. Hybrid and semantic: an absolute relevance
   * 0..1, comparable across queries (rows below the floor, `min_score`, are not returned);
   * keyword: the full-text ranking's own score (comparable within one answer only).
   */
  @ApiPropertyOptional({ example: 0.82 })
  score?: number;
  /** Hybrid and semantic searches: which lists matched the memory. */
  @ApiPropertyOptional({ type: [String], enum: ['keyword', 'semantic'], example: ['keyword', 'semantic'] })
  matched?: Array<'keyword' | 'semantic'>;
  /** Semantic and hybrid searches with explain=true: the signals that placed the row. */
  @ApiPropertyOptional({ type: () => SearchExplainDto })
  explain?: SearchExplainDto;
}

export class MemoryListResponseDto {
  @ApiProperty({ example: true })
  ok: true;
  @ApiProperty({ type: [MemoryRowDto] })
  rows: MemoryRowDto[];
  /** Rows in this page. */
  @ApiProperty({ example: 1 })
  count: number;
  /** Rows matching the query and filters. */
  @ApiProperty({ example: 1 })
  total: number;
  /** 1-based page; null after a cursor. */
  @ApiProperty({ type: Number, nullable: true, example: 1 })
  page: number | null;
  @ApiProperty({ example: 20 })
  page_size: number;
  @ApiProperty({ example: 1 })
  total_pages: number;
  @ApiProperty({ example: false })
  has_prev: boolean;
  @ApiProperty({ example: false })
  has_next: boolean;
  /** Pass as `after` for the next page (list mode); null on the last page and in search mode. */
  @ApiProperty({ type: String, nullable: true, example: null })
  next_cursor: string | null;
  @ApiProperty({ enum: ['list', 'search'], example: 'list' })
  mode: 'list' | 'search';
  /** Search only: the ranking that ran (keyword when no embedding model is available). */
  @ApiPropertyOptional({ enum: ['hybrid', 'keyword', 'semantic'], example: 'hybrid' })
  search_mode?: 'hybrid' | 'keyword' | 'semantic';
  /**
   * Hybrid and semantic searches: the highest score among the memories the floor (`min_score`)
   * left out, null when it left none out. An empty answer with a value near the floor means a
   * related memory exists: pass this value as `min_score` to see it; 0 means nothing came close.
   */
  @ApiPropertyOptional({ type: Number, nullable: true, example: 0.33 })
  best_below_floor?: number | null;
}

export class DeleteMemoryResponseDto {
  @ApiProperty({ example: true })
  ok: true;
  @ApiProperty({ example: true })
  deleted: true;
  @ApiProperty({ example: ID })
  id: string;
}

export class BulkDeleteResponseDto {
  @ApiProperty({ example: true })
  ok: true;
  /** How many memories were deleted. */
  @ApiProperty({ example: 1 })
  deleted: number;
  @ApiProperty({ type: [String], example: [ID] })
  ids: string[];
  /** Ids that did not exist. */
  @ApiProperty({ type: [String], example: [] })
  missing: string[];
}

export class DownloadUrlResponseDto {
  @ApiProperty({ example: true })
  ok: true;
  @ApiProperty({ example: `http://127.0.0.1:8080/api/files/memories/${ID}.md?expires=1795253400&sig=...` })
  url: string;
  /** Seconds the URL stays valid (objstore_presign_ttl). */
  @ApiProperty({ example: 3600 })
  expires_in: number;
  @ApiProperty({ format: 'date-time', example: AT })
  expires_at: string;
}

export class StatsDto {
  @ApiProperty({ example: 3 })
  total: number;
  /** Every type, zeros included. */
  @ApiProperty({ type: 'object', additionalProperties: { type: 'integer' }, example: { note: 2, fact: 0, decision: 1, task: 0, preference: 0, reference: 0, code: 0, conversation: 0 } })
  by_type: Record<string, number>;
  /** Every scope, zeros included. */
  @ApiProperty({ type: 'object', additionalProperties: { type: 'integer' }, example: { global: 2, project: 1, agent: 0, user: 0 } })
  by_scope: Record<string, number>;
  /** Memories without a project count under "(none)". */
  @ApiProperty({ type: 'object', additionalProperties: { type: 'integer' }, example: { payments: 1, '(none)': 2 } })
  by_project: Record<string, number>;
  /** Memories without an agent count under "(none)". */
  @ApiProperty({ type: 'object', additionalProperties: { type: 'integer' }, example: { 'release-bot': 1, '(none)': 2 } })
  by_agent: Record<string, number>;
}

export class StatsResponseDto {
  @ApiProperty({ example: true })
  ok: true;
  stats: StatsDto;
}
