'use strict';
/**
 * Starts the built service (dist/src/main.js) in this process with the V8 CPU profiler under
 * the orchestrator's control (IPC): { cmd: 'start' } begins a profile, { cmd: 'stop', file }
 * writes it as a .cpuprofile (open in Chrome DevTools or speedscope). Used by `--profile`, so
 * each scenario gets its own profile; `node --cpu-prof` would only write one at a clean exit.
 */
const inspector = require('node:inspector');
const fs = require('node:fs');
const path = require('node:path');

const session = new inspector.Session();
session.connect();
const post = (method, params) => new Promise((resolve, reject) => session.post(method, params, (err, res) => (err ? reject(err) : resolve(res))));

process.on('message', async (/** @type {{ cmd: string, intervalUs?: number, file?: string }} */ msg) => {
  try {
    if (msg.cmd === 'start') {
      await post('Profiler.enable');
      await post('Profiler.setSamplingInterval', { interval: msg.intervalUs || 200 });
      await post('Profiler.start');
      process.send({ ok: true });
    } else if (msg.cmd === 'stop') {
      const { profile } = await post('Profiler.stop');
      fs.writeFileSync(msg.file, JSON.stringify(profile));
      process.send({ ok: true });
    }
  } catch (e) {
    process.send({ ok: false, error: String(e) });
  }
});
// The IPC channel must not keep the service alive after it shut down on SIGTERM.
process.channel?.unref();
require(path.resolve(process.argv[2]));
