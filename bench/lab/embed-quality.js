#!/usr/bin/env node
'use strict';
/**
 * Embedding lab (issue 45, items 7 and 2): semantic-only retrieval quality of an embedder and a
 * truncation, on the dev sets in ../shared/eval, without a service. Every turn is embedded the way
 * the queue embeds it (memoryEmbeddingText: content, title, the previous turn's content) by this
 * tree's LocalEmbeddingProvider, each question is embedded as a query, and the turns are ranked by
 * cosine within the question's haystack. Vectors are cached on disk per model and truncation, and a
 * text no longer than a truncation reuses the untruncated vector (it is the same).
 *
 *   node bench/lab/embed-quality.js --model bge=models/bge-small-en-v1.5-q --model e5=/path/to/e5 \
 *        --max-tokens 512,256,128 --lme-every 5 [--lme-distractors 6] [--sets locomo,lme] [--cache /tmp/memstore-embed-lab]
 *
 * A model dir's model.json may carry `documentPrefix` (e5: "passage: "), prepended to every turn.
 * LoCoMo: R@5/R@10 over the evidence of categories 1–4. LongMemEval-S: every `--lme-every`th
 * question (abstention ones left out), turn R@5 (has_answer turns) and session R@5.
 * Also reports CPU ms per embedded text of each configuration (long texts only, same machine).
 */
const fs = require('node:fs');
const path = require('node:path');
const { evalDir } = require('../lib/eval-dir');
const zlib = require('node:zlib');
const crypto = require('node:crypto');

const ROOT = path.resolve(__dirname, '..', '..');
const EVAL = evalDir();

function parseArgs(argv) {
  const o = { models: [], maxTokens: [512], lmeEvery: 5, lmeDistractors: 0, sets: ['locomo', 'lme'], cache: '/tmp/memstore-embed-lab' };
  for (let i = 0; i < argv.length; i++) {
    const v = () => argv[++i];
    if (argv[i] === '--model') {
      const [name, dir] = v().split('=');
      o.models.push({ name, dir: path.resolve(dir) });
    } else if (argv[i] === '--max-tokens') o.maxTokens = v().split(',').map(Number);
    else if (argv[i] === '--lme-every') o.lmeEvery = Number(v());
    else if (argv[i] === '--lme-distractors') o.lmeDistractors = Number(v());
    else if (argv[i] === '--sets') o.sets = v().split(',');
    else if (argv[i] === '--cache') o.cache = v();
    else throw new Error(`unknown option ${argv[i]}`);
  }
  if (o.models.length === 0) o.models.push({ name: 'bge', dir: path.join(ROOT, 'models', 'bge-small-en-v1.5-q') });
  return o;
}

const dot = (a, b) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
};

/** The LoCoMo questions and turns, as bench/eval.js stores them. */
function locomo() {
  const data = JSON.parse(fs.readFileSync(path.join(EVAL, 'locomo-dev.json'), 'utf8'));
  const groups = [];
  for (const s of data) {
    const c = s.conversation;
    const docs = [];
    for (let n = 1; c[`session_${n}`]; n++) {
      const date = c[`session_${n}_date_time`];
      for (const t of c[`session_${n}`]) {
        const content = `${t.speaker}: ${t.text}${t.blip_caption ? ` [image: ${t.blip_caption}]` : ''}`;
        docs.push({ id: t.dia_id, title: `${date} — ${t.speaker}`, content });
      }
    }
    const ids = new Set(docs.map((d) => d.id));
    const qs = [];
    for (const q of s.qa) {
      if (!(q.category >= 1 && q.category <= 4)) continue;
      const ev = (q.evidence || [])
        .flatMap((e) => String(e).split(/[;,]\s*/))
        .map((e) =>
          e
            .trim()
            .replace(/^D:/, 'D')
            .replace(/:0+(\d)/, ':$1'),
        )
        .filter((e) => ids.has(e));
      if (ev.length) qs.push({ q: q.question, relevant: new Set(ev), category: q.category });
    }
    groups.push({ name: s.sample_id, docs, qs });
  }
  return groups;
}

/** Every `every`th LongMemEval-S question that is not an abstention, each its own haystack. */
function lme(every, distractors) {
  const lines = zlib
    .gunzipSync(fs.readFileSync(path.join(EVAL, 'longmemeval-s-dev.jsonl.gz')))
    .toString()
    .trim()
    .split('\n')
    .map(JSON.parse);
  const groups = [];
  lines
    .filter((x) => !x.question_id.endsWith('_abs'))
    .forEach((x, k) => {
      if (k % every !== 0) return;
      const docs = [];
      // --lme-distractors N: the answer sessions and N others (evenly spread) instead of all ~50 (cheaper; a smaller haystack).
      const answer = new Set(x.answer_session_ids);
      const others = x.haystack_session_ids.map((id, si) => (answer.has(id) ? -1 : si)).filter((si) => si >= 0);
      const step = distractors > 0 ? Math.max(1, others.length / distractors) : 1;
      const kept = new Set(distractors > 0 ? Array.from({ length: Math.min(distractors, others.length) }, (_, k) => others[Math.floor(k * step)]) : others);
      x.haystack_sessions.forEach((sess, si) => {
        if (!answer.has(x.haystack_session_ids[si]) && !kept.has(si)) return;
        sess.forEach((t, ti) =>
          docs.push({
            id: `${x.haystack_session_ids[si]}#${ti}`,
            session: x.haystack_session_ids[si],
            title: `${x.haystack_dates[si]} — ${t.role}`,
            content: t.content,
            answer: !!t.has_answer,
            first: ti === 0,
          }),
        );
      });
      const turns = new Set(docs.filter((d) => d.answer).map((d) => d.id));
      groups.push({ name: x.question_id, docs, qs: [{ q: x.question, relevant: turns, sessions: new Set(x.answer_session_ids), type: x.question_type }] });
    });
  return groups;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  process.env.ORT_DISABLE_TELEMETRY ??= '1';
  require('ts-node').register({ transpileOnly: true, compilerOptions: { module: 'commonjs' } });
  const { LocalEmbeddingProvider } = require(path.join(ROOT, 'src', 'embeddings', 'local-embedding.provider.ts'));
  const { memoryEmbeddingText } = require(path.join(ROOT, 'libs', 'search-query', 'fusion.ts'));
  const { Tokenizer } = await import('@huggingface/tokenizers');
  fs.mkdirSync(o.cache, { recursive: true });

  const sets = [];
  if (o.sets.includes('locomo')) sets.push({ name: 'locomo', groups: locomo() });
  if (o.sets.includes('lme')) sets.push({ name: 'lme', groups: lme(o.lmeEvery, o.lmeDistractors) });
  for (const s of sets)
    for (const g of s.groups)
      g.docs.forEach((d, i) => {
        // The previous memory's content, when the previous turn belongs to the same conversation session.
        const prev = i > 0 && !d.first ? g.docs[i - 1].content : null;
        d.text = memoryEmbeddingText(d.title, d.content, prev);
      });

  const results = [];
  for (const m of o.models) {
    const meta = JSON.parse(fs.readFileSync(path.join(m.dir, 'model.json'), 'utf8'));
    const docPrefix = meta.documentPrefix ?? '';
    const tokenizer = new Tokenizer(JSON.parse(fs.readFileSync(path.join(m.dir, 'tokenizer.json'), 'utf8')), {});
    const ntok = new Map();
    const tokens = (t) => {
      if (!ntok.has(t)) ntok.set(t, tokenizer.encode(t.slice(0, 20000)).ids.length);
      return ntok.get(t);
    };
    const cacheFile = path.join(
      o.cache,
      `${m.name}-${crypto
        .createHash('sha1')
        .update(fs.readFileSync(path.join(m.dir, 'model.json')))
        .digest('hex')
        .slice(0, 8)}.json`,
    );
    const cache = fs.existsSync(cacheFile) ? new Map(Object.entries(JSON.parse(fs.readFileSync(cacheFile, 'utf8')))) : new Map();
    const save = () => fs.writeFileSync(cacheFile, JSON.stringify(Object.fromEntries(cache)));
    for (const maxTokens of [...o.maxTokens].sort((a, b) => b - a)) {
      const provider = new LocalEmbeddingProvider(m.dir, { threads: 2, maxTokens });
      const eff = (text) => (tokens(text) > maxTokens ? maxTokens : 'full');
      const keyOf = (kind, text) =>
        crypto
          .createHash('sha1')
          .update(`${kind}|${eff(text)}|${text}`)
          .digest('base64');
      let embedded = 0;
      let cpuMs = 0;
      const embedAll = async (items) => {
        const todo = items.filter((x) => !cache.has(keyOf(x.kind, x.text)));
        let next = 0;
        const cpu0 = process.cpuUsage();
        const lane = async () => {
          while (next < todo.length) {
            const x = todo[next++];
            const v = await provider.embed(x.kind === 'document' ? docPrefix + x.text : x.text, x.kind, false);
            cache.set(keyOf(x.kind, x.text), Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64'));
            if (++embedded % 500 === 0) process.stderr.write(`  ${m.name}@${maxTokens}: ${embedded}/${todo.length}\n`);
          }
        };
        await Promise.all([lane(), lane()]);
        const c = process.cpuUsage(cpu0);
        cpuMs += (c.user + c.system) / 1000;
        if (todo.length) save();
      };
      const vec = (kind, text) => {
        const b = Buffer.from(cache.get(keyOf(kind, text)), 'base64');
        return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
      };
      for (const s of sets) {
        const items = s.groups.flatMap((g) => [...g.docs.map((d) => ({ kind: 'document', text: d.text })), ...g.qs.map((q) => ({ kind: 'query', text: q.q }))]);
        await embedAll(items);
        const agg = { n: 0, r5: 0, r10: 0, s5: 0, byType: {} };
        for (const g of s.groups) {
          const dv = g.docs.map((d) => vec('document', d.text));
          for (const q of g.qs) {
            const qv = vec('query', q.q);
            const ranked = dv
              .map((v, i) => ({ i, s: dot(v, qv) }))
              .sort((a, b) => b.s - a.s)
              .slice(0, 10)
              .map((x) => g.docs[x.i]);
            const rec = (k) => ranked.slice(0, k).filter((d) => q.relevant.has(d.id)).length / Math.max(1, q.relevant.size);
            const type = q.type ?? `cat${q.category}`;
            agg.byType[type] ??= { n: 0, r5: 0 };
            if (q.relevant.size > 0) {
              agg.n++;
              agg.r5 += rec(5);
              agg.r10 += rec(10);
              agg.byType[type].n++;
              agg.byType[type].r5 += rec(5);
            }
            if (q.sessions)
              agg.s5 +=
                new Set(
                  ranked
                    .slice(0, 5)
                    .map((d) => d.session)
                    .filter((x) => q.sessions.has(x)),
                ).size / q.sessions.size;
          }
        }
        const nq = s.groups.reduce((a, g) => a + g.qs.length, 0);
        const long = s.groups.flatMap((g) => g.docs).filter((d) => tokens(d.text) > 300).length;
        const r = {
          model: m.name,
          maxTokens,
          set: s.name,
          questions: agg.n,
          R5: +(agg.r5 / agg.n).toFixed(4),
          R10: +(agg.r10 / agg.n).toFixed(4),
          ...(s.name === 'lme' ? { sessionR5: +(agg.s5 / nq).toFixed(4) } : {}),
          docs: s.groups.reduce((a, g) => a + g.docs.length, 0),
          docsOver300Tokens: long,
          byType: Object.fromEntries(Object.entries(agg.byType).map(([k, v]) => [k, `${(v.r5 / v.n).toFixed(3)} (${v.n})`])),
        };
        results.push(r);
        console.log(JSON.stringify(r));
      }
      console.log(JSON.stringify({ model: m.name, maxTokens, embedded, cpuMsPerEmbedded: embedded ? +(cpuMs / embedded).toFixed(1) : null }));
      await provider.close();
    }
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
