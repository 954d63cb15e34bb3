import request from 'supertest';
import { createTestApp, TestApp } from '../support/app';

describe('memories in the OpenAPI description', () => {
  let t: TestApp;
  let doc: request.Response['body']; // the JSON document, as supertest types a body
  beforeAll(async () => {
    t = await createTestApp();
    doc = (await request(t.http).get('/openapi.json').expect(200)).body;
  });
  afterAll(async () => {
    await t.close();
  });

  it('declares every memory route with bearer security', () => {
    const ops: Array<[string, string]> = [
      ['/api/memories', 'get'],
      ['/api/memories', 'post'],
      ['/api/memories/bulk-delete', 'post'],
      ['/api/memories/{memory_id}', 'get'],
      ['/api/memories/{memory_id}', 'patch'],
      ['/api/memories/{memory_id}', 'delete'],
      ['/api/memories/{memory_id}/download', 'get'],
      ['/api/stats', 'get'],
    ];
    for (const [p, m] of ops) {
      const op = doc.paths[p]?.[m];
      expect(op).toBeDefined();
      expect(op.security).toEqual(expect.arrayContaining([{ bearer: [] }]));
    }
    expect(doc.paths['/api/memories'].post.responses['201']).toBeDefined();
  });

  it('documents the list query parameters and the request/response schemas with examples', () => {
    const params = doc.paths['/api/memories'].get.parameters.map((p: { name: string }) => p.name).sort();
    expect(params).toEqual(
      ['after', 'agent', 'as_of', 'days', 'explain', 'include_superseded', 'limit', 'min_score', 'mode', 'page', 'project', 'q', 'query_date', 'scope', 'since', 'skip', 'tag', 'type'].sort(),
    );
    expect(doc.paths['/api/memories'].get.parameters.find((p: { name: string }) => p.name === 'min_score').schema).toMatchObject({ type: 'number', minimum: 0, maximum: 1 });
    expect(Object.keys(doc.components.schemas.SearchExplainDto.properties).sort()).toEqual(
      ['cosine', 'floor', 'keyword', 'keyword_score', 'matched_phrases', 'matched_words', 'neighbour_boost', 'rescore', 'score', 'semantic', 'signals'].sort(),
    );
    expect(doc.paths['/api/memories'].get.parameters.find((p: { name: string }) => p.name === 'mode').schema.enum).toEqual(['hybrid', 'keyword', 'semantic']);
    expect(doc.paths['/api/memories'].post.responses['201'].content['application/json'].schema.$ref).toBe('#/components/schemas/CreatedMemoryResponseDto');
    const schemas = doc.components.schemas;
    expect(schemas.CreateMemoryDto.required).toEqual(['content']);
    expect(schemas.CreateMemoryDto.properties.type.enum).toContain('preference');
    expect(schemas.MemoryDto.properties.id.example).toMatch(/^[0-9a-f]{24}$/);
    expect(Object.keys(schemas.MemoryListResponseDto.properties)).toEqual(
      expect.arrayContaining(['rows', 'count', 'total', 'page', 'page_size', 'total_pages', 'has_prev', 'has_next', 'next_cursor', 'mode', 'search_mode']),
    );
    expect(Object.keys(doc.components.schemas.MemoryRowDto.properties)).toEqual(expect.arrayContaining(['score', 'matched']));
    expect(Object.keys(doc.components.schemas.SimilarMemoryDto.properties).sort()).toEqual(['id', 'likely_update', 'score', 'title']);
    expect(schemas.StatsDto.properties.by_agent).toBeDefined();
  });

  it('keeps the signed file route out of the description', () => {
    expect(Object.keys(doc.paths).some((p) => p.startsWith('/api/files'))).toBe(false);
  });
});
