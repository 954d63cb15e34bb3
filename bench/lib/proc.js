'use strict';
/** Resident memory and CPU time of another process, read from /proc (Linux); null elsewhere. */
const fs = require('node:fs');

const TICKS_PER_SEC = 100; // USER_HZ on Linux

function rssBytes(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** User + system CPU time in ms. */
function cpuMs(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SEC;
  } catch {
    return null;
  }
}

/** Samples RSS every `everyMs` until stop(); returns { peak, last, cpuMs } for the interval. */
function sampler(pid, everyMs = 200) {
  let peak = rssBytes(pid);
  let last = peak;
  const cpu0 = cpuMs(pid);
  const timer = setInterval(() => {
    const v = rssBytes(pid);
    if (v !== null) {
      last = v;
      if (peak === null || v > peak) peak = v;
    }
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      const cpu1 = cpuMs(pid);
      return { rssPeak: peak, rssEnd: last, cpuMs: cpu0 !== null && cpu1 !== null ? cpu1 - cpu0 : null };
    },
  };
}

function dirBytes(dir) {
  let total = 0;
  let files = 0;
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = `${d}/${e.name}`;
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) {
        total += fs.statSync(p).size;
        files++;
      }
    }
  };
  try {
    walk(dir);
  } catch {
    /* missing dir */
  }
  return { bytes: total, files };
}

module.exports = { rssBytes, cpuMs, sampler, dirBytes };
