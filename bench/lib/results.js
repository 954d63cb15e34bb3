'use strict';
/**
 * Where a bench or eval run leaves its results (docs/decisions/0029): the run writes them itself,
 * so no figure is ever copied into prose by hand.
 *
 *   bench/results/<date>-<seq>.json        the full report of `npm run bench`
 *   bench/results/<date>-<seq>.md          its tables
 *   bench/results/latest.md                a copy of the last bench run's tables
 *   bench/results/eval-<date>-<seq>.json   the same for `npm run eval`
 *   bench/results/eval-<date>-<seq>.md     (and latest-eval.md)
 *
 * <date> is the run's UTC start date, <seq> the next free number for that date. bench/results/ is
 * git-ignored: results belong to a machine and a minute.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const ROOT = path.resolve(__dirname, '..', '..');
const RESULTS = path.join(ROOT, 'bench', 'results');

/** The commit the run measured (with "+changes" when the work tree differs), or null outside git. */
function gitDescribe() {
  try {
    const head = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return dirty ? `${head}+changes` : head;
  } catch {
    return null;
  }
}

/** `<prefix><date>-<seq>` with the first <seq> (from 1) that has no file yet. */
function nextBase(dir, prefix, started) {
  const date = started.toISOString().slice(0, 10);
  for (let seq = 1; ; seq++) {
    const base = `${prefix}${date}-${seq}`;
    if (!fs.existsSync(path.join(dir, `${base}.json`)) && !fs.existsSync(path.join(dir, `${base}.md`))) return base;
  }
}

/** A markdown table; cells are strings already. */
function table(head, rows) {
  const esc = (c) => String(c).replace(/\|/g, '\\|');
  return [`| ${head.map(esc).join(' | ')} |`, `| ${head.map(() => '---').join(' | ')} |`, ...rows.map((r) => `| ${r.map(esc).join(' | ')} |`)].join('\n');
}

const fixed = (v, d) => (typeof v === 'number' && Number.isFinite(v) ? v.toFixed(d) : '-');
const ms = (v) => (typeof v !== 'number' || !Number.isFinite(v) ? '-' : v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0));
const mb = (b) => (typeof b === 'number' && Number.isFinite(b) ? (b / 1048576).toFixed(0) : '-');

/** Scalars of an object as `key: value` lines (for sections whose shape other code owns). */
function scalars(obj) {
  return Object.entries(obj ?? {})
    .filter(([, v]) => v === null || ['number', 'string', 'boolean'].includes(typeof v))
    .map(([k, v]) => `- ${k}: ${typeof v === 'number' && !Number.isInteger(v) ? Number(v.toPrecision(4)) : v}`)
    .join('\n');
}

function header(title, report, machine) {
  const m = machine ?? {};
  return [
    `# ${title}`,
    '',
    `- started: ${report.startedAt ?? '-'}, finished: ${report.finishedAt ?? '-'}`,
    `- commit: ${report.commit ?? 'unknown'}`,
    `- machine: ${m.cpus ?? os.cpus().length} × ${m.cpuModel ?? os.cpus()[0]?.model ?? '?'}, ${m.memGb ?? Math.round(os.totalmem() / 2 ** 30)} GB, node ${m.node ?? process.version}`,
    report.loadAvgStart ? `- load average at start / end: ${report.loadAvgStart.map((l) => l.toFixed(2)).join(' ')} / ${(report.loadAvgEnd ?? []).map((l) => l.toFixed(2)).join(' ')}` : null,
  ]
    .filter((l) => l !== null)
    .join('\n');
}

/** The tables of one `npm run bench` report (bench/run.js). */
function benchMarkdown(report) {
  const o = report.options ?? {};
  const out = [header(`Bench run: n=${o.n}`, { ...report, loadAvgStart: report.machine?.loadAvgStart }, report.machine)];
  out.push(
    `- options: ${Object.entries(o)
      .filter(([, v]) => v !== null && v !== false)
      .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : v}`)
      .join(', ')}`,
  );
  out.push(`- clean (no errors, every answer 2xx): ${report.clean ? 'yes' : 'NO'}`);
  if (report.seeding) out.push(`- seeding: ${report.seeding.reused ? 'reused data dir' : `${fixed(report.seeding.perSec, 0)} memories/s`}`);
  if (report.memoriesAtStart !== undefined) out.push(`- memories when measuring started: ${report.memoriesAtStart}`);
  out.push(`- service RSS at start / after seeding / at end: ${mb(report.rssAtStart)} / ${mb(report.rssAfterSeed)} / ${mb(report.rssAtEnd)} MB`);
  const rows = (report.results ?? []).concat((report.baseline ?? []).map((b) => ({ ...b, hits: null })));
  if (rows.length) {
    out.push('', '## Classes', '', 'Latency from 2xx responses; CPU and RSS of the measured process (all its threads).', '');
    out.push(
      table(
        ['class', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'errors', 'non-2xx', 'CPU ms/req', 'RSS MB', 'hits'],
        rows.map((r) => [
          r.name,
          fixed(r.rps, 0),
          ms(r.latencyMs?.p50),
          ms(r.latencyMs?.p99),
          ms(r.latencyMs?.max),
          String((r.errors ?? 0) + (r.timeouts ?? 0)),
          String(r.non2xx ?? 0),
          fixed(r.server?.cpuMsPerRequest, 2),
          mb(r.server?.rssPeak),
          r.hits ? String(r.hits.mean) : '',
        ]),
      ),
    );
  }
  if (report.verdicts?.length) {
    out.push('', '## Against the bare node:http baseline', '');
    out.push(
      table(
        ['class', 'p99 ms', 'throughput / baseline', 'baseline CPU / ours'],
        report.verdicts.map((v) => [v.scenario, ms(v.p99), fixed(v.ratio, 2), fixed(v.cpuRatio, 2)]),
      ),
    );
  }
  if (report.hybridVsKeyword?.length) {
    out.push('', '## Hybrid (or semantic) p99 / keyword p99, unseen queries', '');
    out.push(
      table(
        ['hybrid', 'keyword', 'ratio', 'target', 'distinct queries', 'repeated'],
        report.hybridVsKeyword.map((h) => [h.hybrid, h.keyword, fixed(h.ratio, 2), h.target ? `<= ${h.target}` : '-', String(h.unseen?.queries ?? '-'), String(h.unseen?.repeats ?? '-')]),
      ),
    );
  }
  const known = new Set([
    'startedAt',
    'finishedAt',
    'options',
    'machine',
    'targets',
    'results',
    'baseline',
    'verdicts',
    'hybridVsKeyword',
    'clean',
    'seeding',
    'loadAvgEnd',
    'commit',
    'memoriesAtStart',
    'rssAtStart',
    'rssAfterSeed',
    'rssAtEnd',
  ]);
  const extra = Object.entries(report).filter(([k, v]) => !known.has(k) && v !== null && v !== undefined);
  if (extra.length) {
    out.push('', '## Other measurements', '');
    for (const [k, v] of extra) {
      if (typeof v === 'object' && !Array.isArray(v)) out.push(`### ${k}`, '', scalars(v) || '(no scalar fields: see the JSON)', '');
      else if (typeof v !== 'object') out.push(`- ${k}: ${typeof v === 'number' && !Number.isInteger(v) ? Number(v.toPrecision(4)) : v}`);
    }
  }
  return out.join('\n').trimEnd() + '\n';
}

/**
 * The tables of one `npm run eval` report (bench/eval.js). `report`: LoCoMo, { mode: { n, r1, r5,
 * r10, h1, h5, h10, mrr, ran, byCategory } } (empty when the run left LoCoMo out); `extra.absent`:
 * { mode: { n, emptyRate, meanRows } } for our absent-thing questions; `extra.lme`: LongMemEval-S
 * (lib/lme.js: { meta, modes: { mode: { ran, answerable, byType, abstention, knowledgeUpdate } } }).
 */
function evalMarkdown(report, meta, extra = {}) {
  const out = [header(`Eval run: ${[meta.data, extra.lme ? 'LongMemEval-S' : null, extra.notes ? 'notes' : null].filter(Boolean).join(' + ')}`, meta, null)];
  if (meta.wallSeconds !== undefined) out.push(`- wall time: ${meta.wallSeconds} s`);
  if (Object.keys(report).length) {
    out.push(`- data: ${meta.data} (${meta.questions} questions)`);
    out.push('', '## LoCoMo: retrieval quality', '');
    out.push(
      table(
        ['mode', 'ran', 'n', 'R@1', 'R@5', 'R@10', 'Hit@1', 'Hit@5', 'Hit@10', 'MRR@10'],
        Object.entries(report).map(([mode, r]) => [
          mode,
          String(r.ran),
          String(r.n),
          fixed(r.r1, 3),
          fixed(r.r5, 3),
          fixed(r.r10, 3),
          fixed(r.h1, 3),
          fixed(r.h5, 3),
          fixed(r.h10, 3),
          fixed(r.mrr, 3),
        ]),
      ),
    );
    const cats = [...new Set(Object.values(report).flatMap((r) => Object.keys(r.byCategory ?? {})))].sort();
    if (cats.length) {
      out.push('', '## LoCoMo: R@5 by category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop)', '');
      out.push(
        table(
          ['mode', ...cats],
          Object.entries(report).map(([mode, r]) => [mode, ...cats.map((c) => (r.byCategory?.[c] ? `${fixed(r.byCategory[c].r5, 3)} (n=${r.byCategory[c].n})` : '-'))]),
        ),
      );
    }
  }
  if (extra.absent) {
    out.push('', '## LoCoMo: our questions about absent things', '', 'Share answered with no row (a good search returns nothing), and the mean number of rows.', '');
    out.push(
      table(
        ['mode', 'n', 'empty', 'mean rows'],
        Object.entries(extra.absent).map(([mode, a]) => [mode, String(a.n), fixed(a.emptyRate, 3), fixed(a.meanRows, 2)]),
      ),
    );
  }
  for (const notes of extra.notes ?? []) {
    out.push(
      '',
      `## Notes: paraphrases and absent things (${notes.set}: ${notes.notes} independent notes)`,
      '',
      'Questions in other words than their target note: hit@k with the default floor and with min_score 0; questions about things no note mentions: answered with no row.',
      '',
    );
    out.push(
      table(
        ['mode', 'n', 'hit@1', 'hit@3', 'no row', 'hit@1, min_score 0', 'hit@3, min_score 0', 'absent: no row'],
        Object.entries(notes.modes).map(([mode, a]) => [
          mode,
          String(a.n),
          String(a.hit1),
          String(a.hit3),
          String(a.empty),
          String(a.hit1AtZero),
          String(a.hit3AtZero),
          `${a.absentEmpty}/${a.absentN}`,
        ]),
      ),
    );
  }
  const lme = extra.lme;
  if (lme) {
    const m = lme.meta;
    out.push('', '## LongMemEval-S', '');
    out.push(
      `- questions: ${m.questions} (${m.spec}), ${m.turns} turns (${m.emptyTurnsLeftOut} empty ones left out), ${m.fromCache} haystacks from the vector cache; query_date: ${m.queryDate}`,
      `- wall time ${m.wallSeconds} s (loading haystacks ${m.loadSeconds} s, waiting for embeddings ${m.embedSeconds} s)`,
      '',
      'Answerable questions: session R@k = share of answer sessions with a turn in the top k; turn R@k = share of has_answer turns in the top k (n turn = questions that mark them); empty = share answered with no row.',
      '',
    );
    const rows = [];
    for (const [mode, r] of Object.entries(lme.modes)) {
      for (const [type, a] of [['all answerable', r.answerable], ...Object.entries(r.byType)]) {
        rows.push([
          mode,
          type,
          String(a.n),
          fixed(a.session.r1, 3),
          fixed(a.session.r5, 3),
          fixed(a.session.r10, 3),
          String(a.nTurn),
          fixed(a.turn.r1, 3),
          fixed(a.turn.r5, 3),
          fixed(a.turn.r10, 3),
          fixed(a.emptyRate, 3),
        ]);
      }
    }
    out.push(table(['mode', 'type', 'n', 'session R@1', 'R@5', 'R@10', 'n turn', 'turn R@1', 'R@5', 'R@10', 'empty'], rows));
    out.push(
      '',
      '### Abstention and knowledge updates',
      '',
      'Abstention (`_abs`): share answered with no row. Newest first: knowledge-update questions whose answer sessions have two or more dates; the latest-dated answer session (its best has_answer turn) is in the top 10 above every older one; "when both" counts only questions with the newest and an older one in the top 10.',
      '',
    );
    out.push(
      table(
        ['mode', 'ran', 'abstention n', 'abstention empty', 'by type', 'newest first', 'n', 'when both', 'n both'],
        Object.entries(lme.modes).map(([mode, r]) => [
          mode,
          String(r.ran),
          String(r.abstention.n),
          fixed(r.abstention.emptyRate, 3),
          Object.entries(r.abstention.byType)
            .map(([t, v]) => `${t} ${fixed(v.emptyRate, 2)} (${v.n})`)
            .join(', '),
          fixed(r.knowledgeUpdate.newestFirstRate, 3),
          String(r.knowledgeUpdate.n),
          fixed(r.knowledgeUpdate.newestAboveOlderRate, 3),
          String(r.knowledgeUpdate.nBoth),
        ]),
      ),
    );
  }
  return out.join('\n').trimEnd() + '\n';
}

/**
 * Writes one run's results; returns the paths written. `kind` is 'bench' or 'eval'; `json` is the
 * full report; `markdown` its tables; `dir` only for tests.
 */
function writeResults(kind, started, json, markdown, dir = RESULTS) {
  fs.mkdirSync(dir, { recursive: true });
  const base = nextBase(dir, kind === 'eval' ? 'eval-' : '', started);
  const jsonFile = path.join(dir, `${base}.json`);
  const mdFile = path.join(dir, `${base}.md`);
  const latest = path.join(dir, kind === 'eval' ? 'latest-eval.md' : 'latest.md');
  fs.writeFileSync(jsonFile, JSON.stringify(json, null, 2) + '\n');
  fs.writeFileSync(mdFile, markdown);
  fs.writeFileSync(latest, markdown);
  return { jsonFile, mdFile, latest };
}

module.exports = { RESULTS, gitDescribe, writeResults, benchMarkdown, evalMarkdown, nextBase };
