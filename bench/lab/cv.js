// Leave-one-conversation-out: pick the constants with the best R@5 on 4 conversations, score them on the 5th.
const { score, samples } = require('./lab.js');
const base = JSON.parse(process.argv[2] || '{}');
const grid = [];
for (const wk of [0.2, 0.3, 0.4, 0.5, 0.6]) for (const nw of [0, 0.1, 0.2, 0.25, 0.3, 0.4]) grid.push({ ...base, wk, nw });
const per = grid.map((o) => Object.fromEntries(samples.map((s) => [s, score(o, (q) => q.sample === s)])));
let held = { r1: 0, r5: 0, r10: 0, mrr: 0, n: 0 };
const picks = [];
for (const out of samples) {
  let best = -1,
    bi = 0;
  grid.forEach((o, i) => {
    let n = 0,
      r = 0;
    for (const s of samples)
      if (s !== out) {
        n += per[i][s].n;
        r += per[i][s].r5 * per[i][s].n;
      }
    if (r / n > best) {
      best = r / n;
      bi = i;
    }
  });
  const h = per[bi][out];
  picks.push(`${out}: wk ${grid[bi].wk} nw ${grid[bi].nw} → held-out R@5 ${h.r5} (in-sample ${best.toFixed(3)})`);
  for (const k of ['r1', 'r5', 'r10', 'mrr']) held[k] += h[k] * h.n;
  held.n += h.n;
}
console.log(picks.join('\n'));
console.log('LOCO held-out (question-weighted):', ['r1', 'r5', 'r10', 'mrr'].map((k) => `${k} ${(held[k] / held.n).toFixed(3)}`).join(' '));
let bi = 0,
  bv = -1;
grid.forEach((o, i) => {
  const r = score(o);
  if (r.r5 > bv) {
    bv = r.r5;
    bi = i;
  }
});
console.log('best on all five (in-sample):', JSON.stringify(grid[bi]), bv, ' fixed:', JSON.stringify(score(base)));
