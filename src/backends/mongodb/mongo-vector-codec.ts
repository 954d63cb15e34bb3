/**
 * How vectors are stored in MongoDB, shared by the queue/search code (mongo-vectors.ts) and the
 * in-process copy (mongo-vector-cache.ts) without either importing the other.
 */
/** The collection of embedding bookkeeping documents (the vector space in use, the write counter). */
export const META = 'memstore_embedding_meta';
/** The META document counting vector writes: a copy reads the new vectors only when it has moved (mongo-vector-cache.ts). */
export const VECTOR_WRITES = 'vector_writes';

/** A BinData / Buffer of float32 little-endian as a Float32Array (copied: the driver reuses its buffers); null when it is not one. */
export function toVector(b: unknown): Float32Array | null {
  const buf = b && typeof b === 'object' && 'buffer' in b ? (b as { buffer: Uint8Array }).buffer : Buffer.isBuffer(b) ? b : null;
  if (!buf || buf.length === 0 || buf.length % 4 !== 0) return null;
  const v = new Float32Array(buf.length / 4);
  new Uint8Array(v.buffer).set(buf);
  return v;
}

export function fromVector(v: Float32Array): Buffer {
  return Buffer.from(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
}
