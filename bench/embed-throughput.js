#!/usr/bin/env node
'use strict';
/**
 * `npm run bench:embed`: the local model's embedding throughput, old against new, in the same
 * minutes (issue 45, item 7). No service and no build: the providers are loaded from TypeScript.
 *
 *  - texts: `--count` short (~20–40 tokens) and long (300–500 tokens) texts cut from the English
 *    of docs/ (deterministic for a given tree);
 *  - arm "old": the provider of git ref `--baseline` (default: the commit before issue 45's item 7,
 *    ae5f10a), extracted to a temporary directory, called the way its queue called it (one text
 *    after another);
 *  - arm "new": this tree's provider with its default threads (or `--threads N`), called the way
 *    the queue calls it now (`parallelism` texts at once);
 *  - the arms take turns (`--rounds` A/B pairs per class: the machine may be shared) and the
 *    report gives turns/s, the new/old ratio of each pair, the load average, and the cosine of each
 *    new vector against the old one (min over all texts).
 *
 * Options: --count 24  --rounds 2  --threads N  --baseline REF  --only short|long
 *          --max-tokens N (the new arm reads N tokens instead of its default,
 *          MEMSTORE_EMBEDDING_MAX_TOKENS's: what a truncation saves, and how far its vectors move;
 *          its retrieval quality is measured by bench/lab/embed-quality.js)
 */
const { execSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const MODEL_DIR = process.env.MEMSTORE_EMBEDDING_MODEL_DIR || path.join(ROOT, 'models', 'bge-small-en-v1.5-q');

function parseArgs(argv) {
  const opts = { count: 24, rounds: 2, threads: null, baseline: 'ae5f10a', only: null, maxTokens: null };
  for (let i = 0; i < argv.length; i++) {
    const val = () => argv[++i];
    switch (argv[i]) {
      case '--count':
        opts.count = Number(val());
        break;
      case '--rounds':
        opts.rounds = Number(val());
        break;
      case '--threads':
        opts.threads = Number(val());
        break;
      case '--baseline':
        opts.baseline = val();
        break;
      case '--only':
        opts.only = val();
        break;
      case '--max-tokens':
        opts.maxTokens = Number(val());
        break;
      default:
        throw new Error(`unknown option ${argv[i]}`);
    }
  }
  return opts;
}

/** The old provider: `ref`'s src/ and libs/ in a temporary directory, beside this tree's node_modules. */
function oldProviderModule(ref) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-embed-baseline-'));
  execSync(`git archive ${ref} src libs | tar -x -C ${JSON.stringify(dir)}`, { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  return { dir, module: require(path.join(dir, 'src', 'embeddings', 'local-embedding.provider.ts')) };
}

/** `count` texts of minTokens..maxTokens tokens, cut from the words of docs/ (deterministic). */
function texts(tokenizer, words, minTokens, maxTokens, count, start) {
  const out = [];
  let pos = start % words.length;
  while (out.length < count) {
    let n = Math.max(4, Math.floor(minTokens / 1.4));
    let t = words.slice(pos, pos + n).join(' ');
    let k = tokenizer.encode(t).ids.length;
    while (k < minTokens && pos + n < words.length) {
      n += Math.max(1, Math.floor((minTokens - k) / 1.5));
      t = words.slice(pos, pos + n).join(' ');
      k = tokenizer.encode(t).ids.length;
    }
    if (k >= minTokens && k <= maxTokens) out.push({ text: t, tokens: k });
    pos = (pos + n * 5 + 13) % Math.max(1, words.length - 2000);
  }
  return out;
}

/** Embeds every text `lanes` at a time (the queue's rounds); returns the vectors and turns/s. */
async function measure(provider, items, lanes) {
  const vectors = new Array(items.length);
  let next = 0;
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      vectors[i] = await provider.embed(items[i].text, 'document', false);
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  // CPU time of the whole process (every thread) per text: what the text costs the machine.
  return { vectors, perSec: items.length / s, seconds: s, cpuMsPerText: (cpu.user + cpu.system) / 1000 / items.length };
}

function cosine(a, b) {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

const load = () => os.loadavg()[0].toFixed(1);

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  process.env.ORT_DISABLE_TELEMETRY ??= '1';
  require('ts-node').register({ transpileOnly: true, compilerOptions: { module: 'commonjs' } });
  const { LocalEmbeddingProvider } = require(path.join(ROOT, 'src', 'embeddings', 'local-embedding.provider.ts'));
  const baseline = oldProviderModule(opts.baseline);
  const { Tokenizer } = await import('@huggingface/tokenizers');
  const tokenizer = new Tokenizer(JSON.parse(fs.readFileSync(path.join(MODEL_DIR, 'tokenizer.json'), 'utf8')), {});
  const docs = path.join(ROOT, 'docs');
  const words = fs
    .readdirSync(docs, { recursive: true })
    .filter((f) => String(f).endsWith('.md'))
    .sort()
    .map((f) => fs.readFileSync(path.join(docs, String(f)), 'utf8'))
    .join(' ')
    .replace(/[`#|*]+/g, ' ')
    .split(/\s+/)
    .filter(Boolean);
  const classes = [
    { name: 'short', items: texts(tokenizer, words, 20, 40, opts.count, 101) },
    { name: 'long', items: texts(tokenizer, words, 300, 500, opts.count, 7919) },
  ].filter((c) => !opts.only || c.name === opts.only);

  const oldP = new baseline.module.LocalEmbeddingProvider(MODEL_DIR);
  const newP = new LocalEmbeddingProvider(MODEL_DIR, { ...(opts.threads ? { threads: opts.threads } : {}), ...(opts.maxTokens ? { maxTokens: opts.maxTokens } : {}) });
  const lanes = newP.parallelism;
  console.log(
    `embedding throughput: old = ${opts.baseline} (one text at a time), new = this tree (${lanes} thread(s), ${lanes} at a time, reads ${newP.maxTokens} tokens; old reads 512); ${os.availableParallelism()} cores, load ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  );
  // Warm-up (model load on every thread), untimed.
  const warm = classes[0].items.slice(0, Math.max(2, lanes));
  await measure(oldP, warm, 1);
  await measure(newP, warm, lanes);

  const report = [];
  for (const c of classes) {
    const tokens = c.items.map((x) => x.tokens);
    console.log(`\n${c.name}: ${c.items.length} texts, ${Math.min(...tokens)}–${Math.max(...tokens)} tokens (mean ${(tokens.reduce((a, b) => a + b, 0) / tokens.length).toFixed(0)})`);
    const pairs = [];
    let oldVectors;
    let newVectors;
    for (let r = 0; r < opts.rounds; r++) {
      const la = load();
      const a = await measure(oldP, c.items, 1);
      const lb = load();
      const b = await measure(newP, c.items, lanes);
      oldVectors ??= a.vectors;
      newVectors ??= b.vectors;
      pairs.push({ old: a.perSec, new: b.perSec, ratio: b.perSec / a.perSec, cpuMs: [a.cpuMsPerText, b.cpuMsPerText], load: [la, lb, load()] });
      console.log(
        `  round ${r + 1}: old ${a.perSec.toFixed(2)} turns/s (${a.cpuMsPerText.toFixed(0)} CPU ms/text, load ${la}), new ${b.perSec.toFixed(2)} turns/s (${b.cpuMsPerText.toFixed(0)} CPU ms/text, load ${lb}) → ${(b.perSec / a.perSec).toFixed(2)}×`,
      );
    }
    const cos = c.items.map((_, i) => cosine(oldVectors[i], newVectors[i]));
    const ratios = pairs.map((p) => p.ratio).sort((x, y) => x - y);
    const median = ratios[Math.floor(ratios.length / 2)];
    console.log(`  ${c.name}: new/old median ${median.toFixed(2)}× (range ${ratios[0].toFixed(2)}–${ratios[ratios.length - 1].toFixed(2)}); cosine new vs old: min ${Math.min(...cos).toFixed(6)}`);
    report.push({ class: c.name, pairs, medianRatio: median, minCosine: Math.min(...cos) });
  }
  await oldP.close();
  await newP.close();
  fs.rmSync(baseline.dir, { recursive: true, force: true });
  return report;
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
