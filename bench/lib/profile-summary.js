'use strict';
/**
 * Reads a V8 .cpuprofile and summarises where the service spent its CPU: self time by
 * function and by "owner" (a node_modules package, one of our compiled files, node internals,
 * GC, idle). Self time of a node = its sample count × the mean sampling interval.
 */
const fs = require('node:fs');

/** Native frames have no URL: name the usual ones by what they do. */
const NATIVE = {
  all: 'SQLite (better-sqlite3 native)',
  get: 'SQLite (better-sqlite3 native)',
  run: 'SQLite (better-sqlite3 native)',
  iterate: 'SQLite (better-sqlite3 native)',
  exec: 'SQLite (better-sqlite3 native)',
  prepare: 'SQLite (better-sqlite3 native)',
  writev: 'socket writes (native)',
  writeBuffer: 'socket writes (native)',
  writeUtf8String: 'socket writes (native)',
  writeLatin1String: 'socket writes (native)',
  openFileHandle: 'file system (native)',
  read: 'file system (native)',
  fstat: 'file system (native)',
  close: 'file system (native)',
  writeFileUtf8: 'file system (native)',
  rename: 'file system (native)',
  fsync: 'file system (native)',
};

function owner(url, fn) {
  if (!url) return NATIVE[fn] ?? '(other native/V8)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  const dist = url.indexOf('/dist/');
  if (dist >= 0) return url.slice(dist + 1).replace(/^file:\/\//, '');
  if (url.startsWith('node:') || !url.includes('/')) return 'node internals';
  return url.replace(/^file:\/\//, '');
}

function summarise(file, top = 15) {
  const p = JSON.parse(fs.readFileSync(file, 'utf8'));
  const totalUs = p.endTime - p.startTime;
  const samples = p.samples.length || 1;
  const usPerSample = totalUs / samples;
  const byFn = new Map();
  const byOwner = new Map();
  let idle = 0;
  for (const n of p.nodes) {
    if (!n.hitCount) continue;
    const cf = n.callFrame;
    const ms = (n.hitCount * usPerSample) / 1000;
    if (cf.functionName === '(idle)') {
      idle += ms;
      continue;
    }
    const o = cf.functionName.startsWith('(') ? cf.functionName : owner(cf.url, cf.functionName);
    const key = `${cf.functionName || '(anonymous)'} ${o}${cf.url ? `:${cf.lineNumber + 1}` : ''}`;
    byFn.set(key, (byFn.get(key) || 0) + ms);
    byOwner.set(o, (byOwner.get(o) || 0) + ms);
  }
  const busy = [...byOwner.values()].reduce((a, b) => a + b, 0);
  const rank = (m) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, ms]) => ({ name, ms: Math.round(ms), pctOfBusy: busy ? Math.round((1000 * ms) / busy) / 10 : 0 }));
  return { file, wallMs: Math.round(totalUs / 1000), busyMs: Math.round(busy), idleMs: Math.round(idle), functions: rank(byFn), owners: rank(byOwner) };
}

module.exports = { summarise };

if (require.main === module) {
  const s = summarise(process.argv[2], Number(process.argv[3] || 25));
  console.log(`${s.file}: busy ${s.busyMs} ms of ${s.wallMs} ms`);
  console.log('\nSelf time by owner:');
  for (const o of s.owners) console.log(`  ${String(o.pctOfBusy).padStart(5)}%  ${o.name}`);
  console.log('\nSelf time by function:');
  for (const f of s.functions) console.log(`  ${String(f.pctOfBusy).padStart(5)}%  ${f.name}`);
}
