/**
 * Hybrid search's shared constants (README "Hybrid search"). The ranking itself happens once,
 * above the adapters (src/memories/search/relevance.ts): each adapter hands over its keyword
 * list's and its vector list's best FUSION_CANDIDATES. Memories written one after the other in
 * the same project by the same agent (at most SESSION_GAP_MS apart) are session neighbours; their
 * link counts between conversation turns only.
 */
export const FUSION_CANDIDATES = 50;
export const SESSION_GAP_MS = 30 * 60_000;

export type SearchMode = 'keyword' | 'semantic' | 'hybrid';
export const SEARCH_MODES: readonly SearchMode[] = ['keyword', 'semantic', 'hybrid'];
export type MatchedList = 'keyword' | 'semantic';

/**
 * What a memory's vector is computed from: its content, then its title, then the start of the
 * memory written just before it in its session (same project and agent, at most SESSION_GAP_MS
 * earlier; at most CONTEXT_CHARS of it) when both are of type conversation: independent notes
 * written in a row carry no context (issue 45; the caller passes `previous` only then). Content goes first because bge-small reads the start of
 * a text most (a title that leads with a date and a name pulls every memory of that day or
 * speaker together); the previous memory is what a memory answers or continues ("Yes, twice a
 * week" after "Do you still run?"). The context is taken when the memory is embedded: a later
 * edit of the previous memory does not re-embed this one (SQLite re-embeds it when *which* memory
 * comes before it changes: memory_vectors.prev, sqlite-memory-schema.ts). Measured on the LoCoMo dev
 * conversations (bench/README.md "Retrieval quality"); each step was better on each of the five.
 * Change MEMORY_TEXT_FORMAT with this function: it is part of the vector-space key, so stored
 * vectors are recomputed (the model-change re-embed path). ctx2: context between conversation
 * turns only (notes embedded under ctx1 carried their predecessor's text).
 */
export const MEMORY_TEXT_FORMAT = 'ctx2';
export const CONTEXT_CHARS = 500;
export function memoryEmbeddingText(title: string | null, content: string, previous?: string | null): string {
  const own = title ? `${content}\n${title}` : content;
  return previous ? `${own}\n${previous.slice(0, CONTEXT_CHARS)}` : own;
}

/** The part of a search string that is embedded: exclusions dropped, quotes removed. */
export function semanticText(q: string): string {
  return q
    .replace(/(^|\s)-("[^"]*"?|\S+)/g, ' ')
    .replace(/"/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}
