import { listPageJson } from './memories.controller';
import type { ListPage } from './memories.service';

/** A page whose rows were serialised on a search thread is sent as the same bytes as the page object would be. */
describe('listPageJson', () => {
  const rows = [
    { id: 'a'.repeat(24), title: 'Deploy "notes"', type: 'note', tags: ['ops', 'ünï'], scope: 'project', agent: null, project: 'atlas', snippet: 'line\nbreak', created_at: '2026-01-01T00:00:00.000Z', updated_at: '2026-01-02T00:00:00.000Z', version: 3, score: 0.75, matched: ['keyword', 'semantic'] },
    { id: 'b'.repeat(24), title: '', type: 'fact', tags: [], scope: 'global', agent: 'bot', project: null, snippet: '', created_at: '2026-01-03T00:00:00.000Z', updated_at: '2026-01-03T00:00:00.000Z', version: 1 },
  ] as ListPage['rows'];
  const search: ListPage = { ok: true, rows, count: 2, total: 9, page: 2, page_size: 2, total_pages: 5, has_prev: true, has_next: true, next_cursor: null, mode: 'search', search_mode: 'hybrid' };
  const list: ListPage = { ok: true, rows: [], count: 0, total: 0, page: 1, page_size: 20, total_pages: 0, has_prev: false, has_next: false, next_cursor: 'abc', mode: 'list' };

  it.each([
    ['a search page', search],
    ['an empty list page', list],
  ])('writes %s exactly as JSON.stringify writes the page object', (_name, page) => {
    expect(listPageJson({ ...page, rows: [], rowsJson: JSON.stringify(page.rows) })).toBe(JSON.stringify(page));
  });
});
