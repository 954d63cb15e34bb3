'use strict';
/**
 * The baseline: a bare Node `http` server (no Nest, no Express, no auth, no validation) that
 * runs the service's own compiled SQLite search (SqliteMemoryIndex.search, opened through the
 * same SqliteDocumentDatabase the service uses, so pragmas and query are identical) on the
 * benchmark's database file, and answers the page as JSON. Our search throughput is reported
 * as a ratio of this one.
 *
 * Usage: node bench/baseline-server.js <dist dir> <sqlite file> <port>; prints "ready <port>".
 */
const http = require('node:http');
const path = require('node:path');

async function main() {
  const [distDir, file, portArg] = process.argv.slice(2);
  const { SqliteDocumentDatabase } = require(path.resolve(distDir, 'src/backends/sqlite/sqlite-database.js'));
  const db = new SqliteDocumentDatabase(file);
  await db.init();
  const index = db.memories;
  const server = http.createServer(async (req, res) => {
    try {
      const url = new URL(req.url, 'http://x');
      const q = url.searchParams.get('q') || '';
      const limit = Number(url.searchParams.get('limit') || 20);
      // The bench token's namespace (issue 43): without one the search matched nothing (namespace = NULL).
      const page = await index.search({ text: q, filter: { namespace: 'default' }, limit, offset: 0 });
      const body = JSON.stringify({ ok: true, rows: page.rows, total: page.total });
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    } catch (e) {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(e && e.message));
    }
  });
  server.keepAliveTimeout = 60_000;
  server.listen(Number(portArg), '127.0.0.1', () => console.log(`ready ${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`));
  const stop = () => server.close(() => db.close().finally(() => process.exit(0)));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((e) => {
  console.error(`baseline failed: ${e && e.stack}`);
  process.exit(1);
});
