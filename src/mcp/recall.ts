import type { MemoryDto } from '../memories/dto/memory-response.dto';

/**
 * recall_context's selection: walk the search hits in relevance order, drop near-duplicates,
 * and keep memories until the token budget is spent (the one that overflows is trimmed to fit).
 * Pure, so it is tested without a backend; the tool supplies the hits and a loader.
 */

export const DEFAULT_TOKEN_BUDGET = 2000;
/** Below this many tokens left, a memory is not worth trimming into the answer. */
const MIN_TRIMMED_TOKENS = 60;
/** What the envelope around the memories costs (task, counts, note). */
const ENVELOPE_TOKENS = 60;
/** Word sets this similar (Jaccard) count as the same memory. */
const DUPLICATE_SIMILARITY = 0.9;

/** A rough token count (≈ 4 characters of JSON per token, the usual estimate for English). */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

export interface RecalledMemory {
  id: string;
  title: string | null;
  type: MemoryDto['type'];
  tags: string[];
  project: string | null;
  updated_at: string;
  content: string;
  truncated: boolean;
}

export interface RecallSelection {
  memories: RecalledMemory[];
  tokensUsed: number;
  duplicates: number;
  leftOut: number;
}

/**
 * A search query from a free-text task: quotes and leading minus signs would turn prose into
 * phrase and exclusion operators, and the search accepts at most `maxChars` characters.
 */
export function taskQuery(task: string, maxChars: number): string {
  let q = task
    .replace(/["\u201c\u201d]/g, ' ')
    .replace(/(^|\s)-+/g, '$1')
    .replace(/\s+/g, ' ')
    .trim();
  if (q.length > maxChars) {
    q = q.slice(0, maxChars);
    const cut = q.lastIndexOf(' ');
    if (cut > maxChars / 2) q = q.slice(0, cut);
  }
  return q;
}

function words(text: string): Set<string> {
  return new Set(
    text
      .toLowerCase()
      .normalize('NFKC')
      .match(/[\p{L}\p{N}]+/gu) ?? [],
  );
}

function similar(a: Set<string>, b: Set<string>): boolean {
  if (a.size === 0 || b.size === 0) return a.size === b.size;
  let common = 0;
  for (const w of a) if (b.has(w)) common++;
  return common / (a.size + b.size - common) >= DUPLICATE_SIMILARITY;
}

function entryOf(m: MemoryDto, content: string, truncated: boolean): RecalledMemory {
  return { id: m.id, title: m.title, type: m.type, tags: m.tags, project: m.project, updated_at: m.updated_at, content, truncated };
}

/** The entry with its content cut (at a word boundary, marked with "…") so it costs at most `tokens`. */
function trimmed(m: MemoryDto, tokens: number): RecalledMemory | null {
  const bare = estimateTokens(JSON.stringify(entryOf(m, '', true)));
  let chars = (tokens - bare) * 4;
  while (chars >= 40) {
    let text = m.content.slice(0, chars);
    const cut = text.search(/\s+\S*$/);
    if (cut > chars / 2) text = text.slice(0, cut);
    const entry = entryOf(m, `${text.trimEnd()} …`, true);
    if (estimateTokens(JSON.stringify(entry)) <= tokens) return entry;
    chars = Math.floor(chars * 0.9); // JSON escaping made it longer than estimated
  }
  return null;
}

/**
 * Selects memories for the budget. `ids` are in relevance order; `load` fetches a full memory
 * (or null when it vanished meanwhile). Loads stop as soon as the budget is spent.
 */
export async function selectForBudget(ids: string[], load: (id: string) => Promise<MemoryDto | null>, budget: number): Promise<RecallSelection> {
  const memories: RecalledMemory[] = [];
  const seen: Set<string>[] = [];
  let used = ENVELOPE_TOKENS;
  let duplicates = 0;
  let i = 0;
  for (; i < ids.length; i++) {
    const m = await load(ids[i]);
    if (!m) continue;
    const fingerprint = words(`${m.title ?? ''} ${m.content}`);
    if (seen.some((s) => similar(s, fingerprint))) {
      duplicates++;
      continue;
    }
    const whole = entryOf(m, m.content, false);
    const cost = estimateTokens(JSON.stringify(whole));
    if (used + cost <= budget) {
      memories.push(whole);
      seen.push(fingerprint);
      used += cost;
      continue;
    }
    const rest = budget - used;
    const cut = rest >= MIN_TRIMMED_TOKENS ? trimmed(m, rest) : null;
    if (cut) {
      memories.push(cut);
      used += estimateTokens(JSON.stringify(cut));
      i++;
    }
    break;
  }
  return { memories, tokensUsed: used, duplicates, leftOut: ids.length - i };
}

/** recall_context's note when no memory cleared the floor: how close the best one left out came, and how to see it. */
export function noMatchNote(bestBelowFloor: number | null | undefined): string {
  const retry = 'Try search_memories with other words, or list_recent.';
  if (!bestBelowFloor) return `No memory matches this task. ${retry}`;
  return `No memory cleared the relevance floor; the closest scored ${bestBelowFloor}. Call again with min_score ${bestBelowFloor} if a looser match helps. ${retry}`;
}
