#!/usr/bin/env node
/**
 * `npm start`: checks the Node version and the embedding model, builds only when a source changed
 * since the last build, then starts the service (dist/src/main.js) in this process.
 *
 * The build is up to date when dist/.build-stamp is newer than every file and folder of the build
 * inputs (INPUTS below): git checkouts and edits change mtimes, and a deleted file changes its
 * folder's. The stamp is written only after a build succeeded. MEMSTORE_FORCE_BUILD=1 builds anyway.
 *
 * Plain CommonJS with nothing newer than Node 18 until the version check, so an old Node gets the
 * one-line message below instead of a syntax error.
 */
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const MIN = [22, 12];
const STAMP = path.join(root, 'dist', '.build-stamp');
/** What the build reads (npm run build: nest build + the admin page). */
const INPUTS = ['src', 'libs', 'web', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'nest-cli.json'];
const SKIP = new Set(['node_modules', 'dist']);

const say = (line) => process.stdout.write(`memstore: ${line}\n`);

function checkNode() {
  const [major, minor] = process.versions.node.split('.').map(Number);
  if (major > MIN[0] || (major === MIN[0] && minor >= MIN[1])) return;
  const bundled = `node-${process.platform}-${process.arch}`;
  const hint =
    process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64')
      ? `npm ci installs Node 24 into node_modules (optional dependency ${bundled}) and npm scripts use it: run npm ci again (optional dependencies must not be omitted), then npm start.`
      : `Node 24 for ${process.platform}-${process.arch} is not installed by npm ci here: install Node 24 (nvm install reads .nvmrc), then npm ci and npm start.`;
  process.stderr.write(`Memory Store needs Node ${MIN.join('.')} or newer; ${process.execPath} is Node ${process.versions.node}. ${hint}\n`);
  process.exit(1);
}

/** The newest mtime (ms) of a file or folder tree; 0 when it does not exist. */
function newest(p) {
  let st;
  try {
    st = fs.statSync(p);
  } catch {
    return 0;
  }
  let t = st.mtimeMs;
  if (st.isDirectory()) {
    for (const name of fs.readdirSync(p)) {
      if (!SKIP.has(name)) t = Math.max(t, newest(path.join(p, name)));
    }
  }
  return t;
}

/** Why a build is needed, or null when dist is up to date. */
function buildReason() {
  if (process.env.MEMSTORE_FORCE_BUILD === '1') return 'MEMSTORE_FORCE_BUILD=1';
  let stamp;
  try {
    stamp = fs.statSync(STAMP).mtimeMs;
  } catch {
    return fs.existsSync(path.join(root, 'dist')) ? 'no record of a complete build' : 'first start';
  }
  const changed = INPUTS.filter((p) => newest(path.join(root, p)) > stamp);
  return changed.length ? `changed since the last build: ${changed.join(', ')}` : null;
}

function build(reason) {
  say(`building (${reason}); this takes a minute or two ...`);
  const started = Date.now();
  // `npm run build` with this process's environment: node_modules/.bin (and its node) first on PATH.
  // Its output (compiler and bundler chatter) is shown only when it fails.
  const npm = process.env.npm_execpath;
  const opts = { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 };
  const res = npm ? spawnSync(process.execPath, [npm, 'run', '--silent', 'build'], opts) : spawnSync('npm', ['run', '--silent', 'build'], { ...opts, shell: process.platform === 'win32' });
  if (res.status !== 0) {
    process.stderr.write(`${res.stdout || ''}${res.stderr || ''}`);
    process.stderr.write(`memstore: the build failed (${res.error ? res.error.message : `exit ${res.status ?? res.signal}`}); its output is above. Nothing was started.\n`);
    process.exit(1);
  }
  fs.writeFileSync(STAMP, `${new Date().toISOString()}\n`);
  say(`built in ${Math.round((Date.now() - started) / 1000)} s`);
}

function checkModel() {
  const dir = process.env.MEMSTORE_EMBEDDING_MODEL_DIR || path.join(root, 'models', 'bge-small-en-v1.5-q');
  if (fs.existsSync(path.join(dir, 'model.onnx'))) say(`embedding model: ${path.relative(root, dir) || dir}`);
  else say(`embedding model: missing (${dir}); search is keyword-only until you run npm run fetch-model`);
}

checkNode();
say(`Node ${process.versions.node} (${process.execPath === path.join(root, 'node_modules', 'node-linux-' + process.arch, 'bin', 'node') ? 'from node_modules' : process.execPath})`);
checkModel();
const reason = buildReason();
if (reason) build(reason);
else say('build is up to date');
say('starting ...');
require(path.join(root, 'dist', 'src', 'main.js'));
