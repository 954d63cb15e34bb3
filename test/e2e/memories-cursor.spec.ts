import { createTestApp, TestApp } from '../support/app';
import { testBackends } from '../support/backends';
import { Api, createMemory, fullAccessApi } from './memories.helpers';

describe.each(testBackends())('cursor pagination under concurrent writes on $name', (backend) => {
  let t: TestApp;
  let api: Api;

  beforeAll(async () => {
    t = await createTestApp(await backend.env());
    api = await fullAccessApi(t);
  });
  afterAll(async () => {
    await t.close();
  });

  it('a walk over 500 memories while others are inserted and deleted returns every surviving row exactly once', async () => {
    const initial: string[] = [];
    for (let i = 0; i < 500; i += 25) {
      const batch = await Promise.all(Array.from({ length: 25 }, (_, j) => createMemory(api, { content: `walk ${i + j}`, tags: (i + j) % 3 ? [] : ['third'] })));
      initial.push(...batch.map((m) => m.id));
    }
    const deleted = new Set<string>();
    const inserted = new Set<string>();
    const seen: string[] = [];
    const keys: string[] = [];
    let rng = 7;
    const random = (n: number) => (rng = (rng * 1103515245 + 12345) & 0x7fffffff) % n;

    let page = (await api.get('/api/memories?limit=37').expect(200)).body;
    for (;;) {
      seen.push(...page.rows.map((r: { id: string }) => r.id));
      keys.push(...page.rows.map((r: { id: string; created_at: string }) => `${r.created_at} ${r.id}`));
      // Between pages: insert three new memories and delete three random initial ones (seen or not).
      for (let k = 0; k < 3; k++) inserted.add((await createMemory(api, { content: 'inserted during the walk' })).id);
      const victims = Array.from({ length: 3 }, () => initial[random(initial.length)]).filter((id) => !deleted.has(id));
      if (victims.length > 0) {
        await api.post('/api/memories/bulk-delete', { ids: victims }).expect(200);
        victims.forEach((id) => deleted.add(id));
      }
      if (!page.next_cursor) break;
      page = (await api.get(`/api/memories?limit=37&after=${encodeURIComponent(page.next_cursor)}`).expect(200)).body;
      expect(page.page).toBeNull();
      expect(page.has_prev).toBe(true);
    }

    expect(new Set(seen).size).toBe(seen.length); // no row twice
    const seenSet = new Set(seen);
    for (const id of initial) {
      if (!deleted.has(id)) expect(seenSet.has(id)).toBe(true); // every survivor once
    }
    for (const id of seen) expect(initial.includes(id)).toBe(true); // newer rows are before the first cursor
    expect(deleted.size).toBeGreaterThan(20);
    expect(inserted.size).toBeGreaterThan(20);
    // Newest first throughout: (created_at, id) descending.
    expect(keys).toEqual([...keys].sort().reverse());
    // ~560 creates and ~60 deletes: on FerretDB each write is now a write intent, the object, the
    // memory and its version claim (issue 9), ~30 s on a loaded 2-core machine.
  }, 120_000);
});
