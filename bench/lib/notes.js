'use strict';
/**
 * A notes set of the eval (bench/notes-paraphrase.json, notes-paraphrase-2.json): independent
 * agent notes stored one after another in one project by one agent, asked about in other words,
 * and about things no note mentions. Reports per mode hit@1 and hit@3 of each question's target
 * with the default floor and with min_score=0 (what the floor costs), the share of paraphrases
 * answered with no row, and the share of absent-thing questions answered with no row.
 */
const fs = require('node:fs');
const path = require('node:path');
const { expectStatus: expect } = require('./http');
const { request, startService, waitForEmbeddings, search } = require('./service');

async function runNotes({ file, modes }, log) {
  const set = JSON.parse(fs.readFileSync(file, 'utf8'));
  const svc = await startService({ embeddings: modes.every((m) => m === 'keyword') ? 'none' : null });
  const auth = { authorization: `Bearer ${svc.token}` };
  try {
    const keyOf = new Map();
    for (const n of set.notes) {
      const body = { content: n.content, type: n.type, project: 'notes', agent: 'assistant' };
      keyOf.set(expect(await request(svc.base, 'POST', '/api/memories', { headers: auth, body }), 201, `store ${n.key}`).memory.id, n.key);
    }
    await waitForEmbeddings(svc.base, auth);
    const ask = async (q, mode, extra = {}) => (await search(svc.base, auth, { q, project: 'notes', limit: '10', mode, ...extra })).body.rows.map((r) => keyOf.get(r.id));
    const report = {};
    for (const mode of modes) {
      const a = { n: set.questions.length, hit1: 0, hit3: 0, empty: 0, hit1AtZero: 0, hit3AtZero: 0, absentN: set.absent.length, absentEmpty: 0 };
      for (const q of set.questions) {
        const got = await ask(q.question, mode);
        const all = await ask(q.question, mode, { min_score: '0' });
        a.hit1 += got[0] === q.target ? 1 : 0;
        a.hit3 += got.slice(0, 3).includes(q.target) ? 1 : 0;
        a.empty += got.length === 0 ? 1 : 0;
        a.hit1AtZero += all[0] === q.target ? 1 : 0;
        a.hit3AtZero += all.slice(0, 3).includes(q.target) ? 1 : 0;
      }
      for (const q of set.absent) a.absentEmpty += (await ask(q, mode)).length === 0 ? 1 : 0;
      report[mode] = a;
      log(
        `notes (${path.basename(file)}) ${mode}: paraphrase hit@3 ${a.hit3}/${a.n} (min_score 0: ${a.hit3AtZero}/${a.n}), answered with no row ${a.empty}/${a.n}; absent things answered with no row ${a.absentEmpty}/${a.absentN}`,
      );
    }
    return { set: path.basename(file), notes: set.notes.length, modes: report };
  } finally {
    await svc.stop();
  }
}

module.exports = { runNotes };
