import Database from 'better-sqlite3';
import { SESSION_GAP_MS } from '../../../libs/search-query';
import { EmbeddingJob, MemoryDoc } from '../ports/memory.model';
import { StatementCache, Stmt } from './sqlite-memory-rows';
import { SqliteMemoryIndex } from './sqlite-memory-index';
import { linkNeighbours } from './sqlite-vectors';

/**
 * Session neighbours of hybrid candidates (src/memories/search/relevance.ts) and a conversation
 * turn's embedded context (the memory before it, the vector's `prev`). This pins them to the definition —
 * the memory just before and just after each candidate in (created_at, seq) order, same project and
 * agent, within SESSION_GAP_MS, kept when it is a candidate — computed here the plain way, on
 * memories with sessions, gaps, equal timestamps and imported (older, higher-seq) ones; and again
 * once deletions, moves and imports between memories have been embedded (the queue drained), with
 * each re-embedded memory's context being its new predecessor.
 */
describe('hybrid session neighbours', () => {
  const KEY = 'test:8';
  let db: Database.Database;
  let index: SqliteMemoryIndex;
  let stmt: Stmt;
  let docs: MemoryDoc[];
  const r = lcg(99);

  /** 600 memories: mostly minutes apart, sometimes a new session, now and then the same instant, 5 % imported from the past. */
  function makeDocs(n: number, first: number, start: number): MemoryDoc[] {
    let at = start;
    const out: MemoryDoc[] = [];
    for (let i = first; i < first + n; i++) {
      at += r() < 0.1 ? 2 * SESSION_GAP_MS : r() < 0.1 ? 0 : Math.floor(r() * 10 * 60_000);
      const when = new Date(r() < 0.05 ? at - Math.floor(r() * 20) * 60_000 : at);
      out.push(doc(i, when, ['a', 'b', null][Math.floor(r() * 3)], ['p', 'q', null][Math.floor(r() * 3)]));
    }
    return out;
  }

  function doc(i: number, when: Date, agent: string | null, project: string | null): MemoryDoc {
    return {
      id: (0x6a000000 + i).toString(16).padStart(8, '0') + '0'.repeat(16),
      namespace: 'default',
      title: null,
      type: 'conversation',
      scope: 'global',
      tags: [],
      agent,
      project,
      content: `memory ${i}`,
      createdAt: when,
      updatedAt: when,
      version: 1,
      objectKey: null,
      author: null,
    };
  }

  /** Embeds every queued memory (a random vector each); returns the jobs run. */
  async function drain(): Promise<EmbeddingJob[]> {
    const ran: EmbeddingJob[] = [];
    for (;;) {
      const jobs = await index.claimEmbeddingJobs('spec', 50, 60_000);
      if (jobs.length === 0) return ran;
      for (const job of jobs) {
        await index.storeVector(
          job,
          KEY,
          Float32Array.from({ length: 8 }, () => r() - 0.5),
        );
        ran.push(job);
      }
    }
  }

  beforeAll(async () => {
    db = new Database(':memory:');
    index = new SqliteMemoryIndex(db, { maintenanceIdleMs: null });
    await index.useVectorSpace(KEY);
    docs = makeDocs(600, 0, Date.UTC(2026, 0, 1));
    await index.insertMany(docs);
    const statements = new StatementCache(db);
    stmt = (sql) => statements.get(sql);
    await drain();
  });
  afterAll(() => db.close());

  type Row = { seq: number; project: string | null; agent: string | null; created_at: number; content: string };
  const byOrder = (a: Row, b: Row) => a.created_at - b.created_at || a.seq - b.seq;

  /** Each memory's predecessor by the definition, from the table as it is (seq → seq). */
  function predecessors(): Map<number, number> {
    const rows = db.prepare('SELECT seq, project, agent, created_at, content FROM memories').all() as Row[];
    const groups = new Map<string, Row[]>();
    for (const row of rows) {
      const g = JSON.stringify([row.project, row.agent]);
      groups.set(g, [...(groups.get(g) ?? []), row]);
    }
    const out = new Map<number, number>();
    for (const group of groups.values()) {
      group.sort(byOrder);
      for (let i = 1; i < group.length; i++) if (group[i].created_at - group[i - 1].created_at <= SESSION_GAP_MS) out.set(group[i].seq, group[i - 1].seq);
    }
    return out;
  }

  /** The definition's neighbours among `keys`, each list sorted. */
  function reference(keys: number[]): Map<number, number[]> {
    const set = new Set(keys);
    const out = new Map<number, number[]>();
    const add = (a: number, b: number) =>
      out.set(
        a,
        [...(out.get(a) ?? []), b].sort((x, y) => x - y),
      );
    for (const [seq, prev] of predecessors()) {
      if (set.has(seq) && set.has(prev)) {
        add(seq, prev);
        add(prev, seq);
      }
    }
    return out;
  }

  function linked(keys: Set<number>): Map<number, number[]> {
    const candidates = new Map<number, { key: number; neighbours?: number[] }>([...keys].map((k) => [k, { key: k }]));
    linkNeighbours(stmt, candidates);
    return new Map([...candidates.values()].filter((c) => c.neighbours).map((c) => [c.key, [...(c.neighbours ?? [])].sort((x, y) => x - y)]));
  }

  /** Up to `size` seqs from a random start on, each taken with probability `density`. */
  function someKeys(size: number, density: number): Set<number> {
    const all = db.prepare('SELECT seq FROM memories ORDER BY seq').pluck().all() as number[];
    const keys = new Set<number>();
    for (let k = Math.floor(r() * (all.length - size)); keys.size < size && k < all.length; k++) if (r() < density) keys.add(all[k]);
    return keys;
  }

  function expectDefinition(): void {
    let links = 0;
    for (let trial = 0; trial < 60; trial++) {
      const keys = someKeys(100, [0.9, 0.5, 0.1][trial % 3]);
      const got = linked(keys);
      expect(got).toEqual(reference([...keys]));
      links += got.size;
    }
    expect(links).toBeGreaterThan(100); // not a comparison of empty maps
    // Every memory's stored prev is its predecessor now.
    const prev = predecessors();
    const stored = db.prepare('SELECT seq, prev FROM memory_vectors').all() as Array<{ seq: number; prev: number | null }>;
    expect(stored.length).toBe(db.prepare('SELECT count(*) FROM memories').pluck().get());
    for (const s of stored) expect([s.seq, s.prev]).toEqual([s.seq, prev.get(s.seq) ?? null]);
  }

  it('links the same neighbours as the definition for dense, sparse and clustered candidate sets', () => {
    expectDefinition();
  });

  it('keeps them true through deletions, moves and imports between memories, re-embedding the memories after them with their new context', async () => {
    const content = new Map((db.prepare('SELECT seq, content FROM memories').all() as Row[]).map((m) => [m.seq, m.content]));
    const seqOf = (id: string) => db.prepare('SELECT seq FROM memories WHERE id = ?').pluck().get(id) as number;
    const before = predecessors();
    // 30 deleted, 20 moved to another project or agent (or time), 40 imported into the past.
    const shuffled = [...docs].sort(() => r() - 0.5);
    const deleted = shuffled.slice(0, 30);
    const moved = shuffled.slice(30, 50);
    const deletedSeqs = new Set(deleted.map((d) => seqOf(d.id)));
    for (const d of deleted) expect(await index.delete('default', d.id)).toBe(true);
    for (const [i, d] of moved.entries()) {
      const change = i % 3 === 0 ? { project: 'moved' } : i % 3 === 1 ? { agent: 'moved' } : { createdAt: new Date(d.createdAt.getTime() + 7 * 60_000) };
      expect(await index.replace({ ...d, ...change, version: 2 })).toBe(true);
    }
    const imported = makeDocs(40, 1000, Date.UTC(2026, 0, 1)).map((d) => ({ ...d, createdAt: new Date(d.createdAt.getTime() + 61_000) }));
    await index.insertMany(imported);

    // The memories after the deleted ones wait for a new vector (their context was the deleted text).
    const queued = new Set(db.prepare('SELECT seq FROM embedding_queue').pluck().all() as number[]);
    const orphans = [...before].filter(([seq, prev]) => deletedSeqs.has(prev) && !deletedSeqs.has(seq)).map(([seq]) => seq);
    expect(orphans.length).toBeGreaterThan(5);
    for (const seq of orphans) expect(queued).toContain(seq);

    const ran = await drain();
    expectDefinition();
    // Each memory re-embedded after a deletion carries its new predecessor's text, never the deleted one's.
    const now = predecessors();
    const texts = new Map(ran.map((j) => [seqOf(j.id), j.text]));
    for (const seq of orphans) {
      const text = texts.get(seq) as string;
      expect(text).toBeDefined();
      expect(text.endsWith(`\n${content.get(before.get(seq) as number)}`)).toBe(false);
      const prev = now.get(seq);
      if (prev !== undefined) expect(text.endsWith(`\n${db.prepare('SELECT content FROM memories WHERE seq = ?').pluck().get(prev) as string}`)).toBe(true);
    }
    expect(await index.embeddingProgress(KEY)).toMatchObject({ pending: 0 });
  });

  it('keeps a job queued when the memory before it changed while it was embedded', async () => {
    const at = Date.UTC(2026, 5, 1);
    await index.insertMany([doc(2000, new Date(at), 'x', 'race'), doc(2001, new Date(at + 60_000), 'x', 'race')]);
    const jobs = await index.claimEmbeddingJobs('spec', 50, 60_000);
    const second = jobs.find((j) => j.text.startsWith('memory 2001')) as EmbeddingJob;
    expect(second.text).toBe('memory 2001\nmemory 2000');
    // Imported between them while the job ran: its vector is stored, and it is embedded again.
    await index.insertMany([doc(2002, new Date(at + 30_000), 'x', 'race')]);
    for (const job of jobs) await index.storeVector(job, KEY, new Float32Array(8).fill(0.1));
    const again = (await drain()).map((j) => j.text);
    expect(again).toEqual(expect.arrayContaining(['memory 2001\nmemory 2002']));
    expectDefinition();
  });
});

/** A seeded generator of numbers in [0, 1]. */
function lcg(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
}
