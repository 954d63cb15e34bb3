import type { EmbeddingJob, EmbeddingProgress, MemoryFilter, SimilarHit } from './memory.model';

/**
 * Vectors and the durable embedding queue (README "Hybrid search"), apart from MemoryIndex (issue
 * 41): every insert, and every change of title or content, queues the memory for embedding in the
 * same write; deleting a memory removes its vector and its job. Workers of any number of
 * instances take jobs under a lease, so a job is worked on by one of them at a time. Both
 * adapters keep the vectors in their own store (the source of truth) and search them through the
 * storage-neutral vector index of src/backends/vector.
 */
export abstract class EmbeddingQueue {
  /**
   * Makes `key` the current vector space: when it differs from the one recorded, every memory
   * is queued again (vectors of the old space stay until replaced; searches use only vectors of
   * the current space). Returns true when it queued everything.
   */
  abstract useVectorSpace(key: string): Promise<boolean>;
  /** Takes up to `max` due jobs for `leaseMs` (not leased by another worker, due now). */
  abstract claimEmbeddingJobs(owner: string, max: number, leaseMs: number): Promise<EmbeddingJob[]>;
  /** Stores the vector; removes the job unless the memory changed since it was claimed. */
  abstract storeVector(job: EmbeddingJob, key: string, vector: Float32Array): Promise<void>;
  /** Gives the job back, due again at `retryAt`, with the error. */
  abstract failEmbeddingJob(job: EmbeddingJob, error: string, retryAt: Date): Promise<void>;
  abstract embeddingProgress(key: string | null): Promise<EmbeddingProgress>;
  /** Memories closest to `vector` (cosine), at most `limit`, of the current space, of filter.namespace only (required). */
  abstract similar(vector: Float32Array, key: string, limit: number, filter: MemoryFilter): Promise<SimilarHit[]>;
}
