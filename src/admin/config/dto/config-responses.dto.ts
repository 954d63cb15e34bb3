import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

const SOURCES = ['env', 'file', 'credentials', 'default'];

/** Every setting key with its value (null when unset). */
export class SettingValuesDto {
  @ApiProperty({ type: String, nullable: true, example: 'mongodb://memstore:********@db.example.com:27017/memstore' }) docdb_uri: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'memstore' }) docdb_db: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'memories' }) memory_collection: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) objstore_account_id: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'AKIA********LE' }) objstore_access_key_id: string | null;
  @ApiProperty({ type: String, nullable: true, example: '********' }) objstore_secret_access_key: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'memory-store' }) objstore_bucket: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'https://s3.eu-west-1.amazonaws.com' }) objstore_endpoint: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) objstore_public_base: string | null;
  @ApiProperty({ type: Number, example: 3600 }) objstore_presign_ttl: number;
  @ApiProperty({ type: Number, example: 20 }) memory_history_keep: number;
  @ApiProperty({ type: String, nullable: true, enum: ['local', 'openai', 'none'], example: 'local' }) embedding_provider: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) embedding_url: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) embedding_api_key: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) embedding_model: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) embedding_dimensions: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) embedding_cosine_scale: string | null;
}

/** Where each value in effect comes from. */
export class SettingSourcesDto {
  @ApiProperty({ enum: SOURCES, example: 'credentials' }) docdb_uri: string;
  @ApiProperty({ enum: SOURCES, example: 'file' }) docdb_db: string;
  @ApiProperty({ enum: SOURCES, example: 'default' }) memory_collection: string;
  @ApiProperty({ enum: SOURCES, example: 'default' }) objstore_account_id: string;
  @ApiProperty({ enum: SOURCES, example: 'credentials' }) objstore_access_key_id: string;
  @ApiProperty({ enum: SOURCES, example: 'credentials' }) objstore_secret_access_key: string;
  @ApiProperty({ enum: SOURCES, example: 'env' }) objstore_bucket: string;
  @ApiProperty({ enum: SOURCES, example: 'file' }) objstore_endpoint: string;
  @ApiProperty({ enum: SOURCES, example: 'default' }) objstore_public_base: string;
  @ApiProperty({ enum: SOURCES, example: 'default' }) objstore_presign_ttl: string;
  @ApiProperty({ enum: SOURCES, example: 'default' }) memory_history_keep: string;
  @ApiProperty({ enum: SOURCES, example: 'default' }) embedding_provider: string;
  @ApiProperty({ enum: SOURCES, example: 'default' }) embedding_url: string;
  @ApiProperty({ enum: SOURCES, example: 'default' }) embedding_api_key: string;
  @ApiProperty({ enum: SOURCES, example: 'default' }) embedding_model: string;
  @ApiProperty({ enum: SOURCES, example: 'default' }) embedding_dimensions: string;
  @ApiProperty({ enum: SOURCES, example: 'default' }) embedding_cosine_scale: string;
}

export class ActiveBackendsDto {
  @ApiProperty({ example: 'sqlite', description: "Active document database adapter: 'sqlite' or 'mongodb'." }) docdb: string;
  @ApiProperty({ example: 'filesystem', description: "Active object store adapter: 'filesystem' or 's3'." }) objstore: string;
}

export class ConfigResponseDto {
  @ApiProperty({ example: true }) ok: boolean;
  @ApiProperty({ type: SettingValuesDto, description: 'Values in effect; secrets masked.' }) config: SettingValuesDto;
  @ApiProperty({ type: SettingSourcesDto }) sources: SettingSourcesDto;
  @ApiProperty({ example: true }) complete: boolean;
  @ApiProperty({ type: [String], example: [] }) missing: string[];
  @ApiProperty({ example: 'Document database: embedded SQLite at ./data/memstore.db. Object store: filesystem at ./data/objects. Settings complete.' }) status: string;
  @ApiProperty({ type: ActiveBackendsDto }) active: ActiveBackendsDto;
}

export class RawConfigResponseDto {
  @ApiProperty({ example: true }) ok: boolean;
  @ApiProperty({ type: SettingValuesDto, description: 'Values in effect, unmasked.' }) config: SettingValuesDto;
}

export class SaveConfigResponseDto {
  @ApiProperty({ example: true }) ok: boolean;
  @ApiProperty({ type: [String], example: ['objstore_bucket', 'objstore_endpoint'] }) saved: string[];
  @ApiProperty({ example: false }) complete: boolean;
  @ApiProperty({ type: [String], example: ['objstore_access_key_id', 'objstore_secret_access_key'] }) missing: string[];
  @ApiProperty({ type: [String], example: [], description: 'Saved keys still overridden by the environment (the saved value is not in effect).' }) overridden: string[];
  @ApiProperty({ type: ActiveBackendsDto, description: 'Adapters in effect after the save.' }) active: ActiveBackendsDto;
  @ApiProperty({ type: [String], example: [], description: 'Problems applying the new settings (e.g. a backend that could not be switched to).' }) warnings: string[];
}

export class FilePathDto {
  @ApiProperty({ example: '/var/lib/memstore/config.json' }) path: string;
  @ApiProperty({ example: true }) exists: boolean;
}

export class ConfigPathResponseDto {
  @ApiProperty({ example: true }) ok: boolean;
  @ApiProperty({ type: FilePathDto }) config_file: FilePathDto;
  @ApiProperty({ type: FilePathDto }) credential_store: FilePathDto;
}

export class SchemaFieldDto {
  @ApiProperty({ example: 'objstore_bucket' }) key: string;
  @ApiProperty({ example: 'Bucket' }) label: string;
  @ApiProperty({ enum: ['text', 'url', 'secret', 'number'], example: 'text' }) type: string;
  @ApiProperty({ example: false }) secret: boolean;
  @ApiProperty({ example: false, description: 'Required when the backend of its section is in use.' }) required: boolean;
  @ApiProperty({ example: 'When set, the S3-compatible store replaces the filesystem store.' }) help: string;
  @ApiPropertyOptional({ example: 'memory-store' }) placeholder?: string;
  @ApiPropertyOptional({ type: [String], example: ['local', 'openai', 'none'], description: 'The only values the field takes (the page shows a choice).' }) options?: string[];
  @ApiPropertyOptional({ oneOf: [{ type: 'string' }, { type: 'number' }], nullable: true, example: null }) default?: string | number | null;
  @ApiProperty({ enum: ['config_file', 'credential_store'], example: 'config_file' }) store: string;
}

export class SchemaSectionDto {
  @ApiProperty({ enum: ['docdb', 'objstore', 'embeddings'], example: 'objstore' }) id: string;
  @ApiProperty({ example: 'Object store' }) title: string;
  @ApiProperty({ example: 'Where each memory is kept as a markdown file.' }) description: string;
  @ApiProperty({ type: [SchemaFieldDto] }) fields: SchemaFieldDto[];
}

export class SchemaDto {
  @ApiProperty({ type: [SchemaSectionDto] }) sections: SchemaSectionDto[];
}

export class SchemaResponseDto {
  @ApiProperty({ example: true }) ok: boolean;
  @ApiProperty({ type: SchemaDto }) schema: SchemaDto;
}

export class BackendTestResultDto {
  @ApiProperty({ example: true }) ok: boolean;
  @ApiProperty({ example: 'sqlite' }) backend: string;
  @ApiProperty({ example: 3 }) latency_ms: number;
  @ApiPropertyOptional({ example: 'embedded SQLite at ./data/memstore.db: wrote, read and deleted a probe' }) detail?: string;
  @ApiPropertyOptional({ example: "Object store unavailable: bucket 'x' does not exist" }) error?: string;
}

export class BackendTestResultsDto {
  @ApiPropertyOptional({ type: BackendTestResultDto }) docdb?: BackendTestResultDto;
  @ApiPropertyOptional({ type: BackendTestResultDto }) objstore?: BackendTestResultDto;
}

export class TestBackendsResponseDto {
  @ApiProperty({ example: true, description: 'The request succeeded; each result says whether its backend works.' }) ok: boolean;
  @ApiProperty({ type: BackendTestResultsDto }) results: BackendTestResultsDto;
}

export class DeriveEndpointResponseDto {
  @ApiProperty({ example: true }) ok: boolean;
  @ApiProperty({ example: 'https://0123456789abcdef0123456789abcdef.r2.cloudflarestorage.com' }) endpoint: string;
  @ApiProperty({ enum: ['explicit', 'account_id'], example: 'account_id' }) source: string;
}

export class BackendStatusDto {
  @ApiProperty({ example: 'sqlite' }) backend: string;
  @ApiProperty({ example: true }) ok: boolean;
  @ApiProperty({ example: 'embedded SQLite at ./data/memstore.db' }) detail: string;
}

/** Semantic search: the embedding provider in effect and how far the embedding queue is. */
export class EmbeddingStatusDto {
  @ApiProperty({ enum: ['local', 'openai', 'none'], example: 'local' }) provider: string;
  @ApiProperty({ type: String, nullable: true, example: 'bge-small-en-v1.5' }) model: string | null;
  @ApiProperty({ type: Number, nullable: true, example: 384 }) dimensions: number | null;
  @ApiProperty({ type: Number, nullable: true, example: 0, description: 'Memories waiting for a vector of the current model (null when it could not be counted).' }) pending: number | null;
  @ApiProperty({ type: Number, nullable: true, example: 42, description: 'Memories with a vector of the current model.' }) embedded: number | null;
  @ApiProperty({ type: Number, nullable: true, example: 0, description: 'Waiting memories whose last attempt failed (retried with backoff).' }) failing: number | null;
  @ApiProperty({ type: String, nullable: true, example: null }) last_error: string | null;
  @ApiProperty({ enum: ['keyword-only', 'ready', 'embedding', 're-embedding'], example: 'ready' }) state: string;
  @ApiProperty({ type: Number, nullable: true, example: 1, description: 'Share of memories embedded with the current model, 0..1.' }) progress: number | null;
  @ApiProperty({ type: String, nullable: true, example: null, description: 'Why search is keyword-only, when it is.' }) reason: string | null;
}

export class MemoryStatusDto {
  @ApiProperty({ type: Number, nullable: true, example: 42, description: 'Number of memories (null when it could not be counted).' }) count: number | null;
  @ApiProperty({ type: String, nullable: true, example: 'fts5' }) search_mode: string | null;
}

export class StatusResponseDto {
  @ApiProperty({ example: true }) ok: boolean;
  @ApiProperty({ type: BackendStatusDto }) docdb: BackendStatusDto;
  @ApiProperty({ type: BackendStatusDto }) objstore: BackendStatusDto;
  @ApiProperty({ example: 'http://127.0.0.1:8080' }) public_url: string;
  @ApiProperty({ type: MemoryStatusDto }) memories: MemoryStatusDto;
  @ApiProperty({ type: EmbeddingStatusDto }) embeddings: EmbeddingStatusDto;
}

export class ReadyResponseDto {
  @ApiProperty({ example: true }) ok: true;
  @ApiProperty({ enum: ['ready'], example: 'ready' }) status: 'ready';
}

/** The 503 answer of GET /api/ready: the error envelope (documented as ErrorResponse) with two more fields. */
export interface NotReadyResponseDto {
  ok: false;
  status: 'not_ready';
  error: string;
  not_ready: Array<'docdb' | 'objstore'>;
}
