import { MEMORY_TEXT_FORMAT } from '../../libs/search-query/fusion';

/** What a text is embedded as: a search query, or a memory (some models prefix queries). */
export type EmbeddingKind = 'query' | 'document';

/**
 * Where a model's cosines sit (src/memories/search/relevance.ts maps them to 0..1): `zero`, what
 * text unrelated to a query scores; `one`, a clear match. Models differ: e5's run far higher than bge's.
 */
export interface CosineScale {
  zero: number;
  one: number;
}

/** A cosine scale from two values, or null unless both are numbers in [-1, 1] and `zero` is below `one`. */
export function toCosineScale(zero: unknown, one: unknown): CosineScale | null {
  return typeof zero === 'number' && typeof one === 'number' && zero >= -1 && zero < one && one <= 1 ? { zero, one } : null;
}

/** The embedding providers a deployment can choose (setting `embedding_provider`). */
export const EMBEDDING_PROVIDERS = ['local', 'openai', 'none'] as const;
export type EmbeddingProviderName = (typeof EMBEDDING_PROVIDERS)[number];

/**
 * Turns text into a unit-length vector (cosine similarity = dot product). Adapters: `local`
 * (an ONNX model in-process), `openai` (any OpenAI-compatible /v1/embeddings) and `none`
 * (keyword-only search). Adapters throw EmbeddingUnavailableError when they cannot embed.
 */
export abstract class EmbeddingProvider {
  abstract readonly provider: EmbeddingProviderName;
  /** The model's name, null for `none`. */
  abstract readonly model: string | null;
  /** Vector length, null for `none` (or before an OpenAI-compatible model has answered once). */
  abstract readonly dimensions: number | null;
  /** Why this provider cannot embed (e.g. no model files), or null when it can. */
  abstract readonly unavailable: string | null;

  /** `urgent`: a request waits on it (a search, a duplicate hint): it goes before background work. */
  abstract embed(text: string, kind: EmbeddingKind, urgent?: boolean): Promise<Float32Array>;

  /**
   * The cosine from which a stored memory counts as a near-copy of a new one (duplicate hints):
   * a property of the model's cosine scale (bge-small 0.86; e5's cosines run higher). Null: the
   * service's default, DUPLICATE_THRESHOLD.
   */
  get duplicateThreshold(): number | null {
    return null;
  }

  /** The model's cosine scale for relevance; null: the service's default, calibrated on bge-small (RELEVANCE.COSINE_ZERO, COSINE_ONE). */
  get cosineScale(): CosineScale | null {
    return null;
  }

  /** Gets ready to embed (the local model loads on first use); at once for the others. */
  async load(): Promise<void> {}

  /** How many embed calls it computes at once (the queue runs that many): local model threads; 1 for the others. */
  get parallelism(): number {
    return 1;
  }

  /**
   * True while a call that a request waits on (urgent) is running or queued here: duplicate
   * hints then do not queue behind it (EmbeddingsService.similar). Remote providers: false.
   */
  busyWithUrgent(): boolean {
    return false;
  }

  /**
   * Identifies the vector space: vectors of another key are not comparable and are recomputed.
   * It names the model and the form of the embedded text (MEMORY_TEXT_FORMAT), so a change of
   * either re-embeds every memory in the background.
   */
  get key(): string | null {
    return this.unavailable === null && this.model !== null ? `${this.provider}:${this.model}#${MEMORY_TEXT_FORMAT}` : null;
  }

  async close(): Promise<void> {}
}

export class EmbeddingUnavailableError extends Error {}

/** Scales a vector to unit length in place (a zero vector stays zero). */
export function normalize(v: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i] * v[i];
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < v.length; i++) v[i] /= norm;
  return v;
}

/** Dot product (= cosine similarity of unit vectors). */
export function dot(a: Float32Array, b: Float32Array, offset = 0): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[offset + i];
  return s;
}
