import Database from 'better-sqlite3';
import { fuse, FusionCandidate, SESSION_GAP_MS } from '../../../libs/search-query';
import { MemoryDoc } from '../ports/memory.model';
import { StatementCache, Stmt } from './sqlite-memory-rows';
import { SqliteMemoryIndex } from './sqlite-memory-index';
import { addNeighbours } from './sqlite-vectors';

/**
 * Session neighbours of hybrid candidates (fusion.ts) are found by probing only between
 * candidates; this pins them to the definition — the memory just before and just after each
 * candidate in its project and agent, kept when it is a candidate and within SESSION_GAP_MS —
 * computed here the plain way, on memories with sessions, gaps, equal timestamps and imported
 * (older, higher-seq) ones.
 */
describe('hybrid session neighbours', () => {
  let db: Database.Database;
  let stmt: Stmt;

  beforeAll(async () => {
    db = new Database(':memory:');
    const index = new SqliteMemoryIndex(db, { maintenanceIdleMs: null });
    const r = lcg(99);
    let at = Date.UTC(2026, 0, 1);
    const docs: MemoryDoc[] = [];
    for (let i = 0; i < 600; i++) {
      // Mostly minutes apart, sometimes a new session; now and then the same instant; 5 % imported from the past.
      at += r() < 0.1 ? 2 * SESSION_GAP_MS : r() < 0.1 ? 0 : Math.floor(r() * 10 * 60_000);
      const when = new Date(r() < 0.05 ? at - Math.floor(r() * 20) * 60_000 : at);
      docs.push({
        id: (0x6a000000 + i).toString(16).padStart(8, '0') + '0'.repeat(16),
        title: null, type: 'note', scope: 'global', tags: [],
        agent: ['a', 'b', null][Math.floor(r() * 3)], project: ['p', 'q', null][Math.floor(r() * 3)],
        content: `memory ${i}`, createdAt: when, updatedAt: when, version: 1, objectKey: null, author: null,
      });
    }
    await index.insertMany(docs);
    const statements = new StatementCache(db);
    stmt = (sql) => statements.get(sql);
  });
  afterAll(() => db.close());

  /** The definition, one lookup per side per candidate. */
  function reference(keys: number[]): Map<number, number[]> {
    const set = new Set(keys);
    const out = new Map<number, number[]>();
    const before = db.prepare('SELECT seq, created_at FROM memories WHERE project IS @project AND agent IS @agent AND created_at <= @at AND seq < @seq ORDER BY created_at DESC, seq DESC LIMIT 1');
    const after = db.prepare('SELECT seq, created_at FROM memories WHERE project IS @project AND agent IS @agent AND created_at >= @at AND seq > @seq ORDER BY created_at, seq LIMIT 1');
    for (const seq of keys) {
      const r = db.prepare('SELECT seq, project, agent, created_at FROM memories WHERE seq = ?').get(seq) as { seq: number; project: string | null; agent: string | null; created_at: number };
      const p = { project: r.project, agent: r.agent, at: r.created_at, seq: r.seq };
      const near: number[] = [];
      for (const n of [before.get(p), after.get(p)] as Array<{ seq: number; created_at: number } | undefined>) {
        if (n && Math.abs(n.created_at - r.created_at) <= SESSION_GAP_MS && set.has(n.seq)) near.push(n.seq);
      }
      if (near.length > 0) out.set(seq, near);
    }
    return out;
  }

  /** A seeded generator of numbers in [0, 1]. */
  function lcg(seed: number): () => number {
    let s = seed;
    return () => (s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  }

  /** Up to `size` seqs from a random start on, each taken with probability `density`. */
  function someKeys(r: () => number, size: number, density: number): Set<number> {
    const keys = new Set<number>();
    for (let k = 1 + Math.floor(r() * (600 - size)); keys.size < size && k <= 600; k++) if (r() < density) keys.add(k);
    return keys;
  }

  it('finds the same neighbours as the definition for dense, sparse and clustered candidate sets', () => {
    const r = lcg(7);
    let linked = 0;
    for (let trial = 0; trial < 60; trial++) {
      const keys = someKeys(r, 100, [0.9, 0.5, 0.1][trial % 3]);
      const candidates = new Map<number, FusionCandidate<number>>([...keys].map((k) => [k, { key: k, order: k }]));
      addNeighbours(stmt, candidates);
      const got = new Map([...candidates.values()].filter((c) => c.neighbours).map((c) => [c.key, c.neighbours]));
      expect(got).toEqual(reference([...keys]));
      linked += got.size;
    }
    expect(linked).toBeGreaterThan(100); // not a comparison of empty maps
  });

  it('gives the same first places when only the candidates that can reach them are probed', () => {
    const r = lcg(11);
    let skipped = 0;
    for (let trial = 0; trial < 60; trial++) {
      // Cosines for all (a few equal), keyword scores for some.
      const keys = someKeys(r, 80, 0.7);
      const all = new Map<number, FusionCandidate<number>>([...keys].map((k) => [k, { key: k, order: k, cosine: Math.round(r() * 20) / 20, keyword: r() < 0.5 ? r() * 10 : undefined }]));
      const pruned = new Map([...all].map(([k, c]) => [k, { ...c }]));
      const wanted = [1, 5, 10, 20][trial % 4];
      addNeighbours(stmt, all);
      addNeighbours(stmt, pruned, wanted);
      expect(fuse([...pruned.values()], 'hybrid').slice(0, wanted)).toEqual(fuse([...all.values()], 'hybrid').slice(0, wanted));
      skipped += [...all.values()].filter((c) => c.neighbours && !pruned.get(c.key)?.neighbours).length;
    }
    expect(skipped).toBeGreaterThan(50); // some candidates' neighbours were not looked up
  });
});
