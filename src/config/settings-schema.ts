import type { SettingKey } from './app-config';
import { CREDENTIAL_KEYS, HISTORY_KEEP_DEFAULT, HISTORY_KEEP_MAX, HISTORY_KEEP_MIN, MEMORY_COLLECTION_DEFAULT, PRESIGN_TTL_DEFAULT, PRESIGN_TTL_MAX, PRESIGN_TTL_MIN } from './setting-rules';

export type SettingFieldType = 'text' | 'url' | 'secret' | 'number';

export interface SettingField {
  key: SettingKey;
  label: string;
  type: SettingFieldType;
  secret: boolean;
  /** Required when the backend this section configures is in use. */
  required: boolean;
  help: string;
  placeholder?: string;
  /** The only values the field takes (the page shows a choice instead of a text box). */
  options?: string[];
  default?: string | number | null;
  /** Where the value is stored. */
  store: 'config_file' | 'credential_store';
}

export interface SettingSection {
  id: 'docdb' | 'objstore' | 'embeddings';
  title: string;
  description: string;
  fields: SettingField[];
}

function field(f: Omit<SettingField, 'store' | 'secret'> & { secret?: boolean }): SettingField {
  const secret = f.secret ?? false;
  return { ...f, secret, store: CREDENTIAL_KEYS.includes(f.key) ? 'credential_store' : 'config_file' };
}

/** The static form definition served by GET /api/schema (CONTRACT §5). */
export const SETTINGS_SCHEMA: { sections: SettingSection[] } = {
  sections: [
    {
      id: 'docdb',
      title: 'Document database',
      description: 'Index, metadata, full-text search, API tokens and admin sessions. Leave the URI empty to use the embedded SQLite database in the data directory.',
      fields: [
        field({
          key: 'docdb_uri',
          label: 'MongoDB connection string',
          type: 'secret',
          secret: true,
          required: false,
          help: 'mongodb:// or mongodb+srv:// URI. When set, MongoDB replaces the embedded database (no restart needed). Stored encrypted; the password is masked when shown.',
          placeholder: 'mongodb+srv://user:password@cluster0.example.mongodb.net/memstore',
          default: null,
        }),
        field({
          key: 'docdb_db',
          label: 'Database name',
          type: 'text',
          required: false,
          help: 'MongoDB database. Default: the database named in the URI, else "memstore".',
          placeholder: 'memstore',
          default: null,
        }),
        field({
          key: 'memory_collection',
          label: 'Memory collection',
          type: 'text',
          required: false,
          help: `MongoDB collection that holds the memory index. Default "${MEMORY_COLLECTION_DEFAULT}".`,
          placeholder: MEMORY_COLLECTION_DEFAULT,
          default: MEMORY_COLLECTION_DEFAULT,
        }),
        field({
          key: 'memory_history_keep',
          label: 'Versions kept per memory',
          type: 'number',
          required: false,
          help: `How many versions of each memory are kept as its history (${HISTORY_KEEP_MIN} to ${HISTORY_KEEP_MAX}, default ${HISTORY_KEEP_DEFAULT}); older versions' files are deleted on the next write.`,
          placeholder: String(HISTORY_KEEP_DEFAULT),
          default: HISTORY_KEEP_DEFAULT,
        }),
      ],
    },
    {
      id: 'objstore',
      title: 'Object store',
      description:
        'Where each memory is kept as a markdown file. Leave the bucket empty to use the filesystem under the data directory; set it to use an S3-compatible store (AWS S3, Cloudflare R2, MinIO...).',
      fields: [
        field({
          key: 'objstore_bucket',
          label: 'Bucket',
          type: 'text',
          required: false,
          help: 'When set, the S3-compatible store replaces the filesystem store. The bucket must exist.',
          placeholder: 'memory-store',
          default: null,
        }),
        field({
          key: 'objstore_endpoint',
          label: 'Endpoint',
          type: 'url',
          required: false,
          help: 'http(s) URL of the S3 API, e.g. http://127.0.0.1:9000 for MinIO. For Cloudflare R2 give the account id instead. An explicit endpoint wins over the account id; with neither, AWS S3 (us-east-1) is used.',
          placeholder: 'https://s3.eu-west-1.amazonaws.com',
          default: null,
        }),
        field({
          key: 'objstore_account_id',
          label: 'Cloudflare account id (R2)',
          type: 'text',
          required: false,
          help: 'Derives the endpoint https://<account_id>.r2.cloudflarestorage.com when no endpoint is given.',
          placeholder: '0123456789abcdef0123456789abcdef',
          default: null,
        }),
        field({
          key: 'objstore_access_key_id',
          label: 'Access key id',
          type: 'secret',
          secret: true,
          required: true,
          help: 'Needed when a bucket is set. Stored encrypted.',
          placeholder: 'AKIA...',
          default: null,
        }),
        field({
          key: 'objstore_secret_access_key',
          label: 'Secret access key',
          type: 'secret',
          secret: true,
          required: true,
          help: 'Needed when a bucket is set. Stored encrypted, never shown again.',
          default: null,
        }),
        field({
          key: 'objstore_public_base',
          label: 'Public base URL',
          type: 'url',
          required: false,
          help: 'Optional http(s) base under which the bucket is publicly readable (e.g. a custom domain). Download URLs are presigned either way.',
          placeholder: 'https://files.example.com',
          default: null,
        }),
        field({
          key: 'objstore_presign_ttl',
          label: 'Download URL lifetime (seconds)',
          type: 'number',
          required: false,
          help: `Lifetime of download URLs, ${PRESIGN_TTL_MIN} to ${PRESIGN_TTL_MAX} seconds (7 days). Default ${PRESIGN_TTL_DEFAULT}. Applies to the filesystem store too.`,
          placeholder: String(PRESIGN_TTL_DEFAULT),
          default: PRESIGN_TTL_DEFAULT,
        }),
      ],
    },
    {
      id: 'embeddings',
      title: 'Semantic search',
      description:
        'Embeddings let a search find memories by meaning as well as by words. "local" (the default when its model is installed) runs bge-small-en-v1.5 in-process, no key needed; "openai" calls any OpenAI-compatible /v1/embeddings (OpenAI, Ollama, vLLM, LM Studio); "none" keeps search keyword-only. Changing the model re-embeds every memory in the background; search keeps working meanwhile.',
      fields: [
        field({
          key: 'embedding_provider',
          label: 'Provider',
          type: 'text',
          required: false,
          help: 'local (the model installed with the service), openai (an OpenAI-compatible API: URL, key and model below) or none (keyword-only). Not set: local when the model files are installed, else none.',
          options: ['local', 'openai', 'none'],
          default: null,
        }),
        field({
          key: 'embedding_url',
          label: 'Embeddings API base URL (openai)',
          type: 'url',
          required: false,
          help: 'Base URL of an OpenAI-compatible API; /embeddings is appended. E.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1 (Ollama).',
          placeholder: 'https://api.openai.com/v1',
          default: null,
        }),
        field({
          key: 'embedding_api_key',
          label: 'API key (openai)',
          type: 'secret',
          secret: true,
          required: false,
          help: 'Sent as a Bearer token. Stored encrypted, never shown again. Not needed by local servers such as Ollama.',
          default: null,
        }),
        field({
          key: 'embedding_model',
          label: 'Model (openai)',
          type: 'text',
          required: false,
          help: 'Model name, e.g. text-embedding-3-small or nomic-embed-text.',
          placeholder: 'text-embedding-3-small',
          default: null,
        }),
        field({
          key: 'embedding_dimensions',
          label: 'Dimensions (openai)',
          type: 'text',
          required: false,
          help: 'Asked of models that can shorten their vectors; empty = the model’s own size.',
          placeholder: '1536',
          default: null,
        }),
        field({
          key: 'embedding_cosine_scale',
          label: 'Relevance scale (openai)',
          type: 'text',
          required: false,
          help: 'Two cosines: what this model gives text unrelated to a query, and what it gives a clear match (search with explain=true shows each row’s cosine). Relevance maps them to 0 and 1, and the floor (min_score) applies to that. Empty: the local model’s 0.55, 0.85; models whose cosines run lower need their own, or semantic matches fall below the floor.',
          placeholder: '0.55, 0.85',
          default: null,
        }),
      ],
    },
  ],
};
