import { ESTIMATE_WASM } from './sqlite-vector-estimate.wasm';

type EstimateFn = (lut: number, codes: number, alpha: number, count: number, words: number, qsum: number, out: number) => void;

const PAGE = 65536;

/**
 * The quantised pass over the IVF lists' codes in WebAssembly (sqlite-vector-estimate.wat): the
 * same float32 estimate as the JavaScript loop (`estimate` in sqlite-vector-cache.ts) for every
 * code, in ~0.6 of its time (21,000 codes of 48 bytes: 0.29 ms against 0.46 ms on Node 24, 0.68 ms
 * on Node 20). A WebAssembly function reads only its own memory, so each thread that searches
 * keeps there a copy of the grouping's codes and alphas (52 bytes per vector at 384 dimensions:
 * 5.2 MB at 100,000), taken when a search first meets a grouping (after each training, and
 * every REGROUP_AFTER new vectors).
 *
 * Memory, in bytes: [lookup table: 1,024 per code byte | codes | alphas | estimates].
 */
export class CodeTable {
  private static compiled: WebAssembly.Module | null | undefined;
  private readonly memory: WebAssembly.Memory;
  private readonly run: EstimateFn;
  /** The grouping's codes copied in (by identity), their size, and where they are. */
  private source: Uint8Array<ArrayBufferLike> | null = null;
  private bytes = 0;
  private codesAt = 0;
  private alphaAt = 0;
  private estAt = 0;
  /** The lookup table the caller fills before estimate(): 256 float32 per code byte. */
  lut = new Float32Array(0);
  /** est[p]: the estimate of member p, for the members of the ranges estimated since the lookup table was filled. */
  est = new Float32Array(0);

  /** A table for this thread, or null where WebAssembly is missing (node --jitless): the JavaScript loop then. */
  static create(): CodeTable | null {
    if (CodeTable.compiled === undefined) {
      try {
        CodeTable.compiled = new WebAssembly.Module(Buffer.from(ESTIMATE_WASM, 'base64'));
      } catch {
        CodeTable.compiled = null;
      }
    }
    return CodeTable.compiled ? new CodeTable(CodeTable.compiled) : null;
  }

  private constructor(compiled: WebAssembly.Module) {
    const exports = new WebAssembly.Instance(compiled, {}).exports as { memory: WebAssembly.Memory; estimate: EstimateFn };
    this.memory = exports.memory;
    this.run = exports.estimate;
  }

  /**
   * Holds a grouping's codes (`bytes` per member) and alphas, copying them in unless they are the
   * ones held already; false when the codes are not whole 32-bit words (dimensions not a multiple of 32).
   */
  hold(codes: Uint8Array<ArrayBufferLike>, alpha: Float32Array<ArrayBufferLike>, bytes: number): boolean {
    if (bytes === 0 || bytes % 4 !== 0) return false;
    if (codes === this.source && bytes === this.bytes) return true;
    const members = alpha.length;
    const lutBytes = bytes * 256 * 4;
    const need = lutBytes + members * (bytes + 8);
    if (need > this.memory.buffer.byteLength) this.memory.grow(Math.ceil((need - this.memory.buffer.byteLength) / PAGE));
    const buffer = this.memory.buffer;
    this.bytes = bytes;
    this.codesAt = lutBytes;
    this.alphaAt = this.codesAt + members * bytes;
    this.estAt = this.alphaAt + members * 4;
    new Uint8Array(buffer, this.codesAt, members * bytes).set(codes.subarray(0, members * bytes));
    new Float32Array(buffer, this.alphaAt, members).set(alpha);
    this.lut = new Float32Array(buffer, 0, bytes * 256);
    this.est = new Float32Array(buffer, this.estAt, members);
    this.source = codes;
    return true;
  }

  /** est[p] for the members p in [from, to), from the lookup table in `lut` and Σ q (`qsum`). */
  estimate(from: number, to: number, qsum: number): void {
    if (to <= from) return;
    this.run(0, this.codesAt + from * this.bytes, this.alphaAt + from * 4, to - from, this.bytes >> 2, qsum, this.estAt + from * 4);
  }
}
