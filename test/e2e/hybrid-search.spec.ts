import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import request from 'supertest';
import { adminAgent, createTestApp, createToken, TestApp } from '../support/app';
import { testBackends } from '../support/backends';
import { EmbeddingsService } from '../../src/embeddings/embeddings.service';
import { BackendsService } from '../../src/backends/backends.service';
import { Api, createMemory, embeddingsSettled, fullAccessApi } from './memories.helpers';
import { RELEVANCE } from '../../src/memories/search/relevance';
import { defaultModelDir } from '../../src/config/app-config';

/**
 * Hybrid retrieval end to end, on every backend pair, with the local model for real (installed
 * by npm install): paraphrases, filters in every mode, re-embedding after an update, duplicate
 * hints, a model change with progress, and keyword-only without a model.
 */
describe.each(testBackends())('hybrid search on $name', (backend) => {
  let t: TestApp;
  let api: Api;
  const PROJECT = 'life';
  const ids: Record<string, string> = {};

  const status = async () => (await api.get('/api/status').expect(200)).body.embeddings;
  const settle = (timeoutMs?: number) => embeddingsSettled(api, timeoutMs);
  const search = async (q: string, extra: Record<string, string> = {}) =>
    (await api.get(`/api/memories?${new URLSearchParams({ q, ...extra })}`).expect(200)).body as {
      rows: Array<{ id: string; score: number; matched?: string[] }>;
      search_mode: string;
      total: number;
      best_below_floor?: number | null;
    };

  beforeAll(async () => {
    t = await createTestApp({ ...(await backend.env()), MEMSTORE_EMBEDDING_PROVIDER: '' });
    api = await fullAccessApi(t);
    const notes: Array<[string, Record<string, unknown>]> = [
      ['jogging', { title: 'Lisbon', content: 'Started jogging along the river every morning after the move to Lisbon.', type: 'fact', project: PROJECT }],
      ['deploy', { title: 'Deploy policy', content: 'Deploys go through the blue-green pipeline; never deploy on Fridays.', type: 'decision', project: 'ops' }],
      ['bread', { content: 'Banana bread recipe: three ripe bananas, flour, butter, one egg.', type: 'note', project: PROJECT }],
      ['tax', { content: 'The tax return is due at the end of April; the accountant needs the receipts.', type: 'task', project: PROJECT }],
      ['jogging-ops', { content: 'The on-call engineer went jogging during the incident review.', type: 'note', project: 'ops' }],
    ];
    for (const [name, body] of notes) ids[name] = (await createMemory(api, body)).id;
    await settle();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('reports the local model and an empty queue on /api/status', async () => {
    expect(await status()).toMatchObject({ provider: 'local', model: 'bge-small-en-v1.5', dimensions: 384, pending: 0, state: 'ready', progress: 1, reason: null });
  });

  it('finds a memory that shares no word with the query, in hybrid and semantic mode (and not in keyword mode)', async () => {
    // A paraphrase this far (cosine ~0.56) is below the default floor (decision 0121): min_score 0 shows the ranking.
    const q = 'how did the user get into running?';
    const hybrid = await search(q, { project: PROJECT, min_score: '0' });
    expect(hybrid.search_mode).toBe('hybrid');
    expect(hybrid.rows[0].id).toBe(ids.jogging);
    expect(hybrid.rows[0].matched).toEqual(['semantic']);
    const semantic = await search(q, { project: PROJECT, mode: 'semantic', min_score: '0' });
    expect(semantic.search_mode).toBe('semantic');
    expect(semantic.rows[0].id).toBe(ids.jogging);
    expect(semantic.rows[0].score).toBeGreaterThan(semantic.rows[1].score);
    const keyword = await search(q, { project: PROJECT, mode: 'keyword' });
    expect(keyword.search_mode).toBe('keyword');
    expect(keyword.rows.map((r) => r.id)).not.toContain(ids.jogging);
  });

  it("answers the guide's question in other words by default, in hybrid and semantic mode", async () => {
    const id = (await createMemory(api, { content: 'We chose PostgreSQL over MySQL for the billing service because of its JSONB support.', type: 'decision', project: 'billing' })).id;
    await settle();
    for (const mode of ['hybrid', 'semantic']) expect((await search('which database did we pick for payments?', { project: 'billing', mode })).rows.map((r) => r.id)).toEqual([id]);
  });

  it('applies every list filter in every mode', async () => {
    type Row = { id: string; project: string; type: string };
    for (const mode of ['hybrid', 'semantic', 'keyword']) {
      // Semantic lists rank every memory the filters allow; keyword ones only those with the words.
      const inOps = (await search('jogging exercise', { project: 'ops', mode, min_score: '0' })).rows as unknown as Row[];
      expect(inOps[0].id).toBe(ids['jogging-ops']);
      expect(inOps.every((r) => r.project === 'ops')).toBe(true);
      const facts = (await search('jogging exercise', { type: 'fact', mode, min_score: '0' })).rows as unknown as Row[];
      expect(facts.map((r) => r.id)).toEqual([ids.jogging]);
      const none = await search('jogging exercise', { type: 'fact', project: 'ops', mode, min_score: '0' });
      expect(none.rows).toEqual([]);
    }
  });

  it('keeps -word a hard filter in hybrid and semantic mode; a quoted phrase weighs there, it does not filter', async () => {
    for (const mode of ['hybrid', 'semantic']) {
      const without = await search('morning run -jogging', { mode, min_score: '0' });
      expect(without.rows.map((r) => r.id)).not.toContain(ids.jogging);
      expect(without.rows.map((r) => r.id)).not.toContain(ids['jogging-ops']);
      // min_score 0: every candidate, so a filter would show as missing rows.
      const phrase = await search('"blue-green pipeline" weekend', { mode, min_score: '0' });
      expect(phrase.rows[0].id).toBe(ids.deploy);
      expect(phrase.rows.length).toBeGreaterThan(1);
    }
    // A question quoting a title the memory does not hold word for word is still answered.
    const book = (await createMemory(api, { content: 'Melanie finished the book about how nothing can be impossible in July.', project: 'books' })).id;
    await settle();
    for (const mode of ['hybrid', 'semantic']) {
      const res = await search('When did Melanie read the book "nothing is impossible"?', { mode, project: 'books' });
      expect(res.rows.map((r) => r.id)).toEqual([book]);
    }
    // Keyword mode keeps the phrase a filter.
    expect((await search('"nothing is impossible"', { mode: 'keyword', project: 'books' })).rows).toEqual([]);
  });

  describe('relevance: a floor, rare words first, explain', () => {
    const TRUST = 'trust';
    const trust: Record<string, string> = {};
    type Explained = {
      id: string;
      score: number;
      explain: Record<string, unknown> & { neighbour_boost: number; cosine: number | null; matched_words: string[]; keyword: number; semantic: number; signals: Record<string, number> };
    };
    const explained = async (q: string, extra: Record<string, string>) => (await search(q, { explain: 'true', ...extra })).rows as unknown as Explained[];
    beforeAll(async () => {
      const bodies: Array<[string, Record<string, unknown>]> = [
        ['quintessa', { content: 'Paid the Quintessa invoice by bank transfer on Tuesday.', type: 'fact' }],
        ['p1', { content: 'Supplier invoices are paid by bank transfer within thirty days.', type: 'fact' }],
        ['p2', { content: 'The payment to the cleaning company went through on Tuesday.', type: 'fact' }],
        ['p3', { content: 'Bank transfer fees went up this quarter; card payments cost less now.', type: 'note' }],
        ['p4', { content: 'Remember to pay the electricity bill before the due date.', type: 'task' }],
      ];
      for (const [name, body] of bodies) trust[name] = (await createMemory(api, { ...body, project: TRUST })).id;
      await settle();
    });

    it('returns no rows, and a total of 0, for a query that no memory answers, in hybrid and semantic mode', async () => {
      for (const mode of ['hybrid', 'semantic']) {
        const res = await search('xqzvb flurmption', { mode });
        expect(res.rows).toEqual([]);
        expect(res.total).toBe(0);
        expect(res.best_below_floor).toBe(0); // nothing came close
      }
    });

    it('returns nothing by default for a fact that was deleted, in every mode (its vector and words go with it)', async () => {
      const fact = 'The spare key to the Vorlingen cabin hangs behind the barometer.';
      const id = (await createMemory(api, { content: fact, type: 'fact', project: TRUST })).id;
      await settle();
      const q = 'where is the spare key to the Vorlingen cabin';
      for (const mode of ['hybrid', 'semantic', 'keyword']) expect((await search(q, { project: TRUST, mode })).rows[0]?.id).toBe(id);
      await api.delete(`/api/memories/${id}`).expect(200);
      for (const mode of ['hybrid', 'semantic', 'keyword']) {
        const res = await search(q, { project: TRUST, mode });
        expect(res.rows.map((r) => r.id)).not.toContain(id);
        if (mode !== 'keyword') expect(res).toMatchObject({ rows: [], total: 0 });
      }
    });

    it("ranks a memory holding the query's rare word first in hybrid mode, above semantic-only rows", async () => {
      const res = await explained('quintessa payment', { project: TRUST, min_score: '0' });
      expect(res[0].id).toBe(trust.quintessa);
      expect(res[0].explain.matched_words).toContain('quintessa');
      expect(res.filter((r) => r.explain.matched_words.length === 0).length).toBeGreaterThan(0);
      expect((await search('quintessa payment', { project: TRUST })).rows[0].id).toBe(trust.quintessa);
    });

    it('ranks a memory without a vector yet by its words: first for its rare word, before and after it is embedded', async () => {
      const db = t.app.get(BackendsService).docdb;
      const claim = jest.spyOn(db.embeddings, 'claimEmbeddingJobs').mockResolvedValue([]);
      let waiting: string;
      try {
        waiting = (await createMemory(api, { content: 'The Zyncor licence renewal is handled by procurement.', type: 'fact', project: TRUST })).id;
        const before = await explained('zyncor renewal', { project: TRUST });
        expect(before[0].id).toBe(waiting);
        expect(before[0].explain.cosine).toBeNull();
      } finally {
        claim.mockRestore();
      }
      await settle();
      const after = await explained('zyncor renewal', { project: TRUST });
      expect(after[0].id).toBe(waiting);
      expect(after[0].explain.cosine).not.toBeNull();
    });

    it('answers on words alone when nothing is close in meaning: the rare word still does, shared everyday words do not (decision 0162)', async () => {
      // "quintessa" alone: one memory holds the word, and only that one answers.
      const [row, ...rest] = await explained('quintessa', { project: TRUST });
      expect(row.id).toBe(trust.quintessa);
      expect(rest).toEqual([]);
      // "bank holiday skiing" is close in meaning to no memory (best cosine 0.54); min_score 0 still shows every candidate, each with the signal.
      const all = await explained('bank holiday skiing', { project: TRUST, min_score: '0' });
      expect(all.length).toBeGreaterThan(1);
      for (const r of all) expect(r.explain).toMatchObject({ semantic: 0, signals: { no_close_meaning: -0.1 } });
      // By default only rows whose words clear the floor by the penalty answer.
      const kept = await explained('bank holiday skiing', { project: TRUST });
      expect(kept.map((r) => r.id)).toEqual(all.filter((r) => r.explain.keyword - 0.1 >= 0.4).map((r) => r.id));
    });

    it('min_score moves the floor (REST), and an invalid one is a 422', async () => {
      const byDefault = await search('bank transfer payment', { project: TRUST });
      const all = await search('bank transfer payment', { project: TRUST, min_score: '0' });
      const strict = await search('bank transfer payment', { project: TRUST, min_score: '0.99' });
      expect(all.total).toBeGreaterThan(byDefault.total);
      expect(strict.total).toBeLessThan(byDefault.total);
      expect(all.rows.length).toBe(all.total);
      for (const r of byDefault.rows) expect(r.score).toBeGreaterThanOrEqual(0.4);
      // The answer says how close the best memory the floor left out came: passed back as min_score, it lets that one in.
      const left = all.rows.filter((r) => !byDefault.rows.some((d) => d.id === r.id));
      const best = byDefault.best_below_floor as number;
      expect(best).toBeCloseTo(Math.max(...left.map((r) => r.score)), 3);
      const retried = await search('bank transfer payment', { project: TRUST, min_score: String(best) });
      expect(retried.total).toBe(byDefault.total + 1);
      const strictLeft = byDefault.rows.filter((r) => !strict.rows.some((x) => x.id === r.id));
      expect(strict.best_below_floor).toBeCloseTo(Math.max(...strictLeft.map((r) => r.score)), 3);
      expect(all.best_below_floor).toBeNull();
      expect((await search('bank transfer payment', { project: TRUST, mode: 'keyword' })).best_below_floor).toBeUndefined();
      for (const bad of ['2', '-0.1', 'abc']) {
        const res = await api.get(`/api/memories?q=x&min_score=${bad}`).expect(422);
        expect(res.body.detail[0].loc).toEqual(['query', 'min_score']);
      }
    });

    it('explains each row: matched words, cosine, keyword score, neighbour boost, score and the floor', async () => {
      const [row] = await explained('quintessa invoice', { project: TRUST, min_score: '0.2' });
      expect(row.explain).toMatchObject({ matched_words: ['quintessa', 'invoice'], matched_phrases: [], neighbour_boost: 0, signals: {}, rescore: null, score: row.score, floor: 0.2 });
      expect(row.explain.keyword_score).toEqual(expect.any(Number));
      expect(row.explain.cosine).toEqual(expect.any(Number));
      expect((await search('quintessa invoice', { project: TRUST })).rows[0]).not.toHaveProperty('explain');
    });

    it('places a short statement of a fact before a long text that repeats its words (decision 0169)', async () => {
      const statement = (await createMemory(api, { content: 'Nadia was pre-approved for a mortgage of $350,000 by Kestrel Bank.', type: 'conversation', project: 'loans', agent: 'nadia' })).id;
      const advice = [
        'Congratulations on the pre-approval from Kestrel Bank! A mortgage pre-approval is a strong position to be in.',
        'Before you make an offer, keep in mind that a pre-approval is not a final mortgage commitment: Kestrel Bank will still',
        'appraise the property, verify your income again and check your credit before closing. Avoid opening new credit cards,',
        'changing jobs or making large purchases until the mortgage closes. Budget for closing costs of two to five percent,',
        'property taxes, insurance and maintenance, and remember that the amount a bank pre-approves is a ceiling, not a target:',
        'many buyers are more comfortable spending well below it. Ask Kestrel Bank how long the pre-approval stays valid,',
        'whether the rate is locked, and what documents they will need when you have an accepted offer. If you compare other',
        'lenders, do it within a short window so the credit checks count as one. Good luck with the house hunt!',
      ].join(' ');
      const long = (await createMemory(api, { content: advice, type: 'conversation', project: 'loans', agent: 'assistant' })).id;
      await settle();
      const rows = await explained('How much was Nadia pre-approved for by Kestrel Bank?', { project: 'loans', min_score: '0' });
      const [first, second] = rows;
      expect([first.id, second.id]).toEqual([statement, long]);
      expect(first.explain.signals.long_memory).toBeUndefined();
      // The adapter gave the content's length: K keeps √(600 / length) of itself, at least 0.7.
      const { keyword, semantic, signals } = second.explain;
      const kept = Math.max(RELEVANCE.LONG_MEMORY_MIN, Math.sqrt(RELEVANCE.LONG_MEMORY / advice.length));
      expect(signals.long_memory).toBeCloseTo(-keyword * (1 - kept) * (1 - semantic), 3);
      expect(signals.long_memory).toBeLessThan(0);
    });

    it('gives conversation turns written in a row a neighbour boost, and notes written in a row none', async () => {
      const pair = async (type: string, project: string) => {
        const first = (await createMemory(api, { content: 'Do you still go rowing on the lake at dawn?', type, project, agent: 'chat' })).id;
        const second = (await createMemory(api, { content: 'Yes, twice a week with my sister.', type, project, agent: 'chat' })).id;
        return { first, second };
      };
      const turns = await pair('conversation', 'talk');
      const notes = await pair('note', 'jotted');
      await settle();
      const boost = async (project: string, id: string) => (await explained('rowing on the lake at dawn', { project, min_score: '0' })).find((r) => r.id === id)?.explain.neighbour_boost;
      expect(await boost('talk', turns.second)).toBeGreaterThan(0);
      expect(await boost('jotted', notes.second)).toBe(0);
    });

    it('answers a question in other words than a note by default, where a conversation turn saying the same needs a closer match (decision 0173)', async () => {
      // No word in common; cosine 0.66: S 0.37 on the scale of conversation turns (below the floor), 0.57 for a note.
      const content = 'Book a dental cleaning before the insurance year ends in March.';
      const note = (await createMemory(api, { content, type: 'task', project: 'errands' })).id;
      const turn = (await createMemory(api, { content, type: 'conversation', project: 'chat-errands' })).id;
      await settle();
      const q = 'Which appointment has to happen before the coverage renews?';
      const [row] = await explained(q, { project: 'errands' });
      expect(row.id).toBe(note);
      expect(row.explain.matched_words).toEqual([]);
      expect(row.score).toBeGreaterThanOrEqual(RELEVANCE.FLOOR);
      const asTurn = await search(q, { project: 'chat-errands' });
      expect(asTurn.rows).toEqual([]);
      expect(asTurn.best_below_floor).toBeCloseTo(row.score - RELEVANCE.NOTE_LIFT, 3);
      expect((await search(q, { project: 'chat-errands', min_score: String(asTurn.best_below_floor) })).rows.map((r) => r.id)).toEqual([turn]);
    });
  });

  it('re-embeds a memory whose content changes', async () => {
    const m = await createMemory(api, { content: 'Bought a new mechanical keyboard with brown switches.', project: 'pets' });
    await settle();
    const before = await search('adopting a dog', { project: 'pets', mode: 'semantic' });
    const oldScore = before.rows.find((r) => r.id === m.id)?.score ?? 0;
    await api.patch(`/api/memories/${m.id}`, { content: 'We adopted a golden retriever puppy from the shelter.' }).expect(200);
    await settle();
    const after = await search('adopting a dog', { project: 'pets', mode: 'semantic' });
    expect(after.rows[0].id).toBe(m.id);
    expect(after.rows[0].score).toBeGreaterThan(oldScore + 0.1);
  });

  it('answers duplicate hints on create: a near-copy names the original, a new topic none', async () => {
    const copy = await api.post('/api/memories', { title: 'Deploy policy', content: 'Deploys go through the blue/green pipeline, and we never deploy on a Friday.', project: 'ops' }).expect(201);
    expect(copy.body.similar[0]).toMatchObject({ id: ids.deploy, title: 'Deploy policy' });
    expect(copy.body.similar[0].score).toBeGreaterThanOrEqual(0.86);
    expect(copy.body.similar.length).toBeLessThanOrEqual(3);
    const fresh = await api.post('/api/memories', { content: 'The office plants need water on Mondays.', project: 'ops' }).expect(201);
    expect(fresh.body.similar).toEqual([]);
  });

  it('hints that a near-copy looks like an update, and once linked with supersedes only the newer one answers in hybrid and semantic mode', async () => {
    const old = await createMemory(api, { title: 'Mortgage pre-approval', content: 'Wells Fargo pre-approved our mortgage for $350,000.', project: 'home' });
    await settle();
    const copy = await api.post('/api/memories', { title: 'Mortgage pre-approval', content: 'Wells Fargo pre-approved our mortgage for $400,000.', project: 'home' }).expect(201);
    // Hints are best effort (an embedding-time budget); when given, the older near-copy is a likely update.
    if (copy.body.similar.length > 0) {
      expect(copy.body.similar[0]).toMatchObject({ id: old.id, likely_update: true });
      expect(copy.body.hint).toContain(`supersedes: ["${old.id}"]`);
    }
    await settle();
    const q = 'how much was the mortgage pre-approval?';
    for (const mode of ['hybrid', 'semantic']) expect((await search(q, { project: 'home', mode })).rows.map((r) => r.id)).toEqual([copy.body.memory.id, old.id]);
    await api.patch(`/api/memories/${copy.body.memory.id}`, { supersedes: [old.id] }).expect(200);
    for (const mode of ['hybrid', 'semantic']) {
      expect((await search(q, { project: 'home', mode })).rows.map((r) => r.id)).toEqual([copy.body.memory.id]);
      expect((await search(q, { project: 'home', mode, include_superseded: 'true' })).rows.map((r) => r.id)).toEqual([copy.body.memory.id, old.id]);
    }
  });

  it('ranks imported near-duplicates by their original dates: the later statement first, whatever its text', async () => {
    // The same two texts in two projects with their dates swapped: whichever text ranks first on its own, one project has the older one there.
    const texts = ['The painting Ethereal Dreams hangs in the living room now.', 'The painting Ethereal Dreams hangs in the hallway now.'];
    const dates = ['2023-10-30T16:38:00.000Z', '2023-07-11T09:13:00.000Z'];
    const lines = [0, 1].flatMap((p) => texts.map((content, i) => ({ title: 'Painting', content, created_at: dates[(i + p) % 2], project: `imported-${p}` })));
    const body = lines.map((l) => JSON.stringify(l)).join('\n');
    expect((await api.post('/api/import?format=jsonl').set('Content-Type', 'application/x-ndjson').send(body).expect(200)).body).toMatchObject({ created: 4 });
    await settle();
    for (const p of [0, 1]) {
      for (const mode of ['hybrid', 'semantic']) {
        const rows = (await search('where does the painting Ethereal Dreams hang?', { project: `imported-${p}`, mode })).rows as unknown as Array<{ created_at: string }>;
        expect(rows.map((r) => r.created_at)).toEqual(dates);
      }
    }
  });

  it("answers a question about a total with each conversation session's best turn before a session's second (decision 0165)", async () => {
    const turn = (content: string, created_at: string) => ({ title: 'chat', content, type: 'conversation', created_at, project: 'hikes', agent: 'chat' });
    const lines = [
      turn('We hiked the Kestrel Ridge trail on Saturday morning.', '2025-05-10T10:00:00.000Z'),
      turn('The Kestrel Ridge trail hike took us five hours.', '2025-05-10T10:01:00.000Z'),
      turn('Back on the Kestrel Ridge trail today with my brother.', '2025-06-21T18:00:00.000Z'),
    ];
    await api
      .post('/api/import?format=jsonl')
      .set('Content-Type', 'application/x-ndjson')
      .send(lines.map((l) => JSON.stringify(l)).join('\n'))
      .expect(200);
    await settle();
    const rows = (await search('How many times did we hike the Kestrel Ridge trail?', { project: 'hikes', explain: 'true' })).rows as unknown as Array<{
      score: number;
      created_at: string;
      explain: { signals: Record<string, number> };
    }>;
    expect(rows).toHaveLength(3);
    // Exactly the later-placed of the two May turns moved down, by 0.1; its score is still its relevance.
    const moved = rows.filter((r) => r.explain.signals.same_session !== undefined);
    expect(moved).toHaveLength(1);
    expect(moved[0].explain.signals.same_session).toBe(-0.1);
    expect(moved[0].created_at.startsWith('2025-05-10')).toBe(true);
    expect(rows.findIndex((r) => r.created_at.startsWith('2025-05-10'))).toBeLessThan(rows.indexOf(moved[0]));
    const placed = rows.map((r) => r.score + (r.explain.signals.same_session ?? 0));
    expect(placed).toEqual([...placed].sort((a, b) => b - a));
    // A question that is not about a total is answered by score alone.
    const plain = (await search('When did we hike the Kestrel Ridge trail?', { project: 'hikes', explain: 'true' })).rows as unknown as Array<{
      score: number;
      explain: { signals: Record<string, number> };
    }>;
    expect(plain.every((r) => r.explain.signals.same_session === undefined)).toBe(true);
    expect(plain.map((r) => r.score)).toEqual(plain.map((r) => r.score).sort((a, b) => b - a));
  });

  it('gives no duplicate hints to a token without memory:read (they would name stored memories, issue 46)', async () => {
    const { plaintext } = await createToken(t, { scopes: ['memory:write'], rate_limit_per_minute: 0 });
    const copy = await request(t.http)
      .post('/api/memories')
      .set('Authorization', `Bearer ${plaintext}`)
      .send({ title: 'Deploy policy', content: 'Deploys go through the blue/green pipeline, and we never deploy on a Friday.', project: 'ops' })
      .expect(201);
    expect(copy.body.similar).toEqual([]);
    expect(JSON.stringify(copy.body)).not.toContain(ids.deploy);
  });

  it("embeds a new memory once for its hints and its vector, and a create does not queue behind another request's embedding", async () => {
    const embeddings = t.app.get(EmbeddingsService);
    const provider = embeddings.provider;
    // A request's embedding (a search's query) makes the model busy for hints until it is done.
    expect(provider.busyWithUrgent()).toBe(false);
    const query = provider.embed('when does the accountant need the receipts', 'query');
    expect(provider.busyWithUrgent()).toBe(true);
    await query;
    expect(provider.busyWithUrgent()).toBe(false);

    const embed = jest.spyOn(provider, 'embed');
    const skippedBefore = embeddings.hintsSkipped;
    try {
      // Twelve creates at once: one at a time gets hints from the model, the others skip them.
      // (One agent each: no memory has a previous one in its session, so the queue's job text is
      // the hint's text; with session context the queue embeds the longer text itself.)
      const bodies = Array.from({ length: 12 }, (_, i) => ({
        title: `Receipt ${i}`,
        content: `Receipt number ${i} of the tax folder: a parking ticket from stop ${i * 7}.`,
        project: 'hints',
        agent: `clerk-${i}`,
      }));
      const ownText = (b: { title: string; content: string }) => `${b.content}\n${b.title}`;
      const created = await Promise.all(bodies.map((b) => api.post('/api/memories', b).expect(201)));
      await settle();
      const hinted = created.filter((r) => r.body.similar.length > 0 || embed.mock.calls.some(([text, kind, urgent]) => kind === 'document' && urgent && text === ownText(r.body.memory)));
      expect(hinted.length + (embeddings.hintsSkipped - skippedBefore)).toBe(12);
      // Every memory's text was embedded exactly once (hint and queue share the vector) ...
      for (const b of bodies) expect(embed.mock.calls.filter(([text]) => text === ownText(b))).toHaveLength(1);
      // ... and every one of them is searchable by meaning.
      const found = await search('parking ticket receipt', { project: 'hints', mode: 'semantic', limit: '20', min_score: '0' });
      expect(found.rows).toHaveLength(12);
    } finally {
      embed.mockRestore();
    }
  });

  it('prefers the memories of the time a question names (query_date), never empties a search for it, and leaves keyword mode literal', async () => {
    // Two notes alike in all but their date (imported with their created_at): the words and the
    // meaning tie (up to the last bits of their vectors), so the date decides.
    const note = (id: string, at: string) => ({ id, content: 'Noted: the boiler pressure drops overnight; call the plumber.', type: 'note', project: 'house', created_at: at, updated_at: at });
    const may = 'aaaaaaaaaaaaaaaaaaaa0510';
    const april = 'aaaaaaaaaaaaaaaaaaaa0404';
    const jsonl = [note(april, '2023-04-04T09:00:00Z'), note(may, '2023-05-10T09:00:00Z')].map((l) => JSON.stringify(l)).join('\n');
    await api.post('/api/import?format=jsonl').set('Content-Type', 'application/x-ndjson').send(Buffer.from(jsonl)).expect(200);
    await settle();
    // min_score 0: this is about order, not the relevance floor (semantic alone scores these notes below it).
    const order = async (q: string, extra: Record<string, string>) => (await search(q, { project: 'house', min_score: '0', ...extra })).rows.map((r) => r.id);
    const q = 'what did I note last week about the boiler';
    for (const mode of ['hybrid', 'semantic']) {
      // Asked on 10 April 2023, "last week" is 3-9 April: the older note comes first.
      expect(await order(q, { mode, query_date: '2023-04-10T12:00:00Z' })).toEqual([april, may]);
      expect(await order(q, { mode, query_date: '2023-05-20' })).toEqual([may, april]);
      expect(await order('boiler pressure in April 2023', { mode })).toEqual([april, may]);
      // A time no memory has changes no membership: the search still answers both.
      expect((await order('boiler pressure in 1999', { mode })).sort()).toEqual([april, may].sort());
      expect((await order('what did I note yesterday about the boiler', { mode, query_date: '2030-01-01' })).sort()).toEqual([april, may].sort());
    }
    // Keyword mode reads the words only: the two dates that reverse the order above change nothing.
    const literal = await order(q, { mode: 'keyword' });
    expect([...literal].sort()).toEqual([april, may].sort());
    for (const query_date of ['2023-04-10T12:00:00Z', '2023-05-20']) expect(await order(q, { mode: 'keyword', query_date })).toEqual(literal);
    const bad = await api.get('/api/memories?q=boiler&query_date=last%20week').expect(422);
    expect(bad.body.detail[0].loc).toEqual(['query', 'query_date']);
  });

  it('a model change re-embeds every memory with progress on /api/status while search keeps working', async () => {
    const server = hashEmbeddingServer();
    const url = await server.start();
    const admin = await adminAgent(t);
    try {
      await admin.post('/api/config').send({ embedding_provider: 'openai', embedding_url: url, embedding_model: 'hash-64', embedding_api_key: 'sk-e2e' }).expect(200);
      server.hold(); // the re-embedding waits until released: its progress can be seen
      let during: Record<string, unknown> | null = null;
      for (let i = 0; i < 50 && !during; i++) {
        const e = await status();
        if (e.model === 'hash-64' && e.pending > 0) during = e;
        else await new Promise((r) => setTimeout(r, 100));
      }
      expect(during).toMatchObject({ provider: 'openai', model: 'hash-64', state: 're-embedding' });
      expect(during!.progress as number).toBeLessThan(1);
      // Search keeps working meanwhile: the provider holds every answer, so the query's vector
      // does not come in time and the search runs keyword-only, saying so.
      const meanwhile = await search('banana bread', { project: PROJECT });
      expect(meanwhile.rows.map((r) => r.id)).toContain(ids.bread);
      expect(meanwhile.search_mode).toBe('keyword');
      server.release();
      const done = await settle();
      expect(done).toMatchObject({ provider: 'openai', model: 'hash-64', dimensions: 64, state: 'ready', progress: 1 });
      expect(done.embedded).toBeGreaterThanOrEqual(Object.keys(ids).length);
      expect(server.calls()).toBeGreaterThanOrEqual(Object.keys(ids).length);
      // The same model with a rotated key and its own cosine scale (decision 0172): nothing is
      // re-embedded, and the next search already sends the new key and maps cosines by the scale.
      const embeddedBefore = done.embedded;
      await admin.post('/api/config').send({ embedding_api_key: 'sk-rotated', embedding_cosine_scale: '0.1, 0.3' }).expect(200);
      const scaled = (await api.get(`/api/memories?${new URLSearchParams({ q: 'banana bread with ripe bananas', mode: 'semantic', explain: 'true', min_score: '0' })}`).expect(200)).body;
      expect(server.auth()).toBe('Bearer sk-rotated');
      const { cosine, semantic } = scaled.rows[0].explain as { cosine: number; semantic: number };
      expect(semantic).toBeCloseTo(Math.min(1, Math.max(0, (cosine - 0.1) / 0.2)), 3);
      expect(await status()).toMatchObject({ model: 'hash-64', pending: 0, embedded: embeddedBefore });
      await admin.post('/api/config').send({ embedding_cosine_scale: '0.3, 0.1' }).expect(422);
      // Back to the local model: everything is embedded again with it.
      await admin.post('/api/config').send({ embedding_provider: '', embedding_url: '', embedding_model: '', embedding_api_key: '', embedding_cosine_scale: '' }).expect(200);
      expect(await settle()).toMatchObject({ provider: 'local', model: 'bge-small-en-v1.5', state: 'ready' });
      expect((await search('how did the user get into running?', { project: PROJECT, min_score: '0' })).rows[0].id).toBe(ids.jogging);
    } finally {
      server.release();
      await server.stop();
    }
  }, 120_000);
});

describe('a local model that states its own cosine scale (decision 0172)', () => {
  let t: TestApp;
  let api: Api;
  let dir: string;
  beforeAll(async () => {
    // bge's files with a model.json that states a scale of its own (as e5's does).
    const bge = defaultModelDir();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-scaled-model-'));
    for (const f of ['model.onnx', 'tokenizer.json']) fs.symlinkSync(path.join(bge, f), path.join(dir, f));
    const meta = JSON.parse(fs.readFileSync(path.join(bge, 'model.json'), 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(path.join(dir, 'model.json'), JSON.stringify({ ...meta, cosineZero: 0.3, cosineOne: 0.5 }));
    t = await createTestApp({ MEMSTORE_EMBEDDING_PROVIDER: '', MEMSTORE_EMBEDDING_MODEL_DIR: dir });
    api = await fullAccessApi(t);
  });
  afterAll(async () => {
    await t?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("maps a search's cosines by the model's scale, not bge's", async () => {
    await createMemory(api, { content: 'Started jogging along the river every morning after the move to Lisbon.' });
    await embeddingsSettled(api);
    const res = await api.get(`/api/memories?${new URLSearchParams({ q: 'how did the user get into running?', mode: 'semantic', explain: 'true', min_score: '0' })}`).expect(200);
    const { cosine, semantic } = res.body.rows[0].explain as { cosine: number; semantic: number };
    // A note: lifted by NOTE_LIFT on either scale (decision 0173).
    expect(semantic).toBeCloseTo(Math.min(1, Math.max(0, (cosine - 0.3) / 0.2 + RELEVANCE.NOTE_LIFT)), 3);
    expect(semantic).not.toBeCloseTo(Math.min(1, Math.max(0, (cosine - RELEVANCE.COSINE_ZERO) / (RELEVANCE.COSINE_ONE - RELEVANCE.COSINE_ZERO) + RELEVANCE.NOTE_LIFT)), 2);
  });
});

describe('without an embedding model', () => {
  let t: TestApp;
  let api: Api;
  beforeAll(async () => {
    t = await createTestApp({ MEMSTORE_EMBEDDING_PROVIDER: '', MEMSTORE_EMBEDDING_MODEL_DIR: '/nonexistent/memstore-model' });
    api = await fullAccessApi(t);
  });
  afterAll(async () => t?.close());

  it('runs keyword-only and says so on /api/status, in every search answer and in the guide', async () => {
    const e = (await api.get('/api/status').expect(200)).body.embeddings;
    expect(e).toMatchObject({ provider: 'none', model: null, dimensions: null, state: 'keyword-only' });
    expect(e.reason).toContain('/nonexistent/memstore-model');
    await createMemory(api, { content: 'Started jogging after the move.' });
    const res = await api.get('/api/memories?q=jogging&mode=semantic').expect(200);
    expect(res.body.search_mode).toBe('keyword');
    expect(res.body.rows).toHaveLength(1);
    const created = await api.post('/api/memories', { content: 'Started jogging after the move.' }).expect(201);
    expect(created.body.similar).toEqual([]);
    const guide = (await api.get('/api/guide').expect(200)).body.guide as string;
    expect(guide).toMatch(/keyword-only/);
  });

  it('refuses an unknown mode with a 422 naming the parameter', async () => {
    const res = await api.get('/api/memories?q=x&mode=fuzzy').expect(422);
    expect(res.body.detail[0].loc).toEqual(['query', 'mode']);
  });
});

/** An OpenAI-compatible /v1/embeddings (hashed bag of words, 64 dimensions) that can hold its answers. */
function hashEmbeddingServer() {
  let held: Array<() => void> | null = null;
  let n = 0;
  let auth: string | undefined;
  const server = http.createServer((req, res) => {
    auth = req.headers.authorization;
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const answer = () => {
        n++;
        const { input } = JSON.parse(raw) as { input: string };
        const v = new Array<number>(64).fill(0);
        for (const w of input.toLowerCase().match(/[a-z]+/g) ?? []) v[[...w].reduce((h, ch) => (h * 31 + ch.charCodeAt(0)) % 64, 7)] += 1;
        v[0] += 0.01;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: [{ embedding: v }] }));
      };
      if (held) held.push(answer);
      else answer();
    });
  });
  return {
    start: () => new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`))),
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
    hold: () => (held = []),
    release: () => {
      const h = held ?? [];
      held = null;
      for (const f of h) f();
    },
    calls: () => n,
    auth: () => auth,
  };
}
