#!/usr/bin/env node
/**
 * Regenerates src/openapi.ts (the API's schema types) from the service's OpenAPI document with
 * openapi-typescript (pinned in this package's devDependencies).
 *
 *   node scripts/generate-types.js                       # from http://127.0.0.1:8080/openapi.json
 *   node scripts/generate-types.js http://host:port/openapi.json
 *   node scripts/generate-types.js ./openapi.json        # a saved document
 *   node scripts/generate-types.js ./openapi.json out.ts # write elsewhere (the repo's drift check)
 *
 * The client's methods are written by hand (src/index.ts); only the types are generated. The
 * repo's test test/clients/clients.spec.ts renders the document of the current sources with this
 * script and fails when the committed file differs (MEMSTORE_UPDATE_CLIENT_TYPES=1 rewrites it).
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const TARGET = path.join(__dirname, '..', 'src', 'openapi.ts');
const HEADER = [
  '/**',
  ' * GENERATED from the Memory Store OpenAPI document (/openapi.json) by openapi-typescript.',
  ' * Do not edit: run `npm run generate -w clients/typescript` against a running service.',
  ' */',
  '',
].join('\n');

/** The TypeScript text for an OpenAPI document (an object). */
async function render(document) {
  const { default: openapiTS, astToString } = require('openapi-typescript');
  const ast = await openapiTS(document, { alphabetize: true, defaultNonNullable: false });
  return HEADER + astToString(ast);
}

async function load(source) {
  if (/^https?:\/\//.test(source)) {
    const res = await fetch(source);
    if (!res.ok) throw new Error(`GET ${source}: HTTP ${res.status}`);
    return res.json();
  }
  return JSON.parse(fs.readFileSync(source, 'utf8'));
}

async function main() {
  const source = process.argv[2] ?? 'http://127.0.0.1:8080/openapi.json';
  const target = process.argv[3] ?? TARGET;
  const text = await render(await load(source));
  fs.writeFileSync(target, text);
  console.log(`wrote ${path.relative(process.cwd(), target)} from ${source}`);
}

module.exports = { render, TARGET };
if (require.main === module) {
  main().catch((e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
  });
}
