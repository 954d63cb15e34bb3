import type { EmbeddingQueue } from '../../src/backends/ports/embedding-queue.port';
import { MemoryIndex } from '../../src/backends/ports/memory-index.port';
import { MemoryDoc, MemoryPage } from '../../src/backends/ports/memory.model';
import { rankCandidates } from '../../src/memories/search/relevance';
import { memoryDoc } from './memory-index.contract';

/** A semantic or hybrid page as the service ranks it above the adapter (decision 0120), with no floor. */
async function ranked(page: Promise<MemoryPage>, text: string, mode: 'semantic' | 'hybrid') {
  const p = await page;
  return (await rankCandidates(p.candidates ?? { list: [], docs: 0, df: [] }, { mode, text, floor: 0 })).rows;
}

/**
 * Vector storage and the durable embedding queue (EmbeddingQueue), on every adapter (with its MemoryIndex). Vectors here are
 * hand-made unit vectors (the providers have their own contract): the point is what the index
 * stores, queues, leases, forgets and ranks.
 */
export function vectorIndexContract(name: string, open: () => Promise<{ index: MemoryIndex & EmbeddingQueue; cleanup(): Promise<void> }>): void {
  describe(`vector storage contract: ${name}`, () => {
    let index: MemoryIndex & EmbeddingQueue;
    let cleanup: () => Promise<void>;
    let clock = Date.parse('2026-03-01T10:00:00Z');
    const KEY = 'test:unit-4';
    const unit = (...xs: number[]) => {
      const v = Float32Array.from(xs);
      const n = Math.hypot(...xs);
      return v.map((x) => x / n);
    };
    const doc = (n: number, over: Partial<MemoryDoc> = {}): MemoryDoc => {
      clock += 1000;
      const id = (0x7a000000 + n).toString(16).padStart(24, '0');
      return memoryDoc({ id, title: `note ${n}`, project: 'p', content: `content of note ${n}`, createdAt: new Date(clock), ...over });
    };
    /** Drains the queue with a vector chosen per memory id. */
    const embedAll = async (vectors: Record<string, Float32Array>, key = KEY) => {
      for (;;) {
        const jobs = await index.claimEmbeddingJobs('w1', 10, 60_000);
        if (jobs.length === 0) return;
        for (const j of jobs) await index.storeVector(j, key, vectors[j.id] ?? unit(0, 0, 0, 1));
      }
    };

    beforeEach(async () => {
      ({ index, cleanup } = await open());
      await index.useVectorSpace(KEY);
    });
    afterEach(async () => cleanup());

    it('queues every new memory with its title and content, and counts it pending until its vector is stored', async () => {
      const a = doc(1, { title: 'Jogging', content: 'started jogging after the move' });
      await index.insert(a);
      await index.insertMany([doc(2), doc(3)]);
      expect((await index.embeddingProgress(KEY)).pending).toBe(3);
      const jobs = await index.claimEmbeddingJobs('w1', 10, 60_000);
      expect(jobs.map((j) => j.id).sort()).toEqual([a.id, doc(0).id.replace(/.$/, '2'), doc(0).id.replace(/.$/, '3')].sort());
      // Content first, then the title (libs/search-query/fusion.ts memoryEmbeddingText).
      expect(jobs.find((j) => j.id === a.id)?.text).toBe('started jogging after the move\nJogging');
      for (const j of jobs) await index.storeVector(j, KEY, unit(1, 0, 0, 0));
      expect(await index.embeddingProgress(KEY)).toMatchObject({ pending: 0, embedded: 3, failing: 0 });
    });

    it('embeds a memory with the memory written just before it in its session (same project and agent, within 30 minutes), and no other', async () => {
      // Conversation turns only (decision 0120): notes written in a row get no context.
      const question = doc(11, { title: 'Mel', content: 'Mel: do you still run on Sundays?', type: 'conversation' });
      const answer = doc(12, { title: 'Caro', content: 'Caro: yes, twice a week now', type: 'conversation' });
      const otherProject = doc(13, { project: 'q', title: 'x', content: 'unrelated', type: 'conversation' });
      clock += 31 * 60_000;
      const later = doc(14, { title: 'Caro', content: 'Caro: a new day', type: 'conversation' });
      const note = doc(15, { title: 'n', content: 'a note written right after' });
      for (const d of [question, answer, otherProject, later, note]) await index.insert(d);
      const jobs = await index.claimEmbeddingJobs('w1', 10, 60_000);
      const text = (d: MemoryDoc) => jobs.find((j) => j.id === d.id)?.text;
      expect(text(question)).toBe('Mel: do you still run on Sundays?\nMel');
      expect(text(answer)).toBe('Caro: yes, twice a week now\nCaro\nMel: do you still run on Sundays?');
      expect(text(otherProject)).toBe('unrelated\nx');
      expect(text(later)).toBe('Caro: a new day\nCaro');
      expect(text(note)).toBe('a note written right after\nn');
    });

    it('leases a job to one worker at a time, and gives it back after a failure with its error and backoff', async () => {
      await index.insert(doc(1));
      const first = await index.claimEmbeddingJobs('w1', 10, 60_000);
      expect(first).toHaveLength(1);
      expect(await index.claimEmbeddingJobs('w2', 10, 60_000)).toEqual([]);
      await index.failEmbeddingJob(first[0], 'model exploded', new Date(Date.now() + 60_000));
      expect(await index.embeddingProgress(KEY)).toMatchObject({ pending: 1, failing: 1, lastError: 'model exploded' });
      // Not due yet.
      expect(await index.claimEmbeddingJobs('w2', 10, 60_000)).toEqual([]);
      await index.failEmbeddingJob({ ...first[0], attempts: 1 }, 'again', new Date(Date.now() - 1));
      const retried = await index.claimEmbeddingJobs('w2', 10, 60_000);
      expect(retried.map((j) => j.id)).toEqual([first[0].id]);
      expect(retried[0].attempts).toBeGreaterThanOrEqual(1);
    });

    it('an expired lease lets another worker take the job', async () => {
      await index.insert(doc(1));
      expect(await index.claimEmbeddingJobs('w1', 10, 1)).toHaveLength(1);
      await new Promise((r) => setTimeout(r, 20));
      expect(await index.claimEmbeddingJobs('w2', 10, 60_000)).toHaveLength(1);
    });

    it('re-queues a memory whose title or content changes (not one whose tags change), and a vector of the old text does not clear the new job', async () => {
      const a = doc(1);
      await index.insert(a);
      const [old] = await index.claimEmbeddingJobs('w1', 10, 60_000);
      await index.replace({ ...a, content: 'new words entirely' });
      await index.storeVector(old, KEY, unit(1, 0, 0, 0));
      expect((await index.embeddingProgress(KEY)).pending).toBe(1);
      const [fresh] = await index.claimEmbeddingJobs('w1', 10, 60_000);
      expect(fresh.text).toContain('new words entirely');
      await index.storeVector(fresh, KEY, unit(0, 1, 0, 0));
      await index.replace({ ...a, content: 'new words entirely', tags: ['x'] });
      expect((await index.embeddingProgress(KEY)).pending).toBe(0);
    });

    it('semantic search ranks by cosine, applies every filter, and forgets deleted memories', async () => {
      const near = doc(1, { content: 'near', type: 'fact' });
      const mid = doc(2, { content: 'mid', project: 'other' });
      const far = doc(3, { content: 'far' });
      await index.insertMany([near, mid, far]);
      await embedAll({ [near.id]: unit(1, 0.1, 0, 0), [mid.id]: unit(1, 1, 0, 0), [far.id]: unit(0, 0, 1, 0) });
      const q = unit(1, 0, 0, 0);
      const search = async (filter = {}) =>
        ranked(index.search({ text: 'anything', filter: { namespace: 'default', ...filter }, limit: 10, offset: 0, mode: 'semantic', vector: q, vectorKey: KEY }), 'anything', 'semantic');
      const ids = async (filter = {}) => (await search(filter)).map((r) => r.row.id);
      const all = await search();
      expect(all.map((r) => r.row.id)).toEqual([near.id, mid.id, far.id]);
      expect(all[0].explain.cosine).toBeCloseTo(0.995, 2);
      expect(all[0].row.matched).toEqual(['semantic']);
      expect(await ids({ project: 'p' })).toEqual([near.id, far.id]);
      expect(await ids({ type: 'fact' })).toEqual([near.id]);
      await index.delete('default', near.id);
      expect(await ids()).toEqual([mid.id, far.id]);
      expect((await index.embeddingProgress(KEY)).embedded).toBe(2);
    });

    it('hybrid search finds a memory sharing no word with the query, keeps -word as a hard filter, weighs phrases, and says which lists matched', async () => {
      const para = doc(1, { title: null, content: 'started jogging after the move' });
      const word = doc(2, { title: null, content: 'running shoes are on sale' });
      const excluded = doc(3, { title: null, content: 'running late for the staging deploy' });
      await index.insertMany([para, word, excluded]);
      await embedAll({ [para.id]: unit(1, 0, 0, 0), [word.id]: unit(0, 1, 0, 0), [excluded.id]: unit(0.9, 0.1, 0, 0) });
      const q = unit(1, 0.05, 0, 0);
      const hybrid = async (text: string) =>
        (await ranked(index.search({ text, filter: { namespace: 'default' }, limit: 10, offset: 0, mode: 'hybrid', vector: q, vectorKey: KEY }), text, 'hybrid')).map((r) => r.row);
      const res = await hybrid('running');
      const ids = res.map((r) => r.id);
      expect(ids).toContain(para.id);
      expect(res.find((r) => r.id === para.id)?.matched).toEqual(['semantic']);
      expect(res.find((r) => r.id === word.id)?.matched).toContain('keyword');
      const noStaging = (await hybrid('running -staging')).map((r) => r.id);
      expect(noStaging).not.toContain(excluded.id);
      expect(noStaging).toContain(para.id);
      // A quoted phrase weighs in semantic and hybrid search (decision 0120): it filters nothing out.
      const phrase = (await hybrid('"running shoes"')).map((r) => r.id);
      expect(phrase).toEqual(expect.arrayContaining([word.id, para.id]));
    });

    it('a new vector space queues every memory again; searches use only vectors of the current space meanwhile', async () => {
      const a = doc(1);
      const b = doc(2);
      await index.insertMany([a, b]);
      await embedAll({ [a.id]: unit(1, 0, 0, 0), [b.id]: unit(0, 1, 0, 0) });
      expect(await index.useVectorSpace('test:other-3')).toBe(true);
      expect(await index.embeddingProgress('test:other-3')).toMatchObject({ pending: 2, embedded: 0 });
      const [job] = await index.claimEmbeddingJobs('w1', 1, 60_000);
      await index.storeVector(job, 'test:other-3', Float32Array.from([1, 0, 0]));
      const res = await ranked(
        index.search({ text: 'x', filter: { namespace: 'default' }, limit: 10, offset: 0, mode: 'semantic', vector: Float32Array.from([1, 0, 0]), vectorKey: 'test:other-3' }),
        'x',
        'semantic',
      );
      expect(res.map((r) => r.row.id)).toEqual([job.id]);
      expect(await index.embeddingProgress('test:other-3')).toMatchObject({ pending: 1, embedded: 1 });
      expect(await index.useVectorSpace('test:other-3')).toBe(false);
    });

    it('similar() returns the closest memories with their titles and cosine', async () => {
      const a = doc(1, { title: 'Deploy policy' });
      const b = doc(2, { title: 'Lunch' });
      await index.insertMany([a, b]);
      await embedAll({ [a.id]: unit(1, 0, 0, 0), [b.id]: unit(0, 1, 0, 0) });
      const hits = await index.similar(unit(1, 0.02, 0, 0), KEY, 3, { namespace: 'default', project: 'p' });
      expect(hits[0]).toEqual({ id: a.id, title: 'Deploy policy', score: expect.any(Number) });
      expect(hits[0].score).toBeGreaterThan(0.99);
      expect(hits[1].score).toBeLessThan(0.1);
    });
  });
}
