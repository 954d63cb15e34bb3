/**
 * POST /mcp driven by the official MCP SDK client (v2) over a real socket: the app listens on a
 * random port on 127.0.0.1 and the client speaks streamable HTTP to it, once with the 2025
 * initialize handshake and once with 2026-07-28 (server/discover), on every backend pair.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Logger } from '@nestjs/common';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { adminAgent, createTestApp, createToken, TestApp } from '../support/app';
import { testBackends } from '../support/backends';
import { embeddingsSettled } from './memories.helpers';

jest.setTimeout(60_000);

type Era = 'legacy' | 'auto';
const ERAS: Array<{ label: string; mode: Era; version: string }> = [
  { label: '2025 initialize handshake', mode: 'legacy', version: '2025-11-25' },
  { label: '2026-07-28 (server/discover)', mode: 'auto', version: '2026-07-28' },
];

const READ_TOOLS = ['get_memory', 'list_recent', 'memory_stats', 'recall_context', 'search_memories'];
const ALL_TOOLS = [...READ_TOOLS, 'create_memory', 'delete_memory', 'update_memory'].sort();

interface Structured {
  [k: string]: unknown;
}

describe.each(testBackends())('MCP endpoint on $name', (backend) => {
  let t: TestApp;
  let base: string;
  const tokens: Record<'full' | 'read' | 'readWrite', string> = { full: '', read: '', readWrite: '' };
  const open: Client[] = [];

  async function connect(token: string, mode: Era, headers: Record<string, string> = {}): Promise<Client> {
    const client = new Client({ name: 'memstore-e2e', version: '1.0.0' }, { versionNegotiation: { mode } });
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}`, ...headers } } });
    await client.connect(transport);
    open.push(client);
    return client;
  }

  /** A raw JSON-RPC POST (for what the SDK client would never send). */
  function post(body: unknown, token = tokens.full) {
    return request(t.http)
      .post('/mcp')
      .set('Authorization', `Bearer ${token}`)
      .set('Accept', 'application/json, text/event-stream')
      .set('Content-Type', 'application/json')
      .send(typeof body === 'string' ? body : JSON.stringify(body));
  }

  beforeAll(async () => {
    t = await createTestApp(await backend.env());
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.http.address() as AddressInfo).port}`;
    tokens.full = (await createToken(t, { name: 'mcp full', preset: 'full' })).plaintext;
    tokens.read = (await createToken(t, { name: 'mcp read', preset: 'read-only' })).plaintext;
    tokens.readWrite = (await createToken(t, { name: 'mcp rw', preset: 'read-write' })).plaintext;
  });

  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close().catch(() => undefined)));
  });

  afterAll(async () => {
    await t?.close();
  });

  describe.each(ERAS)('with the $label', ({ mode, version }) => {
    it('negotiates the protocol, names the server and gives instructions', async () => {
      const client = await connect(tokens.full, mode);
      expect(client.getNegotiatedProtocolVersion()).toBe(version);
      expect(client.getServerVersion()?.name).toBe('memory-store');
      const instructions = client.getInstructions() ?? '';
      for (const tool of ['recall_context', 'search_memories', 'create_memory', 'update_memory', 'delete_memory']) expect(instructions).toContain(tool);
    });

    it('lists only the tools the token scopes allow, each with title, schemas and annotations', async () => {
      const full = await (await connect(tokens.full, mode)).listTools();
      expect(full.tools.map((x) => x.name).sort()).toEqual(ALL_TOOLS);
      for (const tool of full.tools) {
        expect(tool.title).toBeTruthy();
        expect(tool.description!.length).toBeGreaterThan(30);
        expect(tool.inputSchema.type).toBe('object');
        expect(tool.outputSchema?.type).toBe('object');
        expect(typeof tool.annotations?.readOnlyHint).toBe('boolean');
        expect(typeof tool.annotations?.destructiveHint).toBe('boolean');
        expect(typeof tool.annotations?.idempotentHint).toBe('boolean');
      }
      const byName = Object.fromEntries(full.tools.map((x) => [x.name, x]));
      expect(byName.delete_memory.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
      expect(byName.search_memories.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
      const searchProps = byName.search_memories.inputSchema.properties as Record<string, { description?: string; enum?: string[] }>;
      expect(Object.keys(searchProps).sort()).toEqual([
        'agent',
        'as_of',
        'cursor',
        'days',
        'explain',
        'include_superseded',
        'limit',
        'min_score',
        'mode',
        'namespace',
        'page',
        'project',
        'q',
        'query_date',
        'scope',
        'since',
        'tags',
        'type',
      ]);
      expect(searchProps.query_date.description).toMatch(/last week/);
      expect(Object.keys(byName.recall_context.inputSchema.properties as object)).toContain('query_date');
      expect(searchProps.type.enum).toContain('decision');
      expect(searchProps.q.description).toMatch(/phrase/);
      expect(byName.create_memory.inputSchema.required).toEqual(['content']);

      const read = await (await connect(tokens.read, mode)).listTools();
      expect(read.tools.map((x) => x.name).sort()).toEqual(READ_TOOLS);
      const rw = await (await connect(tokens.readWrite, mode)).listTools();
      expect(rw.tools.map((x) => x.name).sort()).toEqual([...READ_TOOLS, 'create_memory', 'update_memory'].sort());
    });

    it('create → search → get → update → recall_context → delete, with structuredContent and the same JSON as text', async () => {
      const client = await connect(tokens.full, mode);
      const tag = `mcp-${mode}`;
      const created = await client.callTool({
        name: 'create_memory',
        arguments: { title: 'Deploy windows', content: 'We deploy the payments service on Tuesdays through the blue-green pipeline.', type: 'decision', tags: ['ops', tag], project: 'payments' },
      });
      expect(created.isError).toBeFalsy();
      const memory = (created.structuredContent as Structured).memory as Structured;
      expect(memory).toMatchObject({ title: 'Deploy windows', type: 'decision', tags: ['ops', tag], project: 'payments', scope: 'global' });
      expect(JSON.parse((created.content as Array<{ text: string }>)[0].text)).toEqual(created.structuredContent);
      const id = memory.id as string;
      // Visible through the REST API too: the same store.
      const rest = await request(t.http).get(`/api/memories/${id}`).set('Authorization', `Bearer ${tokens.read}`).expect(200);
      expect(rest.body.memory.content).toBe(memory.content);

      // An unrelated memory, to be left out of searches.
      await client.callTool({ name: 'create_memory', arguments: { title: 'Lunch', content: 'The team prefers ramen on Fridays.', type: 'preference', tags: [tag] } });
      await client.callTool({ name: 'create_memory', arguments: { title: 'Standup', content: 'Standup is at 9:30 in the small room.', type: 'fact', tags: [tag] } });

      const found = await client.callTool({ name: 'search_memories', arguments: { q: 'deploy pipeline last week', tags: [tag], limit: 5, query_date: new Date().toISOString() } });
      const page = found.structuredContent as Structured;
      expect(page.mode).toBe('search');
      expect((page.rows as Structured[])[0].id).toBeDefined();
      expect((page.rows as Structured[]).map((r) => r.id)).toContain(id);
      expect(JSON.parse((found.content as Array<{ text: string }>)[0].text)).toEqual(page);

      const filtered = await client.callTool({ name: 'search_memories', arguments: { q: 'deploy', type: 'decision', project: 'payments', tags: [tag] } });
      expect((filtered.structuredContent as Structured).rows).toEqual([expect.objectContaining({ id })]);

      const recent = await client.callTool({ name: 'list_recent', arguments: { tags: [tag], limit: 2 } });
      const recentPage = recent.structuredContent as Structured;
      expect(recentPage).toMatchObject({ mode: 'list', count: 2, total: 3, has_next: true });
      expect((recentPage.rows as Structured[]).map((r) => r.title)).toEqual(['Standup', 'Lunch']);
      const older = await client.callTool({ name: 'list_recent', arguments: { tags: [tag], limit: 2, cursor: recentPage.next_cursor } });
      expect((older.structuredContent as Structured).rows).toEqual([expect.objectContaining({ id })]);

      const got = await client.callTool({ name: 'get_memory', arguments: { id } });
      expect(((got.structuredContent as Structured).memory as Structured).content).toBe(memory.content);

      const updated = await client.callTool({
        name: 'update_memory',
        arguments: { id, content: 'We deploy the payments service on Wednesdays through the blue-green pipeline.', tags: ['ops', tag, 'changed'] },
      });
      expect(updated.isError).toBeFalsy();
      expect((updated.structuredContent as Structured).memory).toMatchObject({ id, title: 'Deploy windows', tags: ['ops', tag, 'changed'] });

      // A near-duplicate of the updated memory: recall_context must not spend the budget on both.
      const twin = await client.callTool({
        name: 'create_memory',
        arguments: { title: 'Deploy windows', content: 'We deploy the payments service on Wednesdays, through the blue-green pipeline!', tags: [tag] },
      });
      const twinId = ((twin.structuredContent as Structured).memory as Structured).id;
      const recalled = await client.callTool({ name: 'recall_context', arguments: { task: 'When do we deploy the "payments" service?', tags: [tag] } });
      expect(recalled.isError).toBeFalsy();
      const ctx = recalled.structuredContent as { memories: Structured[]; tokens_used: number; token_budget: number; note: string; matched: number };
      expect(ctx.token_budget).toBe(2000);
      expect(ctx.tokens_used).toBeLessThanOrEqual(2000);
      expect(ctx.matched).toBe(2);
      expect(ctx.memories).toHaveLength(1);
      expect([id, twinId]).toContain(ctx.memories[0].id);
      expect(ctx.memories[0]).toMatchObject({ content: expect.stringContaining('Wednesdays'), truncated: false, title: 'Deploy windows' });
      expect(ctx.note).toMatch(/1 near-duplicate/);
      expect(JSON.parse((recalled.content as Array<{ text: string }>)[0].text)).toEqual(ctx);

      // supersedes (decision 0130): the twin replaces the first; searches and recall answer only the twin unless asked.
      const linked = await client.callTool({ name: 'update_memory', arguments: { id: twinId, supersedes: [id] } });
      expect(linked.isError).toBeFalsy();
      const current = await client.callTool({ name: 'recall_context', arguments: { task: 'When do we deploy the "payments" service?', tags: [tag] } });
      expect(current.structuredContent).toMatchObject({ matched: 1, memories: [expect.objectContaining({ id: twinId })] });
      const hidden = await client.callTool({ name: 'search_memories', arguments: { q: 'deploy Wednesdays', tags: [tag] } });
      expect(((hidden.structuredContent as Structured).rows as Structured[]).map((r) => r.id)).not.toContain(id);
      const shown = await client.callTool({ name: 'search_memories', arguments: { q: 'deploy Wednesdays', tags: [tag], include_superseded: true } });
      expect((shown.structuredContent as Structured).rows).toContainEqual(expect.objectContaining({ id, superseded_by: twinId, valid_to: expect.any(String) }));
      const bad = await client.callTool({ name: 'create_memory', arguments: { content: 'replaces nothing', supersedes: ['0123456789abcdef01234567'] } });
      expect((bad.content as Array<{ text: string }>)[0].text).toBe('Invalid arguments for create_memory: supersedes.0: Memory 0123456789abcdef01234567 does not exist.');

      const long = await client.callTool({
        name: 'create_memory',
        arguments: { title: 'Deploy runbook', content: `Deploy runbook for payments. ${'Check the pipeline dashboards and the error budget before each step. '.repeat(60)}`, tags: [tag] },
      });
      const longId = ((long.structuredContent as Structured).memory as Structured).id;
      const tiny = await client.callTool({ name: 'recall_context', arguments: { task: 'deploy runbook dashboards', tags: [tag], token_budget: 300 } });
      const tinyCtx = tiny.structuredContent as { memories: Structured[]; tokens_used: number };
      expect(tinyCtx.tokens_used).toBeLessThanOrEqual(300);
      expect(JSON.stringify(tinyCtx).length / 4).toBeLessThan(300 + 60);
      expect(tinyCtx.memories[0]).toMatchObject({ id: longId, truncated: true, content: expect.stringMatching(/^Deploy runbook for payments\. [\s\S]* …$/) });
      await client.callTool({ name: 'delete_memory', arguments: { id: longId } });
      await client.callTool({ name: 'delete_memory', arguments: { id: twinId } });

      const deleted = await client.callTool({ name: 'delete_memory', arguments: { id } });
      expect(deleted.structuredContent).toEqual({ deleted: true, id });
      await request(t.http).get(`/api/memories/${id}`).set('Authorization', `Bearer ${tokens.read}`).expect(404);

      const again = await client.callTool({ name: 'get_memory', arguments: { id } });
      expect(again.isError).toBe(true);
      expect((again.content as Array<{ text: string }>)[0].text).toMatch(/No memory has the id .*search_memories/);

      const stats = await client.callTool({ name: 'memory_stats', arguments: {} });
      expect(((stats.structuredContent as Structured).stats as Structured).total).toBeGreaterThanOrEqual(2);
    });

    it('reads a memory and the guide as resources, and gets both prompts', async () => {
      const client = await connect(tokens.full, mode);
      const created = await client.callTool({ name: 'create_memory', arguments: { title: 'Resource me', content: 'Body of the resource test.', tags: ['res'] } });
      const id = ((created.structuredContent as Structured).memory as Structured).id as string;

      const templates = await client.listResourceTemplates();
      expect(templates.resourceTemplates.map((x) => x.uriTemplate)).toContain('memory://{id}');
      const listed = await client.listResources();
      expect(listed.resources.map((x) => x.uri)).toEqual(expect.arrayContaining([`memory://${id}`, 'memory-store://guide']));

      const res = await client.readResource({ uri: `memory://${id}` });
      const text = (res.contents[0] as { text: string }).text;
      expect(res.contents[0].mimeType).toBe('text/markdown');
      expect(text).toMatch(new RegExp(`^---\\n[\\s\\S]*id: ${id}[\\s\\S]*title: Resource me[\\s\\S]*\\n---\\nBody of the resource test\\.$`));

      const guide = await client.readResource({ uri: 'memory-store://guide' });
      expect((guide.contents[0] as { text: string }).text).toContain(`${base}/mcp`);

      await expect(client.readResource({ uri: 'memory://ffffffffffffffffffffffff' })).rejects.toThrow(/No memory has the id/);

      const prompts = await client.listPrompts();
      expect(prompts.prompts.map((p) => p.name).sort()).toEqual(['recall', 'save_decisions']);
      const recall = await client.getPrompt({ name: 'recall', arguments: { topic: 'deploy windows', project: 'payments' } });
      expect((recall.messages[0].content as { text: string }).text).toMatch(/recall_context with task "deploy windows" and project "payments"/);
      const save = await client.getPrompt({ name: 'save_decisions', arguments: { tags: 'sprint-7, infra' } });
      expect((save.messages[0].content as { text: string }).text).toMatch(/search_memories first[\s\S]*\["sprint-7","infra"\]/);
    });

    it('answers model-fixable mistakes as tool errors with a plain sentence', async () => {
      const client = await connect(tokens.read, mode);
      const denied = await client.callTool({ name: 'create_memory', arguments: { content: 'not allowed' } });
      expect(denied.isError).toBe(true);
      expect((denied.content as Array<{ text: string }>)[0].text).toBe(
        'This API token lacks the memory:write scope, so create_memory is not available to it. Ask the administrator for a token with memory:write.',
      );
      const badType = await client.callTool({ name: 'search_memories', arguments: { q: 'x', limit: 'ten' } });
      expect(badType.isError).toBe(true);
      expect((badType.content as Array<{ text: string }>)[0].text).toMatch(/limit/);
      const badEnum = await client.callTool({ name: 'search_memories', arguments: { type: 'diary' } });
      expect(badEnum.isError).toBe(true);
      expect((badEnum.content as Array<{ text: string }>)[0].text).toMatch(/type/);
      const badDate = await client.callTool({ name: 'search_memories', arguments: { q: 'x', query_date: 'last week' } });
      expect((badDate.content as Array<{ text: string }>)[0].text).toMatch(/^Invalid arguments for search_memories: query_date: Input should be a valid datetime/);
      const badRecallDate = await client.callTool({ name: 'recall_context', arguments: { task: 'x', query_date: '2023-02-30' } });
      expect((badRecallDate.content as Array<{ text: string }>)[0].text).toMatch(/query_date/);
      const tooMany = await client.callTool({ name: 'search_memories', arguments: { q: 'x', limit: 500 } });
      expect((tooMany.content as Array<{ text: string }>)[0].text).toBe('Invalid arguments for search_memories: limit: Input should be less than or equal to 200.');
      const badCursor = await client.callTool({ name: 'list_recent', arguments: { cursor: 'nonsense' } });
      expect((badCursor.content as Array<{ text: string }>)[0].text).toMatch(/^Invalid arguments for list_recent: cursor: Invalid cursor/);
      const unknown = await client.callTool({ name: 'get_memory', arguments: { id: 'not-an-id' } });
      expect(unknown.isError).toBe(true);

      const writer = await connect(tokens.full, mode);
      const empty = await writer.callTool({ name: 'create_memory', arguments: { content: '   ' } });
      expect((empty.content as Array<{ text: string }>)[0].text).toBe('Invalid arguments for create_memory: content: Content must not be empty or only whitespace.');
      const longTitle = await writer.callTool({ name: 'create_memory', arguments: { content: 'x', title: 't'.repeat(301) } });
      expect((longTitle.content as Array<{ text: string }>)[0].text).toBe('Invalid arguments for create_memory: title: String should have at most 300 characters.');
      // Huge arguments: over the content limit (but under the body limit), and too many elements.
      const huge = await writer.callTool({ name: 'create_memory', arguments: { content: 'y'.repeat(t.cfg.limits.contentMaxBytes + 1) } });
      expect((huge.content as Array<{ text: string }>)[0].text).toBe(`Invalid arguments for create_memory: content: Content should have at most ${t.cfg.limits.contentMaxBytes} bytes (UTF-8).`);
      const many = await writer.callTool({ name: 'create_memory', arguments: { content: 'z', tags: Array.from({ length: 6000 }, (_, i) => `t${i}`) } });
      expect(many.isError).toBe(true);
      expect((many.content as Array<{ text: string }>)[0].text).toMatch(/more than the maximum of 5000 elements/);
    });

    it('refuses a foreign browser Origin with 403', async () => {
      await expect(connect(tokens.full, mode, { Origin: 'http://evil.example' })).rejects.toThrow(/browser origin|\(HTTP 403\)/);
      const local = await connect(tokens.full, mode, { Origin: base });
      expect((await local.listTools()).tools.length).toBe(8);
    });

    it('refuses a missing, wrong, expired or revoked token with 401 and a Bearer challenge', async () => {
      const noToken = new Client({ name: 'memstore-e2e', version: '1.0.0' }, { versionNegotiation: { mode } });
      await expect(noToken.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)))).rejects.toThrow(/Authentication required|\(HTTP 401\)/);
      await expect(connect('mem_tok_0123456789abcdef_wrong', mode)).rejects.toThrow(/Invalid API token|\(HTTP 401\)/);

      // Signed in first: a sign-in (bcrypt) on a busy machine must not eat the token's short life.
      const admin = await adminAgent(t);
      const expiresAt = Math.floor(Date.now() / 1000) + 3;
      const short = (await admin.post('/api/tokens').send({ name: 'short-lived', preset: 'full', expires_at: expiresAt }).expect(201)).body.plaintext as string;
      const c = await connect(short, mode);
      await new Promise((r) => setTimeout(r, expiresAt * 1000 - Date.now() + 50));
      await expect(c.listTools()).rejects.toThrow(/API token has expired/);

      const revoked = await createToken(t, { name: 'to revoke', preset: 'full' });
      const c2 = await connect(revoked.plaintext, mode);
      await admin.post(`/api/tokens/${revoked.id}/revoke`).expect(200);
      await expect(c2.callTool({ name: 'memory_stats', arguments: {} })).rejects.toThrow(/API token has been revoked/);
    });
  });

  it('attributes MCP writes to the token (history and front matter) and audits an MCP delete as REST does', async () => {
    const writer = await createToken(t, { name: 'mcp author', preset: 'full' });
    const client = await connect(writer.plaintext, 'auto');
    const created = await client.callTool({ name: 'create_memory', arguments: { title: 'Authored', content: 'Written over MCP.' } });
    const id = ((created.structuredContent as Structured).memory as Structured).id as string;
    await client.callTool({ name: 'update_memory', arguments: { id, content: 'Changed over MCP.' } });
    const author = { kind: 'token', id: writer.id, name: 'mcp author' };
    const history = await request(t.http).get(`/api/memories/${id}/versions`).set('Authorization', `Bearer ${tokens.read}`).expect(200);
    expect(history.body.rows.map((r: Structured) => [r.version, r.author])).toEqual([
      [2, author],
      [1, author],
    ]);
    const file = await request(t.http)
      .get(`/api/memories/${id}/download`)
      .set('Authorization', `Bearer ${tokens.read}`)
      .buffer(true)
      .parse((res, done) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString('utf8')));
        res.on('end', () => done(null, text));
      });
    expect(file.body).toMatch(new RegExp(`\nauthor:\n  kind: token\n  id: ${writer.id}\n  name: mcp author\n`));

    // The audit entries of an MCP delete (found, and not found) look like those of DELETE /api/memories/{id}.
    const admin = await adminAgent(t);
    const entries = async (target: string) => ((await admin.get('/api/audit?action=memory.delete&limit=200').expect(200)).body.entries as Structured[]).filter((e) => e.target === target);
    await client.callTool({ name: 'delete_memory', arguments: { id } });
    await client.callTool({ name: 'delete_memory', arguments: { id } });
    const restId = ((await client.callTool({ name: 'create_memory', arguments: { content: 'Deleted over REST.' } })).structuredContent as { memory: Structured }).memory.id as string;
    await request(t.http).delete(`/api/memories/${restId}`).set('Authorization', `Bearer ${writer.plaintext}`).expect(200);
    await request(t.http).delete(`/api/memories/${restId}`).set('Authorization', `Bearer ${writer.plaintext}`).expect(404);
    const [mcpMissing, mcpDone] = await entries(id);
    const [restMissing, restDone] = await entries(restId);
    const actor = { kind: 'token', id: writer.id, name: 'mcp author' };
    for (const [done, missing] of [
      [mcpDone, mcpMissing],
      [restDone, restMissing],
    ]) {
      expect(done).toMatchObject({ outcome: 'success', actor, address: expect.any(String), request_id: expect.any(String) });
      expect(missing).toMatchObject({ outcome: 'failure', actor, detail: expect.objectContaining({ status: 404, error: 'Memory not found' }) });
    }
  });

  describe('HTTP edge', () => {
    const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };

    it('401 carries WWW-Authenticate: Bearer and no OAuth metadata; there is no OAuth discovery document', async () => {
      const res = await request(t.http).post('/mcp').set('Content-Type', 'application/json').send(initialize).expect(401);
      expect(res.headers['www-authenticate']).toBe('Bearer realm="Memory Store"');
      expect(res.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { message: expect.stringMatching(/Bearer/) } });
      const bad = await post(initialize, 'mem_tok_0123456789abcdef_nope').expect(401);
      expect(bad.headers['www-authenticate']).toBe('Bearer realm="Memory Store", error="invalid_token"');
      expect(JSON.stringify(bad.headers)).not.toMatch(/resource_metadata|oauth/i);
      for (const p of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-authorization-server']) {
        await request(t.http).get(p).expect(404);
      }
    });

    it('an admin session does not open /mcp', async () => {
      const admin = await adminAgent(t);
      const res = await admin.post('/mcp').set('Accept', 'application/json, text/event-stream').send(initialize).expect(401);
      expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    });

    it('a browser Origin other than the service itself gets 403; the service origin and non-browser clients pass', async () => {
      const evil = await post(initialize).set('Origin', 'http://evil.example').expect(403);
      expect(evil.body.error.message).toMatch(/origin/i);
      // Without a token too: the Origin check comes first.
      await request(t.http).post('/mcp').set('Origin', 'http://evil.example').send(initialize).expect(403);
      // DNS rebinding: a foreign name that resolves to us sends its own name as Host and Origin.
      await post(initialize).set('Host', 'rebind.example:80').set('Origin', 'http://rebind.example').expect(403);
      await expect(connect(tokens.full, 'legacy', { Origin: 'http://evil.example' })).rejects.toThrow(/browser origin/);
      const port = (t.http.address() as AddressInfo).port;
      await post(initialize).set('Origin', `http://127.0.0.1:${port}`).expect(200);
      await post(initialize).set('Origin', `http://localhost:${port}`).expect(200);
      await post(initialize).expect(200);
    });

    it('GET and DELETE answer 405 (stateless: no SSE stream, no session)', async () => {
      for (const method of ['get', 'delete', 'put'] as const) {
        const res = await request(t.http)[method]('/mcp').set('Authorization', `Bearer ${tokens.full}`).expect(405);
        expect(res.headers.allow).toBe('POST');
        expect(res.body.error.message).toMatch(/POST/);
      }
    });

    it('a batch, an unknown method, bad JSON and a body over the limit get JSON-RPC errors, never a 500', async () => {
      const batch = await post([initialize, { jsonrpc: '2.0', id: 2, method: 'tools/list' }]).expect(400);
      expect(batch.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringMatching(/batch/) } });

      const unknown = await post({ jsonrpc: '2.0', id: 7, method: 'memories/steal', params: {} });
      expect(unknown.status).toBeLessThan(500);
      expect(unknown.text).toMatch(/-32601/);

      const parse = await post('{"jsonrpc": "2.0", "id": 1, "method": ').expect(400);
      expect(parse.body.error.code).toBe(-32700);

      const huge = { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'create_memory', arguments: { content: 'x'.repeat(t.cfg.bodyLimitBytes + 10) } } };
      const tooBig = await post(huge).expect(413);
      expect(tooBig.body.error).toEqual({ code: -32600, message: expect.stringMatching(/too large/) });
    });

    it('moves the token last_used_at, as /api does', async () => {
      const fresh = await createToken(t, { name: 'usage', preset: 'read-only' });
      await post(initialize, fresh.plaintext).expect(200);
      const list = await (await adminAgent(t)).get('/api/tokens').expect(200);
      const record = (list.body.tokens as Array<{ id: string; last_used_at: number | null }>).find((x) => x.id === fresh.id);
      expect(record?.last_used_at).not.toBeNull();
    });

    it('logs each request with the method, the tool and the token id, never the secret or the arguments', async () => {
      const logged: string[] = [];
      const spy = jest.spyOn(Logger.prototype, 'log').mockImplementation(function (this: Logger, message: unknown) {
        logged.push(String(message));
      });
      try {
        const secretWord = 'confidential-argument-value';
        const res = await post({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'search_memories', arguments: { q: secretWord } } });
        expect(res.status).toBeLessThan(500);
        const tokenId = tokens.full.slice('mem_tok_'.length, 'mem_tok_'.length + 16);
        const line = logged.find((l) => l.startsWith('POST /mcp tools/call search_memories'));
        expect(line).toMatch(new RegExp(`^POST /mcp tools/call search_memories token=${tokenId} -> \\d{3} \\d+ms \\[`));
        expect(logged.join('\n')).not.toContain(tokens.full.slice(26));
        expect(logged.join('\n')).not.toContain(secretWord);
      } finally {
        spy.mockRestore();
      }
    });

    it('IP allow-lists apply: a token limited to another address gets 403', async () => {
      const elsewhere = await createToken(t, { name: 'elsewhere', preset: 'full', allowed_ips: ['10.1.2.3'] });
      const res = await post(initialize, elsewhere.plaintext).expect(403);
      expect(res.body.error.message).toMatch(/may not be used from/);
    });

    it('/openapi.json stays about /api', async () => {
      const doc = await request(t.http).get('/openapi.json').expect(200);
      expect(Object.keys(doc.body.paths).filter((p) => p.startsWith('/mcp'))).toEqual([]);
      expect(JSON.stringify(doc.body)).not.toContain('/mcp');
    });
  });
});

/**
 * Issue 42: a host lists the tools first and the official client then checks every answer against
 * the tool's outputSchema. One connection per protocol generation lists, then calls every tool in
 * every branch. With the local embedding model, so that every search mode runs for real.
 */
describe.each(testBackends())('MCP answers on $name match the listed output schemas', (backend) => {
  let t: TestApp;
  let base: string;
  let full = '';
  let read = '';
  const open: Client[] = [];

  async function connect(token: string, mode: Era): Promise<Client> {
    const client = new Client({ name: 'memstore-e2e', version: '1.0.0' }, { versionNegotiation: { mode } });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    open.push(client);
    return client;
  }

  beforeAll(async () => {
    t = await createTestApp({ ...(await backend.env()), MEMSTORE_EMBEDDING_PROVIDER: '' });
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.http.address() as AddressInfo).port}`;
    full = (await createToken(t, { name: 'mcp answers', preset: 'full' })).plaintext;
    read = (await createToken(t, { name: 'mcp answers read', preset: 'read-only' })).plaintext;
  });

  /** Waits until every memory is embedded (semantic search finds only embedded memories). */
  const embedded = () => embeddingsSettled({ get: (url) => request(t.http).get(url).set('Authorization', `Bearer ${full}`) });

  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close().catch(() => undefined)));
  });

  afterAll(async () => {
    await t?.close();
  });

  it.each(ERAS)('with the $label', async ({ mode }) => {
    // tools/list first, as every host does: the client then checks each structuredContent against
    // the tool's listed outputSchema and throws when it does not match (issue 42).
    const client = await connect(full, mode);
    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name).sort()).toEqual(ALL_TOOLS);
    const tag = `branches-${mode}`;
    const text = (r: { content?: unknown }) => (r.content as Array<{ text: string }>)[0].text;
    const ok = async (name: string, args: Record<string, unknown>): Promise<Structured> => {
      const r = await client.callTool({ name, arguments: args });
      expect({ name, isError: r.isError ?? false, text: r.isError ? text(r) : '' }).toEqual({ name, isError: false, text: '' });
      expect(JSON.parse(text(r))).toEqual(r.structuredContent); // text and structured content: the same JSON
      return r.structuredContent as Structured;
    };
    const fails = async (name: string, args: Record<string, unknown>, message: RegExp) => {
      const r = await client.callTool({ name, arguments: args });
      expect(r.isError).toBe(true);
      expect(r.structuredContent).toBeUndefined();
      expect(text(r)).toMatch(message);
    };
    const rows = (page: Structured) => page.rows as Structured[];

    // Empty: nothing carries the tag yet.
    expect(await ok('list_recent', { tags: [tag] })).toMatchObject({ mode: 'list', count: 0, total: 0, rows: [], next_cursor: null });
    for (const m of ['hybrid', 'keyword', 'semantic']) {
      expect(await ok('search_memories', { q: 'rotation schedule', tags: [tag], mode: m })).toMatchObject({ mode: 'search', count: 0, search_mode: m });
    }
    expect((await ok('recall_context', { task: 'rotate the on-call schedule', tags: [tag] })).memories).toEqual([]);

    // Found: create, get, update, list (with cursor), search in each mode, recall, stats.
    const created = await ok('create_memory', { title: 'On-call rotation', content: 'The on-call rotation changes every Monday at 10:00; hand over in the ops channel.', tags: [tag], project: tag });
    const memory = created.memory as Structured;
    expect(memory).toMatchObject({ version: 1, tags: [tag] });
    expect(created.similar).toEqual([]);
    const id = memory.id as string;
    const twin = await ok('create_memory', { title: 'On-call rotation', content: 'The on-call rotation changes every Monday at 10:00; hand over in the ops channel!', tags: [tag], project: tag });
    // Duplicate hints are best effort (a budget of embedding time): [] or the first memory.
    // Only punctuation differs: a duplicate, not a likely update (decision 0130).
    expect([[], [{ id, title: 'On-call rotation', score: expect.any(Number), likely_update: false }]]).toContainEqual(twin.similar);
    const twinId = (twin.memory as Structured).id as string;
    expect(((await ok('get_memory', { id })).memory as Structured).version).toBe(1);
    expect(((await ok('update_memory', { id, content: 'The on-call rotation changes every Monday at 09:00; hand over in the ops channel.' })).memory as Structured).version).toBe(2);
    await embedded();
    const first = await ok('list_recent', { tags: [tag], limit: 1 });
    expect(rows(first)[0]).toMatchObject({ id: twinId, version: 1 });
    expect(first.next_cursor).toEqual(expect.any(String));
    expect(rows(await ok('list_recent', { tags: [tag], cursor: first.next_cursor })).map((r) => r.id)).toEqual([id]);
    expect((await ok('search_memories', { tags: [tag] })).mode).toBe('list');
    for (const m of ['hybrid', 'keyword', 'semantic']) {
      const page = await ok('search_memories', { q: 'on-call rotation monday', tags: [tag], mode: m, limit: 1, page: 1 });
      expect(page).toMatchObject({ mode: 'search', search_mode: m, count: 1, total: 2, has_next: true });
      expect(rows(page)[0]).toMatchObject({ score: expect.any(Number), version: expect.any(Number) });
      if (m !== 'keyword') expect(rows(page)[0].matched).toEqual(expect.arrayContaining([m === 'semantic' ? 'semantic' : 'keyword']));
      if (m !== 'keyword') {
        // explain and min_score (decision 0120): the signals of each row and the floor in force; nothing answers nonsense.
        const why = rows(await ok('search_memories', { q: 'on-call rotation monday', tags: [tag], mode: m, explain: true, min_score: 0.1 }));
        expect(why[0].explain).toMatchObject({ floor: 0.1, score: why[0].score, cosine: expect.any(Number) });
        // Nonsense: no row, and the best memory left out scored 0 (nothing came close).
        expect(await ok('search_memories', { q: 'xqzvb flurmption', tags: [tag], mode: m })).toMatchObject({ count: 0, total: 0, best_below_floor: 0 });
      }
    }
    expect((await ok('recall_context', { task: 'when does the on-call rotation change?', tags: [tag] })).matched).toBe(2);
    expect(await ok('recall_context', { task: 'xqzvb flurmption', tags: [tag], min_score: 0.5 })).toMatchObject({ matched: 0, note: expect.stringMatching(/^No memory matches this task/) });
    expect(((await ok('memory_stats', {})).stats as Structured).by_project).toMatchObject({ [tag]: 2 });
    // supersedes (decision 0130): the twin replaces the first; rows carry the link when asked for (closed schemas list it).
    expect(((await ok('update_memory', { id: twinId, supersedes: [id] })).memory as Structured).id).toBe(twinId);
    expect(rows(await ok('list_recent', { tags: [tag] })).map((r) => r.id)).toEqual([twinId]);
    expect(rows(await ok('search_memories', { q: 'on-call rotation monday', tags: [tag], include_superseded: true }))).toContainEqual(expect.objectContaining({ id, superseded_by: twinId }));
    expect(((await ok('get_memory', { id })).memory as Structured).superseded_by).toBe(twinId);
    expect(await ok('delete_memory', { id: twinId })).toEqual({ deleted: true, id: twinId });
    expect(await ok('delete_memory', { id })).toEqual({ deleted: true, id });

    // Errors: a sentence, no structured content.
    await fails('get_memory', { id }, /No memory has the id/);
    await fails('update_memory', { id, title: 'gone' }, /No memory has the id/);
    await fails('delete_memory', { id }, /No memory has the id/);
    await fails('create_memory', { content: ' ' }, /content: Content must not be empty/);
    await fails('list_recent', { cursor: 'nonsense' }, /cursor: Invalid cursor/);
    await fails('search_memories', { q: 'x', mode: 'fuzzy' }, /mode/);
    await fails('recall_context', { task: 'x', token_budget: 5 }, /token_budget/);

    // A token without a tool's scope: the tool is not listed, and a call is refused in words.
    const reader = await connect(read, mode);
    await reader.listTools();
    const denied = await reader.callTool({ name: 'delete_memory', arguments: { id } });
    expect(denied.isError).toBe(true);
    expect(denied.structuredContent).toBeUndefined();
  });
});
