import type { MemoryDoc } from '../../src/backends/ports/memory.model';

export const WHEEL_WORDS = ['deploy', 'cache', 'schema', 'latency', 'budget', 'retry', 'token', 'queue', 'index', 'backup'];

/**
 * Memory number `i` of a small deterministic corpus for search tests: one second apart from
 * 2026-01-01, words picked from WHEEL_WORDS by `i`, a title every `titleEvery` memories, a tag
 * every third one. The id is the same for the same `i` and `idBase` (tests look rows up by it).
 */
export function wheelDoc(
  i: number,
  opts: { idBase: number; stride: number; titleEvery: number; content?: (i: number, w: (k: number) => string) => string },
  extra: Partial<MemoryDoc> = {},
): MemoryDoc {
  const at = new Date(Date.UTC(2026, 0, 1, 0, 0, i));
  const w = (k: number) => WHEEL_WORDS[(i * opts.stride + k * 3) % WHEEL_WORDS.length];
  return {
    id: (opts.idBase + i).toString(16).padStart(8, '0') + '0'.repeat(16),
    namespace: 'default',
    title: i % opts.titleEvery === 0 ? `About ${w(1)}` : null,
    type: i % 2 ? 'fact' : 'note',
    scope: 'global',
    tags: i % 3 === 0 ? [w(2)] : [],
    agent: null,
    project: null,
    content: opts.content ? opts.content(i, w) : `Note ${i}: the ${w(0)} and the ${w(3)}; ${w(4)} later.`,
    createdAt: at,
    updatedAt: at,
    version: 1,
    objectKey: null,
    author: null,
    ...extra,
  };
}
