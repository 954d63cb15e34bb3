import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AppError, BackendUnavailableError, NotFoundError } from '../../common/errors';
import { InvalidObjectKeyError, objectKeyProblem, RESERVED_KEY_DIR } from '../ports/object-key';
import { ObjectStore, SignedUrl } from '../ports/object-store.port';
import { signFileUrl } from './url-signer';

/** Temporary files live here (same filesystem as the objects, so rename is atomic); no key may use it. */
const TMP_DIR = RESERVED_KEY_DIR;

/** ObjectStore on the local filesystem: one file per key under `root`, written atomically. */
export class FilesystemObjectStore extends ObjectStore {
  readonly kind = 'filesystem';
  readonly root: string;

  constructor(
    root: string,
    private readonly key: Buffer,
  ) {
    super();
    this.root = path.resolve(root);
  }

  /** Absolute path of a key, after checking it stays under the root. */
  pathOf(key: string): string {
    const problem = objectKeyProblem(key);
    if (problem) throw new InvalidObjectKeyError(problem);
    const full = path.resolve(this.root, ...key.split('/'));
    if (!full.startsWith(this.root + path.sep)) {
      throw new InvalidObjectKeyError('it leaves the store');
    }
    return full;
  }

  override async put(key: string, body: string | Buffer, _contentType: string): Promise<void> {
    const target = this.pathOf(key);
    const tmpDir = path.join(this.root, TMP_DIR);
    const tmp = path.join(tmpDir, `${path.basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}`);
    try {
      await fs.promises.mkdir(tmpDir, { recursive: true, mode: 0o700 });
      await fs.promises.mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
      const fh = await fs.promises.open(tmp, 'wx', 0o600);
      try {
        await fh.writeFile(body);
        await fh.sync();
      } finally {
        await fh.close();
      }
      await fs.promises.rename(tmp, target);
      await syncDir(path.dirname(target));
    } catch (e) {
      await fs.promises.rm(tmp, { force: true }).catch(() => undefined);
      throw this.translate(e, `cannot write '${key}'`);
    }
  }

  override async get(key: string): Promise<Buffer> {
    const file = this.pathOf(key);
    try {
      return await fs.promises.readFile(file);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') throw new NotFoundError('Object not found');
      throw this.translate(e, `cannot read '${key}'`);
    }
  }

  override async delete(key: string): Promise<void> {
    const file = this.pathOf(key);
    try {
      await fs.promises.unlink(file);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return;
      throw this.translate(e, `cannot delete '${key}'`);
    }
  }

  override async *list(prefix: string): AsyncIterable<string> {
    // The prefix is a key prefix; walk the directory part of it and filter on the rest.
    if (prefix.includes('\\') || prefix.includes('\0') || prefix.startsWith('/') || prefix.split('/').some((s) => s === '..' || s === '.')) {
      throw new InvalidObjectKeyError('the prefix could leave the store');
    }
    const dirPart = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : '';
    const start = dirPart ? path.join(this.root, ...dirPart.split('/')) : this.root;
    const stack: string[] = [start];
    while (stack.length > 0) {
      const dir = stack.pop()!;
      let entries: fs.Dirent[];
      try {
        entries = await fs.promises.readdir(dir, { withFileTypes: true });
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR') continue;
        throw this.translate(e, 'cannot list the store');
      }
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      const subdirs: string[] = [];
      for (const ent of entries) {
        const full = path.join(dir, ent.name);
        const key = path.relative(this.root, full).split(path.sep).join('/');
        if (key === TMP_DIR || key.startsWith(`${TMP_DIR}/`)) continue;
        if (ent.isDirectory()) subdirs.push(full);
        else if (ent.isFile() && key.startsWith(prefix)) yield key;
      }
      stack.push(...subdirs.reverse());
    }
  }

  override async sweepTemporary(olderThanMs: number): Promise<number> {
    const dir = path.join(this.root, TMP_DIR);
    let names: string[];
    try {
      names = await fs.promises.readdir(dir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw this.translate(e, 'cannot list the temporary files');
    }
    const cutoff = Date.now() - olderThanMs;
    let removed = 0;
    for (const name of names) {
      const file = path.join(dir, name);
      const st = await fs.promises.lstat(file).catch(() => null);
      if (!st || !st.isFile() || st.mtimeMs > cutoff) continue;
      await fs.promises.rm(file, { force: true });
      removed += 1;
    }
    return removed;
  }

  override async signedUrl(key: string, ttlSeconds: number, opts: { baseUrl: string; filename: string }): Promise<SignedUrl> {
    this.pathOf(key);
    // Rounded up to whole seconds: the link lives at least ttlSeconds.
    const expires = Math.ceil((Date.now() + Math.max(1, Math.floor(ttlSeconds)) * 1000) / 1000);
    return { url: signFileUrl(this.key, opts.baseUrl, key, expires), expiresAt: new Date(expires * 1000) };
  }

  override async probe(): Promise<void> {
    const key = `probe/${process.pid}-${randomBytes(6).toString('hex')}.txt`;
    const body = `probe ${new Date().toISOString()}`;
    try {
      await this.put(key, body, 'text/plain');
      const back = (await this.get(key)).toString('utf8');
      await this.delete(key);
      if (back !== body) throw new BackendUnavailableError('Object store', 'the probe file read back differently');
    } catch (e) {
      if (e instanceof BackendUnavailableError) throw e;
      throw new BackendUnavailableError('Object store', `filesystem probe failed: ${(e as Error).message}`);
    }
  }

  override describe(): string {
    return `filesystem at ${this.root}`;
  }

  override async close(): Promise<void> {}

  private translate(e: unknown, what: string): Error {
    if (e instanceof AppError) return e;
    const err = e as NodeJS.ErrnoException;
    const reason = err.code ? `${what}: ${err.code}` : `${what}: ${err.message}`;
    return new BackendUnavailableError('Object store', reason);
  }
}

async function syncDir(dir: string): Promise<void> {
  // Makes the rename durable; not supported on every platform, so best effort.
  try {
    const fh = await fs.promises.open(dir, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch {
    /* ignore */
  }
}
