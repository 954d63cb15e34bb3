const { score, samples } = require('./lab.js');
const exps = JSON.parse(process.argv[2]);
console.log('config'.padEnd(60), samples.join('  '), ' all');
for (const o of exps) console.log(JSON.stringify(o).padEnd(60), samples.map((s) => score(o, (q) => q.sample === s).r5.toFixed(3)).join('    '), score(o).r5);
