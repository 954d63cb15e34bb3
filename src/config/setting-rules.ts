import type { SettingKey } from './app-config';
import { FORBIDDEN_HOST, isForbiddenHost, mongoHosts } from '../common/outbound-address';
import { CosineScale, toCosineScale } from '../embeddings/embedding-provider.port';

/** Keys kept in the encrypted credential store (CONTRACT §5); the rest go to the config file. */
export const CREDENTIAL_KEYS: readonly SettingKey[] = ['docdb_uri', 'objstore_access_key_id', 'objstore_secret_access_key', 'embedding_api_key'];

/** Keys masked in GET /api/config. */
export const SECRET_KEYS: readonly SettingKey[] = CREDENTIAL_KEYS;

export const PRESIGN_TTL_DEFAULT = 3600;
export const PRESIGN_TTL_MIN = 1;
export const PRESIGN_TTL_MAX = 604800; // 7 days, the S3 presign maximum
export const MEMORY_COLLECTION_DEFAULT = 'memories';
/** Versions kept per memory (issue 9). */
export const HISTORY_KEEP_DEFAULT = 20;
export const HISTORY_KEEP_MIN = 1;
export const HISTORY_KEEP_MAX = 1000;
export const SETTING_MAX_LENGTH = 2048;

export const MASK = '********';

const HOST_LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

export function isHttpUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '' && !u.username && !u.password;
  } catch {
    return false;
  }
}

export function isMongoUri(v: string): boolean {
  if (!/^mongodb(\+srv)?:\/\/[^\s/?#]+/i.test(v)) return false;
  return !/\s/.test(v);
}

/** Parses a TTL given as an integer or a numeric string; NaN when it is neither. */
export function parsePresignTtl(v: unknown): number {
  if (typeof v === 'number') return Number.isInteger(v) ? v : NaN;
  if (typeof v === 'string' && /^\s*\d+\s*$/.test(v)) return Number(v.trim());
  return NaN;
}

/**
 * The rule for one non-empty setting value: null when valid, otherwise a sentence saying what is
 * expected. Used by the save DTO and to check values that come from the environment.
 */
export function checkSetting(key: SettingKey, value: string): string | null {
  if (value.length > SETTING_MAX_LENGTH) return `must be at most ${SETTING_MAX_LENGTH} characters`;
  switch (key) {
    case 'docdb_uri':
      if (!isMongoUri(value)) return 'must be a MongoDB connection string starting with mongodb:// or mongodb+srv://';
      return mongoHosts(value).some(isForbiddenHost) ? FORBIDDEN_HOST : null;
    case 'embedding_provider':
      return ['local', 'openai', 'none'].includes(value) ? null : "must be 'local', 'openai' or 'none'";
    case 'embedding_dimensions':
      return /^\s*\d{1,5}\s*$/.test(value) && Number(value) >= 1 && Number(value) <= 8192 ? null : 'must be a whole number from 1 to 8192';
    case 'embedding_cosine_scale':
      return parseCosineScale(value) ? null : 'must be two cosines from -1 to 1, the lower first, e.g. 0.2, 0.6';
    case 'embedding_model':
      return /^[\x21-\x7e]{1,200}$/.test(value) ? null : 'must be a model name of at most 200 printable characters without spaces';
    case 'objstore_endpoint':
    case 'embedding_url':
      // The service itself calls these: never a metadata service (issue 46).
      if (!isHttpUrl(value)) return 'must be an http:// or https:// URL without credentials';
      return isForbiddenHost(new URL(value).hostname) ? FORBIDDEN_HOST : null;
    case 'objstore_public_base':
      return isHttpUrl(value) ? null : 'must be an http:// or https:// URL without credentials';
    case 'objstore_account_id':
      return HOST_LABEL.test(value) ? null : 'must be an account id made of letters, digits and hyphens (it becomes part of a host name)';
    case 'objstore_bucket':
      return /^[A-Za-z0-9][A-Za-z0-9._-]{1,61}[A-Za-z0-9]$/.test(value) ? null : 'must be a bucket name of 3 to 63 letters, digits, dots, hyphens or underscores';
    case 'docdb_db':
      // eslint-disable-next-line no-control-regex -- MongoDB refuses NUL in a database name
      return /^[^/\\. "$*<>:|?\x00]{1,64}$/.test(value) ? null : 'must be a MongoDB database name (at most 64 characters, none of / \\ . " $ * < > : | ? or spaces)';
    case 'memory_collection':
      // eslint-disable-next-line no-control-regex -- MongoDB refuses NUL in a collection name
      return /^(?!system\.)[^$\x00]{1,120}$/.test(value) ? null : "must be a collection name (at most 120 characters, no '$', not starting with 'system.')";
    case 'objstore_presign_ttl': {
      const n = parsePresignTtl(value);
      if (Number.isNaN(n)) return 'must be a whole number of seconds';
      if (n < PRESIGN_TTL_MIN || n > PRESIGN_TTL_MAX) return `must be from ${PRESIGN_TTL_MIN} to ${PRESIGN_TTL_MAX} seconds`;
      return null;
    }
    case 'memory_history_keep': {
      const n = parsePresignTtl(value);
      if (Number.isNaN(n)) return 'must be a whole number of versions';
      if (n < HISTORY_KEEP_MIN || n > HISTORY_KEEP_MAX) return `must be from ${HISTORY_KEEP_MIN} to ${HISTORY_KEEP_MAX} versions`;
      return null;
    }
    default:
      return null;
  }
}

/** Masks a secret for display: the password inside a MongoDB URI, the middle of a key id, all of a secret key. */
export function maskSetting(key: SettingKey, value: string | null): string | null {
  if (value === null || value === '') return value;
  switch (key) {
    case 'docdb_uri':
      return maskMongoUri(value);
    case 'objstore_access_key_id':
      return value.length >= 12 ? `${value.slice(0, 4)}${MASK}${value.slice(-2)}` : MASK;
    default:
      return SECRET_KEYS.includes(key) ? MASK : value;
  }
}

/** `mongodb://user:secret@host/db` → `mongodb://user:********@host/db`; no password → unchanged. */
export function maskMongoUri(uri: string): string {
  const m = /^(mongodb(?:\+srv)?:\/\/)([^@/?#]*)@/i.exec(uri);
  if (!m) return uri;
  const userinfo = m[2];
  const colon = userinfo.indexOf(':');
  if (colon < 0) return uri;
  return `${m[1]}${userinfo.slice(0, colon)}:${MASK}@${uri.slice(m[0].length)}`;
}

/**
 * "zero, one" (setting embedding_cosine_scale): the cosine an embedding model gives text unrelated
 * to a query and the one it gives a clear match; null unless both are numbers in [-1, 1], zero below one.
 */
export function parseCosineScale(value: string): CosineScale | null {
  const m = /^\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*$/.exec(value);
  return m ? toCosineScale(Number(m[1]), Number(m[2])) : null;
}
