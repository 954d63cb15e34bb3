/**
 * Jest runs CommonJS; oidc-provider and jose ship ES modules only (Node 24 itself loads them with
 * require(), jest's module system does not without --experimental-vm-modules). This transform turns
 * their files into CommonJS with TypeScript's transpiler (no type checking).
 */
const ts = require('typescript');

module.exports = {
  process(source, filename) {
    const out = ts.transpileModule(source, {
      fileName: filename,
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, allowJs: true, esModuleInterop: true, sourceMap: false },
    });
    return { code: out.outputText };
  },
  getCacheKey(source, filename) {
    return require('node:crypto').createHash('sha256').update(`esm-transformer-1\0${filename}\0${source}`).digest('hex');
  },
};
