import * as z from 'zod';
import { MEMORY_SCOPES, MEMORY_TYPES } from '../backends/ports/memory.model';

/**
 * The MCP tools' input and output schemas. They describe shapes and say, in words a model can
 * act on, what each argument does. The rules themselves (lengths, counts, bounds, dates) are not
 * repeated here: each tool hands its arguments to the same DTO validation and service checks as
 * the REST API, so a limit changes in one place.
 */

const ID = z.string().describe('Memory id: 24 lowercase hex characters, as returned by search_memories, list_recent, recall_context or create_memory.');
const TYPE = z.enum(MEMORY_TYPES);
const SCOPE = z.enum(MEMORY_SCOPES);
const SEARCH_MODE = z.enum(['hybrid', 'keyword', 'semantic']);

/** Filters shared by search_memories, list_recent and recall_context. */
const FILTERS = {
  type: TYPE.optional().describe('Only memories of this type.'),
  scope: SCOPE.optional().describe('Only memories of this scope.'),
  project: z.string().optional().describe('Only memories of this project (exact name).'),
  agent: z.string().optional().describe('Only memories written by this agent (exact name).'),
  tags: z.array(z.string()).optional().describe('Only memories carrying every one of these tags (exact, case-sensitive).'),
  days: z.number().int().optional().describe('Only memories created in the last N days (N ≥ 1).'),
  since: z.string().optional().describe('Only memories created at or after this ISO-8601 date-time, e.g. 2026-11-01T00:00:00Z.'),
  include_superseded: z.boolean().optional().describe('Also memories that a newer memory superseded (left out by default: they are no longer true).'),
  as_of: z.string().optional().describe('Answer as of this ISO-8601 moment: memories created by then and not yet superseded then.'),
};

/** Every tool's namespace argument (issue 43): needed only by a token bound to several namespaces. */
const NAMESPACE = {
  namespace: z.string().optional().describe('The namespace to work in (e.g. acme/alice). Only needed when your token is bound to several; omit it otherwise.'),
};

const QUERY_DATE = z
  .string()
  .optional()
  .describe('When the question is asked, ISO-8601 (default: now). Times in the question ("last week", "in May", "two months ago") are read from it, and memories of that time rank higher.');

const LIMIT = z.number().int().optional().describe('How many results per page, 1 to 200 (default 10). Ask for few: each row costs context.');

export const searchInput = z.object({
  ...NAMESPACE,
  q: z
    .string()
    .optional()
    .describe(
      'What to look for, in words (at most 1000 characters). Any word may match; memories matching more and rarer words rank first; words are stemmed ("deploying" finds "deploy"). "an exact phrase" in double quotes must match; -word excludes. Empty: the newest memories first.',
    ),
  ...FILTERS,
  limit: LIMIT,
  page: z.number().int().optional().describe('Page number, from 1 (with q).'),
  mode: SEARCH_MODE.optional().describe(
    'How to rank (with q): hybrid (default: words and meaning), keyword (words only, e.g. for an exact name) or semantic (meaning only). Without an embedding model every search is keyword.',
  ),
  query_date: QUERY_DATE,
  min_score: z
    .number()
    .optional()
    .describe(
      "With q, hybrid or semantic: the relevance floor, 0..1 (default 0.4); rows scoring below it are not returned, so a search nothing answers comes back empty. Lower it to see weaker matches (the answer's best_below_floor says how close the best one left out came).",
    ),
  explain: z.boolean().optional().describe('With q, hybrid or semantic: each row also says why it was found (matched words, cosine, keyword score, neighbour boost, score, floor).'),
  cursor: z.string().optional().describe('Without q only: the next_cursor of the previous answer, to get the next page.'),
});

export const listRecentInput = z.object({
  ...NAMESPACE,
  ...FILTERS,
  limit: LIMIT,
  cursor: z.string().optional().describe('The next_cursor of the previous answer, to get the next page.'),
});

export const getInput = z.object({ id: ID, ...NAMESPACE });

const WRITE_FIELDS = {
  title: z.string().describe('A short title a person would search for (at most 300 characters).'),
  type: TYPE.describe('What kind of memory: note (default), fact, decision, task, preference, reference, code or conversation.'),
  scope: SCOPE.describe('Who it applies to: global (default), project, agent or user.'),
  tags: z.array(z.string()).describe('A few lowercase keywords (at most 50, each at most 64 characters).'),
  project: z.string().describe('The project it belongs to, if any (at most 200 characters).'),
  agent: z.string().describe('The agent writing it, if any (at most 200 characters).'),
};

export const createInput = z.object({
  ...NAMESPACE,
  content: z.string().describe('The memory itself, in markdown: one self-contained fact, decision or preference, written so it makes sense without this conversation (at most 1 MiB).'),
  title: WRITE_FIELDS.title.optional(),
  type: WRITE_FIELDS.type.optional(),
  scope: WRITE_FIELDS.scope.optional(),
  tags: WRITE_FIELDS.tags.optional(),
  project: WRITE_FIELDS.project.optional(),
  agent: WRITE_FIELDS.agent.optional(),
  supersedes: z.array(ID).optional().describe('Ids of older memories this one replaces (e.g. an old value of the same fact; at most 20): they drop out of searches and lists and point to this one.'),
});

export const updateInput = z.object({
  ...NAMESPACE,
  id: ID,
  content: z.string().optional().describe('The new full content (replaces the old one; cannot be empty). Omit to keep it.'),
  title: WRITE_FIELDS.title.optional().describe('New title; "" removes it. Omit to keep it.'),
  type: WRITE_FIELDS.type.optional(),
  scope: WRITE_FIELDS.scope.optional(),
  tags: WRITE_FIELDS.tags.optional().describe('The complete new tag list (replaces the old one); [] removes all tags. Omit to keep them.'),
  project: WRITE_FIELDS.project.optional().describe('New project; "" removes it. Omit to keep it.'),
  agent: WRITE_FIELDS.agent.optional().describe('New agent; "" removes it. Omit to keep it.'),
  supersedes: z.array(ID).optional().describe('Ids of older memories this one replaces: they drop out of searches and lists and point to this one.'),
});

export const deleteInput = z.object({ id: ID, ...NAMESPACE });

export const statsInput = z.object({ ...NAMESPACE });

export const recallInput = z.object({
  ...NAMESPACE,
  task: z
    .string()
    .describe('What you are about to do or need to know, in a sentence or two (e.g. "fix the flaky deploy step of the payments service"). The most relevant memories for it are returned.'),
  token_budget: z.number().int().optional().describe('How many tokens of memories to return at most, 100 to 20000 (default 2000). Lower it to keep your context small.'),
  ...FILTERS,
  query_date: QUERY_DATE,
  min_score: z
    .number()
    .optional()
    .describe(
      'The relevance floor, 0..1 (default 0.4): memories scoring below it are not returned. Lower it when a looser match helps more than nothing (the note says how close the best one left out came).',
    ),
});

// --- outputs -----------------------------------------------------------------------------------
// What each tool promises to answer (docs/decisions/0041-mcp-output-schemas.md). The schemas are
// closed (a strict client refuses a member they do not list), so every member the answers carry is
// listed here; test/e2e/mcp.spec.ts calls every tool in every branch with the client's validation on.

const NULLABLE = z.string().nullable();

const memoryFields = {
  id: z.string(),
  namespace: z.string().describe('The namespace the memory belongs to.'),
  title: NULLABLE,
  type: TYPE,
  tags: z.array(z.string()),
  scope: SCOPE,
  agent: NULLABLE,
  project: NULLABLE,
  created_at: z.string(),
  updated_at: z.string(),
  version: z.number().int().describe('Write counter: 1 on create, +1 on every change.'),
  superseded_by: z.string().optional().describe('Set when a newer memory replaced this one: its id.'),
  valid_to: z.string().optional().describe('Set with superseded_by: when it stopped being true.'),
};

export const memoryObject = z.object({ ...memoryFields, content: z.string() });
export const memoryOutput = z.object({ memory: memoryObject });
export const createOutput = z.object({
  memory: memoryObject,
  similar: z
    .array(
      z.object({
        id: z.string(),
        title: NULLABLE,
        score: z.number(),
        likely_update: z.boolean().describe('Looks like an older statement of the same thing: pass supersedes if this memory replaces it.'),
      }),
    )
    .describe('Up to 3 stored memories of the same project whose meaning is very close: consider updating one of them instead of keeping both. Empty when search is keyword-only.'),
  hint: z.string().optional().describe('When a similar memory looks like an older statement: how to mark it superseded.'),
});
/** update_memory: the whole memory for a token with memory:read, else id, version, timestamps and the fields sent (decision 0050). */
export const writtenOutput = z.object({
  memory: memoryObject.partial().extend({ id: z.string(), version: z.number().optional(), created_at: z.string(), updated_at: z.string() }),
});

export const listOutput = z.object({
  rows: z.array(
    z.object({
      ...memoryFields,
      snippet: z.string(),
      score: z.number().optional().describe('Search only: relevance, higher is better; hybrid and semantic: 0..1, comparable across searches.'),
      matched: z
        .array(z.enum(['keyword', 'semantic']))
        .optional()
        .describe('Hybrid and semantic searches: which lists matched the memory.'),
      explain: z
        .object({
          matched_words: z.array(z.string()),
          matched_phrases: z.array(z.string()),
          keyword_score: z.number().nullable(),
          keyword: z.number(),
          cosine: z.number().nullable(),
          semantic: z.number(),
          neighbour_boost: z.number(),
          signals: z.record(z.string(), z.number()),
          rescore: z.number().nullable(),
          score: z.number(),
          floor: z.number(),
        })
        .optional()
        .describe('With explain: the signals that placed the row.'),
    }),
  ),
  count: z.number(),
  total: z.number(),
  page: z.number().nullable(),
  page_size: z.number(),
  total_pages: z.number(),
  has_prev: z.boolean(),
  has_next: z.boolean(),
  next_cursor: NULLABLE,
  mode: z.enum(['list', 'search']),
  search_mode: SEARCH_MODE.optional().describe('Search only: the ranking that ran (keyword when no embedding model is available).'),
  best_below_floor: z
    .number()
    .nullable()
    .optional()
    .describe(
      'Hybrid and semantic searches: the highest score among the memories below min_score (null: none). No rows but a value near the floor: a related memory exists; search again with this min_score to see it. 0: nothing came close.',
    ),
});

export const deleteOutput = z.object({ deleted: z.literal(true), id: z.string() });

const COUNTS = z.record(z.string(), z.number());
export const statsOutput = z.object({
  stats: z.object({ total: z.number(), by_type: COUNTS, by_scope: COUNTS, by_project: COUNTS, by_agent: COUNTS }),
});

export const recallOutput = z.object({
  task: z.string(),
  token_budget: z.number(),
  tokens_used: z.number(),
  memories: z.array(
    z.object({
      id: z.string(),
      title: NULLABLE,
      type: z.string(),
      tags: z.array(z.string()),
      project: NULLABLE,
      updated_at: z.string(),
      content: z.string(),
      truncated: z.boolean(),
    }),
  ),
  matched: z.number(),
  left_out: z.number(),
  note: z.string(),
});

export type SearchInput = z.infer<typeof searchInput>;
export type ListRecentInput = z.infer<typeof listRecentInput>;
export type CreateInput = z.infer<typeof createInput>;
export type UpdateInput = z.infer<typeof updateInput>;
export type RecallInput = z.infer<typeof recallInput>;
export type RecallOutput = z.infer<typeof recallOutput>;
