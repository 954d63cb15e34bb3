import { randomBytes, randomInt } from 'node:crypto';

/**
 * Memory ids (CONTRACT §2): 24 lowercase hex characters in the ObjectId layout, so they are
 * time-ordered and valid MongoDB ObjectIds: 4 bytes of Unix seconds, 5 random bytes chosen once
 * per process, 3 bytes of an incrementing counter.
 */
const PROCESS_RANDOM = randomBytes(5);
let counter = randomInt(0xffffff);

export function newMemoryId(nowMs = Date.now()): string {
  const buf = Buffer.alloc(12);
  buf.writeUInt32BE(Math.floor(nowMs / 1000) >>> 0, 0);
  PROCESS_RANDOM.copy(buf, 4);
  counter = (counter + 1) % 0x1000000;
  buf.writeUIntBE(counter, 9, 3);
  return buf.toString('hex');
}

const ID = /^[0-9a-f]{24}$/;

export function isMemoryId(value: unknown): value is string {
  return typeof value === 'string' && ID.test(value);
}

/** Object store key of a memory's markdown file. */
export function memoryKey(id: string): string {
  return `memories/${id}.md`;
}

export const MEMORY_KEY_PREFIX = 'memories/';
const KEY = /^memories\/([0-9a-f]{24})\.md$/;

/** The id in a memory key, or null for any other key. */
export function idFromKey(key: string): string | null {
  return KEY.exec(key)?.[1] ?? null;
}
