#!/usr/bin/env node
/**
 * Image build only (docker/Dockerfile, after `npm prune --omit=dev`): removes from the production
 * node_modules (and dist) what the image's own platform never loads, then proves the rest works.
 *  - onnxruntime-node ships its native library for every platform (darwin, win32 with DirectML,
 *    linux arm64 and x64: ~290 MB); only bin/napi-v*\/<platform>/<arch> is kept.
 *  - better-sqlite3 and bcrypt ship prebuilt addons for every platform; only this one's is kept.
 *  - Source maps and TypeScript declarations (never read at run time: the image does not run with
 *    --enable-source-maps, and nothing compiles there).
 * Then it opens a database, hashes a password and embeds a text with the service's own provider (from
 * dist), so a prune that went too far fails the build, not the first request.
 * Usage: node docker/prune-node-modules.js [app dir, default .]
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const app = path.resolve(process.argv[2] || '.');
const nm = path.join(app, 'node_modules');
const platform = process.platform;
const arch = process.arch;
const musl = platform === 'linux' && !process.report.getReport().header.glibcVersionRuntime;

function size(p) {
  const st = fs.lstatSync(p, { throwIfNoEntry: false });
  if (!st) return 0;
  if (!st.isDirectory()) return st.size;
  return fs.readdirSync(p).reduce((n, e) => n + size(path.join(p, e)), 0);
}
let removed = 0;
function rm(p) {
  removed += size(p);
  fs.rmSync(p, { recursive: true, force: true });
}
function keepOnly(dir, keep) {
  if (!fs.existsSync(dir)) return;
  for (const e of fs.readdirSync(dir)) if (!keep(e)) rm(path.join(dir, e));
}

const before = size(nm) + size(path.join(app, 'dist'));

// onnxruntime-node: bin/napi-v6/<platform>/<arch>/{libonnxruntime.so.1, onnxruntime_binding.node}.
const ortBin = path.join(nm, 'onnxruntime-node', 'bin');
if (fs.existsSync(ortBin)) {
  for (const napi of fs.readdirSync(ortBin)) {
    keepOnly(path.join(ortBin, napi), (p) => p === platform);
    keepOnly(path.join(ortBin, napi, platform), (a) => a === arch);
  }
}
// better-sqlite3: prebuilds/<linuxmusl|platform>-<arch>.node (lib/binding.js picks it the same way).
keepOnly(path.join(nm, 'better-sqlite3', 'prebuilds'), (f) => f === `${musl ? 'linuxmusl' : platform}-${arch}.node`);
// bcrypt (node-gyp-build): prebuilds/<platform>-<arch>/ (glibc and musl variants inside).
keepOnly(path.join(nm, 'bcrypt', 'prebuilds'), (d) => d === `${platform}-${arch}`);

// Source maps and declarations, anywhere in node_modules and dist.
const dead = /\.(?:[cm]?js\.map|css\.map|d\.[cm]?ts(?:\.map)?)$/;
function sweep(dir) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) sweep(p);
    else if (e.isFile() && dead.test(e.name)) rm(p);
  }
}
sweep(nm);
if (fs.existsSync(path.join(app, 'dist'))) sweep(path.join(app, 'dist'));

const mb = (n) => `${(n / 1e6).toFixed(0)} MB`;
console.log(`prune (${platform}-${arch}${musl ? ' musl' : ''}): node_modules + dist ${mb(before)} -> ${mb(before - removed)} (${mb(removed)} removed)`);

// What is left must work on this platform.
const req = (m) => require(require.resolve(m, { paths: [app] }));
const Database = req('better-sqlite3');
new Database(':memory:').prepare('select 1').get();
req('bcrypt').hashSync('x', 4);
// The service's own embedding provider (a worker thread: tokenizer + onnxruntime-node) from the build.
const { defaultModelDir } = require(path.join(app, 'dist', 'src', 'config', 'app-config.js'));
const { LocalEmbeddingProvider } = require(path.join(app, 'dist', 'src', 'embeddings', 'local-embedding.provider.js'));
const provider = new LocalEmbeddingProvider(defaultModelDir());
if (provider.unavailable) {
  console.error(provider.unavailable);
  process.exit(1);
}
provider
  .embed('a memory about the image build', 'document')
  .then(async (v) => {
    await provider.close();
    console.log(`better-sqlite3, bcrypt and the local model (${provider.model}, ${v.length} dimensions) work after the prune`);
  })
  .catch((e) => {
    console.error(`the local model does not work after the prune: ${e.message}`);
    process.exit(1);
  });
