import { MemoryIndex } from '../../src/backends/ports/memory-index.port';
import { MEMORY_SCOPES, MEMORY_TYPES, MemoryDoc, MemoryRow } from '../../src/backends/ports/memory.model';
import { ConflictError } from '../../src/common/errors';
import { newMemoryId } from '../../src/memories/memory-id';

/**
 * What a search backend can do. A backend that lacks a capability declares it: the tests that
 * need it then check only that the query still works, and say so by name in their title.
 */
export interface MemoryIndexCapabilities {
  /** English stemming: "deploy" finds "Deployments". */
  stemming: boolean;
  /** Accent folding: "cafe" finds "Café". */
  accents: boolean;
  /** Relevance ranking: more / rarer words and title hits rank higher. */
  ranking: boolean;
  /** Snippet around the best match (rather than the start of the content). */
  matchSnippets: boolean;
}

export const FULL_TEXT: MemoryIndexCapabilities = { stemming: true, accents: true, ranking: true, matchSnippets: true };

let clock = Date.UTC(2026, 0, 1);

/** A memory with sensible defaults; each call is one millisecond newer than the previous one. */
export function memoryDoc(over: Partial<MemoryDoc> = {}): MemoryDoc {
  clock += 1;
  const at = over.createdAt ?? new Date(clock);
  return {
    id: newMemoryId(at.getTime()),
    namespace: 'default',
    title: null,
    type: 'note',
    scope: 'global',
    tags: [],
    agent: null,
    project: null,
    content: 'plain content',
    createdAt: at,
    updatedAt: at,
    version: 1,
    objectKey: null,
    author: null,
    ...over,
  };
}

const ids = (rows: MemoryRow[]) => rows.map((r) => r.id);

export function memoryIndexContract(name: string, make: () => Promise<{ index: MemoryIndex; cleanup(): Promise<void> }>, capabilities: MemoryIndexCapabilities = FULL_TEXT): void {
  const lacks = (cap: keyof MemoryIndexCapabilities) => (capabilities[cap] ? '' : ` [capability '${cap}' not supported by ${name}: checks only that the query works]`);

  describe(`MemoryIndex contract: ${name}`, () => {
    let index: MemoryIndex;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      ({ index, cleanup } = await make());
    });
    afterEach(async () => {
      await cleanup();
    });

    const add = async (over: Partial<MemoryDoc> = {}) => {
      const d = memoryDoc(over);
      await index.insert(d);
      return d;
    };
    const search = (text: string, extra: Partial<Parameters<MemoryIndex['search']>[0]> = {}) => index.search({ text, filter: { namespace: 'default' }, limit: 50, offset: 0, ...extra });

    describe('versions: compare-and-swap and history (issue 9)', () => {
      const key = (id: string, v: number) => `memories/${id}.v${v}-${'0'.repeat(11)}${v % 10}.md`;
      const versioned = async (over: Partial<MemoryDoc> = {}) => {
        const d0 = memoryDoc(over);
        const d = { ...d0, objectKey: key(d0.id, 1), author: { kind: 'token' as const, id: '0123456789abcdef', name: 'bot' } };
        await index.insert(d);
        return d;
      };
      const next = (d: MemoryDoc, over: Partial<MemoryDoc> = {}): MemoryDoc => ({
        ...d,
        ...over,
        version: d.version + 1,
        objectKey: key(d.id, d.version + 1),
        updatedAt: new Date(d.updatedAt.getTime() + 1),
      });

      it('a create records version 1 in the history; an update with the expected version swaps and adds an entry', async () => {
        const d = await versioned({ title: 'one', content: 'first' });
        expect((await index.history('default', d.id, 10, 0)).rows).toEqual([{ version: 1, objectKey: d.objectKey, title: 'one', size: 5, updatedAt: d.updatedAt, author: d.author }]);
        const d2 = next(d, { title: 'two', content: 'second!' });
        expect(await index.update(d2, 1, 20)).toEqual({ status: 'ok', released: [] });
        expect(await index.get('default', d.id)).toEqual(d2);
        const h = await index.history('default', d.id, 10, 0);
        expect(h.total).toBe(2);
        expect(h.rows.map((r) => [r.version, r.title, r.size])).toEqual([
          [2, 'two', 7],
          [1, 'one', 5],
        ]);
        expect((await index.history('default', d.id, 1, 1)).rows.map((r) => r.version)).toEqual([1]);
      });

      it('refuses a stale or missing version, and says which version is current', async () => {
        const d = await versioned();
        const d2 = next(d, { content: 'winner' });
        await index.update(d2, 1, 20);
        expect(await index.update(next(d, { content: 'loser' }), 1, 20)).toEqual({ status: 'conflict', current: 2 });
        expect((await index.get('default', d.id))!.content).toBe('winner');
        expect(await index.update(next(memoryDoc()), 1, 20)).toEqual({ status: 'missing' });
      });

      it('of many concurrent swaps from one version exactly one wins', async () => {
        const d = await versioned();
        const res = await Promise.all(Array.from({ length: 8 }, (_, i) => index.update(next(d, { content: `w${i}` }), 1, 20)));
        const won = res.filter((r) => r.status === 'ok');
        expect(won).toHaveLength(1);
        expect(res.filter((r) => r.status === 'conflict')).toHaveLength(7);
        expect((await index.history('default', d.id, 10, 0)).total).toBe(2);
      });

      it('keeps at most `keep` entries and releases the object keys of the others', async () => {
        let d: MemoryDoc = await versioned();
        const released: string[] = [];
        for (let i = 0; i < 4; i++) {
          const n = next(d, { content: `c${i}` });
          const r = await index.update(n, d.version, 3);
          if (r.status !== 'ok') throw new Error(r.status);
          released.push(...r.released);
          d = n;
        }
        expect(released).toEqual([key(d.id, 1), key(d.id, 2)]);
        expect((await index.history('default', d.id, 10, 0)).rows.map((r) => r.version)).toEqual([5, 4, 3]);
      });

      it('remove: with a stale version → conflict; else the memory and its history go, every object key released', async () => {
        const d = await versioned();
        const d2 = next(d);
        await index.update(d2, 1, 20);
        expect(await index.remove('default', d.id, 1)).toEqual({ status: 'conflict', current: 2 });
        const r = await index.remove('default', d.id, 2);
        expect(r.status).toBe('ok');
        expect(r.status === 'ok' && [...r.released].sort()).toEqual([key(d.id, 1), key(d.id, 2), `memories/${d.id}.md`].sort());
        expect(await index.get('default', d.id)).toBeNull();
        expect((await index.history('default', d.id, 10, 0)).total).toBe(0);
        expect(await index.remove('default', d.id)).toEqual({ status: 'missing' });
      });

      it('holds (issue 46): the current version and kept past versions, never a losing, pruned or unknown write; forget leaves held writes alone', async () => {
        let d: MemoryDoc = await versioned();
        const loser = `memories/${d.id}.v2-ffffffffffff.md`;
        for (let i = 0; i < 3; i++) {
          const n = next(d, { content: `h${i}` });
          expect((await index.update(n, d.version, 3)).status).toBe('ok');
          d = n;
        }
        expect(await index.update({ ...next(d), version: 2, objectKey: loser }, 1, 3)).toMatchObject({ status: 'conflict' });
        expect(await index.holds(d.id, key(d.id, 4))).toBe(true);
        expect(await index.holds(d.id, key(d.id, 2))).toBe(true);
        expect(await index.holds(d.id, key(d.id, 1))).toBe(false); // pruned (keep 3)
        expect(await index.holds(d.id, loser)).toBe(false);
        expect(await index.holds('ffffffffffffffffffffffff', key(d.id, 4))).toBe(false);
        await index.forget(d.id, loser);
        await index.forget(d.id, key(d.id, 3));
        expect(await index.holds(d.id, key(d.id, 3))).toBe(true);
        expect((await index.history('default', d.id, 10, 0)).rows.map((r) => r.version)).toEqual([4, 3, 2]);
      });

      it('removeMany returns each removed memory with its object keys; addHistory adds past versions', async () => {
        const a = await versioned();
        const b = await versioned();
        await index.addHistory('default', b.id, [{ version: 0 + 1, objectKey: key(b.id, 1), title: null, size: 1, updatedAt: b.updatedAt, author: null }]);
        const legacy = await add(); // a memory from before versions: no object key, no history
        await index.addHistory('default', legacy.id, [{ version: 1, objectKey: `memories/${legacy.id}.md`, title: null, size: 3, updatedAt: legacy.updatedAt, author: null }]);
        expect((await index.history('default', legacy.id, 10, 0)).rows.map((r) => r.objectKey)).toEqual([`memories/${legacy.id}.md`]);
        const out = await index.removeMany('default', [a.id, 'ffffffffffffffffffffffff', legacy.id]);
        expect(out.map((o) => o.id).sort()).toEqual([a.id, legacy.id].sort());
        expect(out.find((o) => o.id === a.id)!.released).toContain(key(a.id, 1));
        expect(out.find((o) => o.id === legacy.id)!.released).toContain(`memories/${legacy.id}.md`);
        expect(await index.get('default', b.id)).not.toBeNull();
      });
    });

    describe('documents', () => {
      it('stores every field and reads it back', async () => {
        const d = await add({ title: 'Title', type: 'decision', scope: 'project', tags: ['b', 'a'], agent: 'bot', project: 'p1', content: 'Body\nwith lines' });
        const got = await index.get('default', d.id);
        expect(got).toEqual(d);
        expect(got!.createdAt.getTime()).toBe(d.createdAt.getTime());
      });

      it('inserts many at once (reindex), each readable and searchable', async () => {
        const docs = Array.from({ length: 25 }, (_, i) => memoryDoc({ content: `bulk item ${i} yankee`, tags: i % 2 ? ['odd'] : [] }));
        await index.insertMany(docs);
        expect(await index.count('default')).toBe(25);
        expect(await index.get('default', docs[7].id)).toEqual(docs[7]);
        expect((await search('yankee')).total).toBe(25);
        expect((await index.list({ filter: { namespace: 'default', tags: ['odd'] }, limit: 50, offset: 0 })).total).toBe(12);
        await index.insertMany([]);
        expect(await index.count('default')).toBe(25);
      });

      it('gets many by id at once, leaving out unknown ids (migration, backup)', async () => {
        const docs = Array.from({ length: 12 }, (_, i) => memoryDoc({ content: `many ${i}` }));
        await index.insertMany(docs);
        const got = await index.getMany('default', [docs[3].id, '0123456789abcdef01234567', docs[9].id, docs[0].id]);
        expect(got.sort((x, y) => (x.id < y.id ? -1 : 1))).toEqual([docs[0], docs[3], docs[9]].sort((x, y) => (x.id < y.id ? -1 : 1)));
        expect(await index.getMany('default', [])).toEqual([]);
      });

      it('returns null for an unknown id', async () => {
        expect(await index.get('default', '0123456789abcdef01234567')).toBeNull();
      });

      it('refuses a second insert with the same id (ConflictError)', async () => {
        const d = await add();
        await expect(index.insert({ ...d, content: 'other' })).rejects.toBeInstanceOf(ConflictError);
        expect((await index.get('default', d.id))!.content).toBe('plain content');
      });

      it('replaces a document, and search sees the new text only', async () => {
        const d = await add({ content: 'alpha words here', tags: ['old'] });
        expect(await index.replace({ ...d, content: 'bravo words here', tags: ['new'], title: 'T', updatedAt: new Date(d.updatedAt.getTime() + 5) })).toBe(true);
        const got = await index.get('default', d.id);
        expect(got!.content).toBe('bravo words here');
        expect(got!.tags).toEqual(['new']);
        expect((await search('alpha')).total).toBe(0);
        expect(ids((await search('bravo')).rows)).toEqual([d.id]);
        expect((await index.list({ filter: { namespace: 'default', tags: ['old'] }, limit: 10, offset: 0 })).total).toBe(0);
        expect((await index.list({ filter: { namespace: 'default', tags: ['new'] }, limit: 10, offset: 0 })).total).toBe(1);
      });

      it('replace of an unknown id returns false and creates nothing', async () => {
        expect(await index.replace(memoryDoc())).toBe(false);
        expect(await index.count('default')).toBe(0);
      });

      it('deletes one (true, then false) and many (only those that existed)', async () => {
        const a = await add({ content: 'zulu' });
        const b = await add();
        const c = await add();
        expect(await index.delete('default', a.id)).toBe(true);
        expect(await index.delete('default', a.id)).toBe(false);
        expect((await search('zulu')).total).toBe(0);
        const deleted = await index.deleteMany('default', [b.id, a.id, '0123456789abcdef01234567', b.id]);
        expect(deleted).toEqual([b.id]);
        expect(await index.count('default')).toBe(1);
        expect(await index.get('default', c.id)).not.toBeNull();
      });

      it('clear() removes everything and the index keeps working', async () => {
        await add({ content: 'kilo' });
        await add({ content: 'lima' });
        await index.clear();
        expect(await index.count('default')).toBe(0);
        expect((await search('kilo')).total).toBe(0);
        const d = await add({ content: 'kilo again' });
        expect(ids((await search('kilo')).rows)).toEqual([d.id]);
      });

      it('names its search implementation', () => {
        expect(index.searchMode()).toMatch(/\S/);
      });
    });

    describe('list', () => {
      it('is newest first, then id descending for equal times, with a snippet and no content', async () => {
        const at = new Date(Date.UTC(2026, 5, 1));
        const a = await add({ createdAt: new Date(at.getTime() - 1000), content: 'first one' });
        const same1 = memoryDoc({ createdAt: at });
        const same2 = memoryDoc({ createdAt: at });
        await index.insert(same2);
        await index.insert(same1);
        const page = await index.list({ filter: { namespace: 'default' }, limit: 10, offset: 0 });
        const expected = [same1, same2].sort((x, y) => (x.id < y.id ? 1 : -1)).map((d) => d.id);
        expect(ids(page.rows)).toEqual([...expected, a.id]);
        const row = page.rows[2];
        expect(row.snippet).toBe('first one');
        expect(row).not.toHaveProperty('content');
        expect(row.score).toBeUndefined();
        expect(page.total).toBe(3);
      });

      it('pages by offset with the full total', async () => {
        const docs = [];
        for (let i = 0; i < 7; i++) docs.push(await add());
        const newest = docs.reverse().map((d) => d.id);
        const p1 = await index.list({ filter: { namespace: 'default' }, limit: 3, offset: 0 });
        const p3 = await index.list({ filter: { namespace: 'default' }, limit: 3, offset: 6 });
        expect(ids(p1.rows)).toEqual(newest.slice(0, 3));
        expect(ids(p3.rows)).toEqual(newest.slice(6));
        expect(p3.total).toBe(7);
        expect((await index.list({ filter: { namespace: 'default' }, limit: 3, offset: 100 })).rows).toEqual([]);
      });

      it("counts only the namespace's own memories, through inserts and deletes", async () => {
        const mine = [await add(), await add(), await add()];
        for (let i = 0; i < 2; i++) await index.insert(memoryDoc({ namespace: 'acme/a' }));
        await index.remove('default', mine[1].id);
        const page = await index.list({ filter: { namespace: 'default' }, limit: 1, offset: 0 });
        expect(page).toMatchObject({ total: 2, rows: [{ id: mine[2].id }] });
        expect((await index.list({ filter: { namespace: 'acme/a' }, limit: 1, offset: 0 })).total).toBe(2);
        expect((await index.list({ filter: { namespace: 'acme' }, limit: 1, offset: 0 })).total).toBe(0);
      });

      it('applies every filter, alone and together', async () => {
        const x = await add({ type: 'fact', scope: 'project', agent: 'bot', project: 'p1', tags: ['a', 'b'] });
        const y = await add({ type: 'fact', scope: 'global', agent: 'bot', project: 'p2', tags: ['a'] });
        const z = await add({ type: 'task', scope: 'project', agent: 'other', project: 'p1', tags: ['b'] });
        const q = async (filter: Omit<Parameters<MemoryIndex['list']>[0]['filter'], 'namespace'>) =>
          ids((await index.list({ filter: { namespace: 'default', ...filter }, limit: 10, offset: 0 })).rows).sort();
        expect(await q({ type: 'fact' })).toEqual([x.id, y.id].sort());
        expect(await q({ scope: 'project' })).toEqual([x.id, z.id].sort());
        expect(await q({ agent: 'bot' })).toEqual([x.id, y.id].sort());
        expect(await q({ project: 'p1' })).toEqual([x.id, z.id].sort());
        expect(await q({ tags: ['a'] })).toEqual([x.id, y.id].sort());
        expect(await q({ tags: ['a', 'b'] })).toEqual([x.id]);
        expect(await q({ tags: ['a', 'missing'] })).toEqual([]);
        expect(await q({ since: y.createdAt })).toEqual([y.id, z.id].sort());
        expect(await q({ type: 'fact', project: 'p1', tags: ['b'], scope: 'project', agent: 'bot', since: x.createdAt })).toEqual([x.id]);
        expect((await index.list({ filter: { namespace: 'default', type: 'fact' }, limit: 1, offset: 0 })).total).toBe(2);
      });

      it('pages by cursor: strictly after the position, with filters', async () => {
        const docs = [];
        for (let i = 0; i < 6; i++) docs.push(await add({ type: i % 2 ? 'fact' : 'note' }));
        const newest = [...docs].reverse();
        const after = { createdAt: newest[1].createdAt, id: newest[1].id };
        expect(ids((await index.list({ filter: { namespace: 'default' }, limit: 2, offset: 0, after })).rows)).toEqual([newest[2].id, newest[3].id]);
        const facts = newest.filter((d) => d.type === 'fact');
        expect(ids((await index.list({ filter: { namespace: 'default', type: 'fact' }, limit: 10, offset: 0, after: { createdAt: facts[0].createdAt, id: facts[0].id } })).rows)).toEqual(
          facts.slice(1).map((d) => d.id),
        );
      });

      it('keeps a cursor valid while rows are added and deleted (even the cursor row itself)', async () => {
        const docs = [];
        for (let i = 0; i < 5; i++) docs.push(await add());
        const newest = [...docs].reverse();
        const cursor = { createdAt: newest[1].createdAt, id: newest[1].id };
        await add(); // newer than everything
        await index.delete('default', newest[1].id); // the cursor row
        await index.delete('default', newest[3].id);
        expect(ids((await index.list({ filter: { namespace: 'default' }, limit: 10, offset: 0, after: cursor })).rows)).toEqual([newest[2].id, newest[4].id]);
      });
    });

    describe('search', () => {
      it('finds a memory by any of the words (OR) in title, tags or content', async () => {
        const a = await add({ content: 'the kubernetes cluster' });
        const b = await add({ title: 'Redis notes' });
        const c = await add({ tags: ['postgres'] });
        await add({ content: 'unrelated' });
        expect(ids((await search('kubernetes redis postgres')).rows).sort()).toEqual([a.id, b.id, c.id].sort());
        expect((await search('kubernetes redis postgres')).total).toBe(3);
      });

      it('is case-insensitive', async () => {
        const a = await add({ content: 'GraphQL Gateway' });
        expect(ids((await search('graphql GATEWAY')).rows)).toEqual([a.id]);
      });

      it(`stems English words: "deploy" finds "Deployments"${lacks('stemming')}`, async () => {
        const a = await add({ content: 'Deployments happen on Tuesdays' });
        const res = await search('deploy');
        if (capabilities.stemming) expect(ids(res.rows)).toEqual([a.id]);
        else expect(ids((await search('deployments')).rows)).toEqual([a.id]);
      });

      it(`ignores accents: "cafe" finds "Café" and back${lacks('accents')}`, async () => {
        const a = await add({ content: 'Meeting at the Café Müller' });
        if (capabilities.accents) {
          expect(ids((await search('cafe')).rows)).toEqual([a.id]);
          expect(ids((await search('MULLER')).rows)).toEqual([a.id]);
        } else {
          expect(ids((await search('café')).rows)).toEqual([a.id]);
        }
      });

      it(`ranks a memory matching more of the words higher${lacks('ranking')}`, async () => {
        const one = await add({ content: 'apples are here and some other filler text' });
        const two = await add({ content: 'apples and bananas are here with filler text' });
        const three = await add({ content: 'apples bananas cherries are here and filler' });
        const res = await search('apples bananas cherries');
        expect(ids(res.rows).sort()).toEqual([one.id, two.id, three.id].sort());
        if (capabilities.ranking) {
          expect(ids(res.rows)).toEqual([three.id, two.id, one.id]);
          expect(res.rows[0].score!).toBeGreaterThan(res.rows[1].score!);
          expect(res.rows[1].score!).toBeGreaterThan(res.rows[2].score!);
        }
      });

      it(`ranks a rarer word above a common one${lacks('ranking')}`, async () => {
        for (let i = 0; i < 8; i++) await add({ content: `common word number ${i} filler` });
        const rare = await add({ content: 'a rare zeppelin and filler words' });
        const common = await add({ content: 'the common thing and filler words' });
        const res = await search('zeppelin common');
        expect(res.total).toBe(10);
        if (capabilities.ranking) expect(res.rows[0].id).toBe(rare.id);
        expect(ids(res.rows)).toContain(common.id);
      });

      it(`weighs a title or tag hit above the same word in content${lacks('ranking')}`, async () => {
        const inContent = await add({ title: 'Something else', content: 'we talked about the migration plan and other things at length' });
        const inTitle = await add({ title: 'Migration', content: 'we talked about the plan and other things at length today' });
        const inTags = await add({ title: 'Other', tags: ['migration'], content: 'we talked about the plan and other things at length again' });
        const res = await search('migration');
        expect(res.total).toBe(3);
        if (capabilities.ranking) {
          expect(res.rows[2].id).toBe(inContent.id);
          expect(ids(res.rows.slice(0, 2)).sort()).toEqual([inTitle.id, inTags.id].sort());
        }
      });

      it('matches "a phrase" only as a phrase', async () => {
        const phrase = await add({ content: 'we use blue green deployments' });
        await add({ content: 'green and blue are colours' });
        const res = await search('"blue green"');
        expect(ids(res.rows)).toEqual([phrase.id]);
      });

      it('requires the phrase while other words still match and rank', async () => {
        const both = await add({ content: 'blue green rollout with canary' });
        const phraseOnly = await add({ content: 'blue green rollout' });
        await add({ content: 'canary only here' });
        const res = await search('"blue green" canary');
        expect(ids(res.rows).sort()).toEqual([both.id, phraseOnly.id].sort());
        if (capabilities.ranking) expect(res.rows[0].id).toBe(both.id);
      });

      it('excludes memories with a -word or -"phrase"', async () => {
        const keep = await add({ content: 'deploy to production' });
        await add({ content: 'deploy to staging' });
        await add({ content: 'deploy the blue green way' });
        expect(ids((await search('deploy -staging -"blue green"')).rows)).toEqual([keep.id]);
      });

      it('drops English stop words outside phrases ("what does the user prefer" does not match every "the")', async () => {
        const hit = await add({ content: 'the user prefers dark mode' });
        for (let i = 0; i < 5; i++) await add({ content: `the weather is what it does ${i}` });
        const res = await search('what does the user prefer');
        expect(ids(res.rows)).toEqual([hit.id]);
        expect(res.total).toBe(1);
      });

      it('searches the stop words themselves when the query has nothing else', async () => {
        const a = await add({ title: 'The Who', content: 'a band' });
        await add({ content: 'nothing to see' });
        expect(ids((await search('the who')).rows)).toEqual([a.id]);
      });

      it('returns no rows (and does not fail) when nothing searchable is left', async () => {
        await add({ content: 'something' });
        for (const q of ['***', '-something', '"" ()', '-"a b"']) {
          const res = await search(q);
          expect(res).toEqual({ rows: [], total: 0 });
        }
      });

      it('never fails on hostile query strings', async () => {
        const a = await add({ title: 'near title', content: 'select from memories where content AND NOT or near' });
        const hostile = [
          '"',
          '""',
          '"unbalanced',
          '(',
          ')',
          '((a)',
          'NEAR(',
          'NEAR(a b, 2)',
          'a*',
          '*',
          '-',
          '--',
          '- -x',
          'title:near',
          'content:select',
          '{title}: x',
          '^near',
          'a AND',
          'OR',
          'NOT NOT',
          "'; DROP TABLE memories; --",
          '\\',
          '%',
          '_',
          '\u0000',
          'a:b:c',
          '+near',
          'near^2',
          '\u202e\u0301',
          'x'.repeat(1000),
          Array.from({ length: 200 }, (_, i) => `w${i}`).join(' '),
        ];
        for (const q of hostile) {
          const res = await search(q);
          expect(Array.isArray(res.rows)).toBe(true);
        }
        expect(ids((await search('NEAR(select')).rows)).toEqual([a.id]);
        expect(await index.count('default')).toBe(1);
      });

      it('applies filters in search mode too', async () => {
        const x = await add({ content: 'tango', type: 'fact', scope: 'user', agent: 'a1', project: 'p1', tags: ['t1', 't2'] });
        await add({ content: 'tango', type: 'note', scope: 'user', agent: 'a1', project: 'p1', tags: ['t1'] });
        await add({ content: 'tango', type: 'fact', scope: 'global', agent: 'a2', project: 'p2', tags: [] });
        expect(ids((await search('tango', { filter: { namespace: 'default', type: 'fact', scope: 'user', agent: 'a1', project: 'p1', tags: ['t1', 't2'], since: x.createdAt } })).rows)).toEqual([
          x.id,
        ]);
        expect((await search('tango', { filter: { namespace: 'default', type: 'fact' } })).total).toBe(2);
        expect((await search('tango', { filter: { namespace: 'default', tags: ['t1'] } })).total).toBe(2);
      });

      it('pages search results by offset with a stable order and the full total', async () => {
        for (let i = 0; i < 9; i++) await add({ content: `foxtrot ${'filler '.repeat(i)}` });
        const all = await search('foxtrot', { limit: 9 });
        const p1 = await search('foxtrot', { limit: 4, offset: 0 });
        const p2 = await search('foxtrot', { limit: 4, offset: 4 });
        const p3 = await search('foxtrot', { limit: 4, offset: 8 });
        expect([...ids(p1.rows), ...ids(p2.rows), ...ids(p3.rows)]).toEqual(ids(all.rows));
        expect(p3.total).toBe(9);
        expect(p3.rows).toHaveLength(1);
      });

      it(`gives each row a numeric score (higher first) and a snippet around the match${lacks('matchSnippets')}`, async () => {
        const long = `${'lorem ipsum dolor sit amet '.repeat(40)} the hidden quasar is here ${'consectetur adipiscing elit '.repeat(40)}`;
        await add({ content: long });
        const res = await search('quasar');
        expect(typeof res.rows[0].score).toBe('number');
        expect(res.rows[0]).not.toHaveProperty('content');
        expect(res.rows[0].snippet.length).toBeLessThan(long.length);
        if (capabilities.matchSnippets) expect(res.rows[0].snippet.toLowerCase()).toContain('quasar');
      });
    });

    describe('stats and count', () => {
      it('counts by type and scope (every value, zeros included), project and agent ("(none)" when absent)', async () => {
        await add({ type: 'fact', scope: 'project', project: 'p1', agent: 'a' });
        await add({ type: 'fact', scope: 'global', project: 'p1', agent: null });
        await add({ type: 'task', scope: 'global', project: null, agent: 'a' });
        const s = await index.stats('default');
        expect(s.total).toBe(3);
        expect(Object.keys(s.byType).sort()).toEqual([...MEMORY_TYPES].sort());
        expect(Object.keys(s.byScope).sort()).toEqual([...MEMORY_SCOPES].sort());
        expect(s.byType).toMatchObject({ fact: 2, task: 1, note: 0, code: 0 });
        expect(s.byScope).toEqual({ global: 2, project: 1, agent: 0, user: 0 });
        expect(s.byProject).toEqual({ p1: 2, '(none)': 1 });
        expect(s.byAgent).toEqual({ a: 2, '(none)': 1 });
        expect(await index.count('default')).toBe(3);
      });

      it('stays right after replace, delete, deleteMany and clear', async () => {
        const a = await add({ type: 'fact', scope: 'user', project: 'p1', agent: 'a' });
        const b = await add({ type: 'fact', project: 'p1' });
        const c = await add({ type: 'code' });
        await index.replace({ ...a, type: 'task', scope: 'global', project: null, agent: 'z' });
        await index.delete('default', b.id);
        let s = await index.stats('default');
        expect(s.total).toBe(2);
        expect(s.byType).toMatchObject({ fact: 0, task: 1, code: 1 });
        expect(s.byScope).toMatchObject({ global: 2, user: 0 });
        expect(s.byProject).toEqual({ '(none)': 2 });
        expect(s.byAgent).toEqual({ z: 1, '(none)': 1 });
        await index.deleteMany('default', [a.id, c.id]);
        s = await index.stats('default');
        expect(s.total).toBe(0);
        expect(s.byProject).toEqual({});
        await add({ project: 'again' });
        await index.clear();
        await add({ project: 'fresh' });
        expect((await index.stats('default')).byProject).toEqual({ fresh: 1 });
      });

      it('counts projects and agents named like Object.prototype members, and the counts add up to total', async () => {
        const names = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];
        for (const name of names) await add({ project: name, agent: name });
        await add({ project: '__proto__', agent: null });
        const s = await index.stats('default');
        expect(s.total).toBe(6);
        const expected: Array<[string, number]> = [
          ['constructor', 1],
          ['__proto__', 2],
          ['toString', 1],
          ['hasOwnProperty', 1],
          ['valueOf', 1],
        ];
        expect(Object.entries(s.byProject).sort()).toEqual(expected.sort());
        // JSON is what a client sees: every key an own, enumerable number.
        expect(JSON.stringify(s.byProject)).toContain('"__proto__":2');
        expect(Object.entries(s.byAgent).sort()).toEqual([...names.map((n) => [n, 1]), ['(none)', 1]].sort());
        const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
        expect(sum(s.byProject)).toBe(s.total);
        expect(sum(s.byAgent)).toBe(s.total);
      });

      it('reports zeros on an empty index', async () => {
        const s = await index.stats('default');
        expect(s.total).toBe(0);
        expect(Object.values(s.byType).every((n) => n === 0)).toBe(true);
        expect(s.byProject).toEqual({});
      });
    });
  });
}
