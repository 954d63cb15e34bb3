import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { estimate } from './sqlite-vector-cache';
import { CodeTable } from './sqlite-vector-estimate';
import { rng } from './sqlite-vector-ivf';

/** The JavaScript loop's estimates (sqlite-vector-cache.ts `estimate`, the path without WebAssembly) of every member. */
function reference(codes: Uint8Array, alpha: Float32Array, bytes: number, lut: Float32Array, qsum: number): Float32Array {
  const est = new Float32Array(alpha.length);
  estimate(est, 0, alpha.length, Int32Array.from(alpha, (_, p) => p), codes, alpha, bytes, lut, qsum);
  return est;
}

function random(members: number, bytes: number, seed: number): { codes: Uint8Array; alpha: Float32Array } {
  const r = rng(seed);
  const codes = new Uint8Array(members * bytes).map(() => Math.floor(r() * 256));
  const alpha = new Float32Array(members).map(() => r() * 0.1);
  return { codes, alpha };
}

describe('CodeTable (the quantised pass in WebAssembly)', () => {
  it('gives the JavaScript loop’s float32 for every code, for the ranges asked, as its memory grows and its codes change', () => {
    const table = CodeTable.create();
    expect(table).not.toBeNull();
    const r = rng(5);
    // 384 dimensions (48 bytes), then 1,536 (192 bytes: OpenAI's size) with more members than the first memory holds.
    for (const [members, bytes, seed] of [
      [300, 48, 1],
      [20_000, 48, 2],
      [2_000, 192, 3],
    ]) {
      const { codes, alpha } = random(members, bytes, seed);
      expect(table!.hold(codes, alpha, bytes)).toBe(true);
      for (let i = 0; i < table!.lut.length; i++) table!.lut[i] = r() - 0.5;
      const qsum = r() - 0.5;
      const lut = Float32Array.from(table!.lut);
      const from = Math.floor(members / 3);
      const to = members - 7;
      table!.estimate(from, to, qsum);
      table!.estimate(0, 5, qsum);
      const js = reference(codes, alpha, bytes, lut, qsum);
      for (const p of [0, 4, from, from + 1, Math.floor((from + to) / 2), to - 1]) expect(table!.est[p]).toBe(js[p]);
      for (let p = from; p < to; p += 97) expect(table!.est[p]).toBe(js[p]);
    }
  });

  it('copies a grouping once, and again only for another one', () => {
    const table = CodeTable.create()!;
    const a = random(1000, 48, 7);
    const b = random(1000, 48, 8);
    table.hold(a.codes, a.alpha, 48);
    table.lut.fill(0.25);
    table.estimate(0, 1, 0);
    const first = table.est[0];
    // The same codes object: kept (a change made in place after the copy is not seen).
    a.alpha[0] *= 2;
    table.hold(a.codes, a.alpha, 48);
    table.estimate(0, 1, 0);
    expect(table.est[0]).toBe(first);
    table.hold(b.codes, b.alpha, 48);
    table.lut.fill(0.25);
    table.estimate(0, 1, 0);
    expect(table.est[0]).toBe(Math.fround(b.alpha[0] * 2 * 48 * 0.25));
  });

  it('declines codes that are not whole 32-bit words (dimensions not a multiple of 32): the JavaScript loop then', () => {
    const table = CodeTable.create()!;
    const { codes, alpha } = random(10, 6, 9);
    expect(table.hold(codes, alpha, 6)).toBe(false);
  });

  it('runs the module assembled from sqlite-vector-estimate.wat (npm run build:wasm)', async () => {
    const { generate, OUT } = require(join(__dirname, '..', '..', '..', 'scripts', 'build-wasm.js')) as { generate: () => Promise<string>; OUT: string };
    expect(readFileSync(OUT, 'utf8')).toBe(await generate());
  });
});
