import { dotsF32, VectorDots, vectorStore } from './sqlite-vector-dots';
import { dotAt, rng } from './sqlite-vector-ivf';

/** `count` random vectors of `dims` in a vector store (a shared WebAssembly memory), and the view of them. */
function stored(count: number, dims: number, seed: number): { memory: WebAssembly.Memory; data: Float32Array } {
  const store = vectorStore(count * dims * 4);
  expect(store.memory).not.toBeNull();
  expect(store.buffer).toBe(store.memory!.buffer);
  const r = rng(seed);
  const data = new Float32Array(store.buffer, 0, count * dims);
  for (let i = 0; i < data.length; i++) data[i] = r() - 0.5;
  return { memory: store.memory!, data };
}

describe('VectorDots (the exact re-rank in WebAssembly SIMD, over the shared memory of vectors)', () => {
  it('gives dotsF32 bit for bit (the path without WebAssembly), close to the dot products, for any slots and counts', () => {
    for (const [count, dims, seed] of [
      [3000, 384, 1],
      [40, 1536, 2],
      [25, 8, 3],
    ]) {
      const { memory, data } = stored(count, dims, seed);
      const dots = VectorDots.over(memory)!;
      expect(dots).not.toBeNull();
      const r = rng(seed + 10);
      const q = new Float32Array(dims).map(() => r() - 0.5);
      // Scattered slots, repeats included; counts that are and are not a multiple of four (the module's groups).
      for (const n of [1, 3, 4, 7, 1000, 0]) {
        const slots = Int32Array.from({ length: n }, () => Math.floor(r() * count));
        const wasm = new Float32Array(n).fill(NaN);
        const js = new Float32Array(n);
        dots.dotsAt(q, slots, n, wasm);
        dotsF32(q, data, n, js, slots);
        expect([...wasm]).toEqual([...js]);
        for (let k = 0; k < n; k++) expect(Math.abs(js[k] - dotAt(q, data, slots[k] * dims))).toBeLessThan(1e-5);
      }
    }
  });

  it('reads the vectors as they are written, from any reader of the memory, and grows its own for many slots', () => {
    const { memory, data } = stored(20_000, 16, 4);
    const a = VectorDots.over(memory)!;
    const b = VectorDots.over(memory)!;
    const q = Float32Array.from({ length: 16 }, (_, j) => (j === 3 ? 1 : 0));
    const all = Int32Array.from({ length: 20_000 }, (_, i) => 19_999 - i);
    const out = new Float32Array(20_000);
    a.dotsAt(q, all, all.length, out);
    for (const k of [0, 1, 9_999, 19_999]) expect(out[k]).toBe(data[all[k] * 16 + 3]);
    data[5 * 16 + 3] = 2.5;
    const one = new Float32Array(1);
    b.dotsAt(q, Int32Array.of(5), 1, one);
    expect(one[0]).toBe(2.5);
    a.dotsAt(q, Int32Array.of(5, 6), 1, one);
    expect(one[0]).toBe(2.5);
  });

  it('dotsF32 without slots scores the vectors in order, and sums the dimensions past a multiple of four in their lanes', () => {
    const r = rng(9);
    for (const dims of [5, 6, 7, 44]) {
      const data = new Float32Array(3 * dims).map(() => r() - 0.5);
      const q = new Float32Array(dims).map(() => r() - 0.5);
      const out = new Float32Array(3);
      dotsF32(q, data, 3, out);
      const bySlot = new Float32Array(3);
      dotsF32(q, data, 3, bySlot, Int32Array.of(0, 1, 2));
      expect([...bySlot]).toEqual([...out]);
      for (let c = 0; c < 3; c++) {
        // Lane l sums dimensions j ≡ l (mod 4), in float32; then (0 + 1) + (2 + 3).
        const lane = [0, 0, 0, 0];
        for (let j = 0; j < dims; j++) lane[j & 3] = Math.fround(lane[j & 3] + Math.fround(q[j] * data[c * dims + j]));
        expect(out[c]).toBe(Math.fround(Math.fround(lane[0] + lane[1]) + Math.fround(lane[2] + lane[3])));
        expect(Math.abs(out[c] - dotAt(q, data, c * dims))).toBeLessThan(1e-5);
      }
    }
  });
});
