'use strict';
/**
 * Where the evaluation data (`locomo-dev.json`, `longmemeval-s-dev.jsonl.gz`) is: MEMSTORE_EVAL_DIR,
 * else `../shared/eval` beside the repository (a checkout next to shared/), else two levels up (a
 * git worktree one folder deeper). Every bench script reads the data from here.
 */
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');

function evalDir() {
  if (process.env.MEMSTORE_EVAL_DIR) return path.resolve(process.env.MEMSTORE_EVAL_DIR);
  const near = path.resolve(ROOT, '..', 'shared', 'eval');
  const far = path.resolve(ROOT, '..', '..', 'shared', 'eval');
  return fs.existsSync(near) || !fs.existsSync(far) ? near : far;
}

module.exports = { evalDir };
