import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

/**
 * The admin page. Built into dist/web (after `nest build`, which empties dist/). Hashed assets go
 * under /admin-assets/, a path that cannot collide with /api, /docs, /redoc or /openapi.json;
 * the service serves them as immutable and index.html as no-cache (src/admin/web).
 */
export default defineConfig({
  root: here,
  base: '/',
  publicDir: false,
  logLevel: 'warn',
  build: {
    outDir: fileURLToPath(new URL('../dist/web', import.meta.url)),
    emptyOutDir: true,
    assetsDir: 'admin-assets',
    target: 'es2022',
    sourcemap: false,
    // Everything, the favicon included, is served by the service itself (CSP img-src allows data:).
    assetsInlineLimit: 8192,
    modulePreload: { polyfill: false },
  },
});
