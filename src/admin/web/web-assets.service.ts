import { Injectable } from '@nestjs/common';
import * as fs from 'node:fs';
import * as path from 'node:path';

/** Hashed file names Vite writes under admin-assets/ (no path separators, no dot files). */
const ASSET_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,200}\.(js|css|svg|png|ico|woff2?|map)$/;

/**
 * Where the built admin page lives: `<package root>/dist/web` (Vite output, see web/vite.config.ts).
 * The package root is found by walking up from this file, so the same code works from the
 * compiled `dist/src/admin/web` and from the TypeScript sources under ts-jest.
 */
export function defaultWebRoot(from = __dirname): string {
  let dir = from;
  for (;;) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return path.join(dir, 'dist', 'web');
    const parent = path.dirname(dir);
    if (parent === dir) return path.resolve('dist', 'web');
    dir = parent;
  }
}

@Injectable()
export class WebAssetsService {
  readonly root = defaultWebRoot();
  readonly assetsDir = path.join(this.root, 'admin-assets');

  /** The page, or null when the front end has not been built (`npm run build`). */
  async indexHtml(): Promise<string | null> {
    try {
      return await fs.promises.readFile(path.join(this.root, 'index.html'), 'utf8');
    } catch {
      return null;
    }
  }

  /** The file name when it is a well-formed asset name, else null (no traversal, no dot files). */
  assetName(name: string): string | null {
    return ASSET_NAME.test(name) && !name.includes('..') ? name : null;
  }
}
