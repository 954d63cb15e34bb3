import { ApiPropertyOptional } from '@nestjs/swagger';
import { HistoryKeepValue, PresignTtlValue, SettingValue } from './setting-validators';

/**
 * POST /api/config body. Every field is optional: absent or null = unchanged, "" = cleared.
 * docdb_uri, objstore_access_key_id and objstore_secret_access_key go to the encrypted
 * credential store, the rest to the config file. Unknown fields are ignored.
 */
export class SaveConfigDto {
  @ApiPropertyOptional({
    type: String,
    nullable: true,
    example: 'mongodb+srv://memstore:password@cluster0.example.mongodb.net/memstore',
    description: 'MongoDB connection string (mongodb:// or mongodb+srv://). Secret.',
  })
  @SettingValue('docdb_uri')
  docdb_uri?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, example: 'memstore', description: 'MongoDB database name.' })
  @SettingValue('docdb_db')
  docdb_db?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, example: 'memories', description: 'MongoDB collection for the memory index.' })
  @SettingValue('memory_collection')
  memory_collection?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, example: '0123456789abcdef0123456789abcdef', description: 'Cloudflare account id (derives the R2 endpoint).' })
  @SettingValue('objstore_account_id')
  objstore_account_id?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, example: 'AKIAIOSFODNN7EXAMPLE', description: 'Object store access key id. Secret.' })
  @SettingValue('objstore_access_key_id')
  objstore_access_key_id?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, example: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', description: 'Object store secret access key. Secret.' })
  @SettingValue('objstore_secret_access_key')
  objstore_secret_access_key?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, example: 'memory-store', description: 'Bucket; when set the S3-compatible store is used.' })
  @SettingValue('objstore_bucket')
  objstore_bucket?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, example: 'https://s3.eu-west-1.amazonaws.com', description: 'Explicit http(s) endpoint of the S3 API.' })
  @SettingValue('objstore_endpoint')
  objstore_endpoint?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, example: 'https://files.example.com', description: 'Public http(s) base URL of the bucket.' })
  @SettingValue('objstore_public_base')
  objstore_public_base?: string | null;

  @ApiPropertyOptional({
    oneOf: [
      { type: 'integer', minimum: 1, maximum: 604800 },
      { type: 'string', pattern: '^\\s*\\d*\\s*$' },
    ],
    nullable: true,
    example: 3600,
    description: 'Download URL lifetime in seconds (1..604800, default 3600); a numeric string is accepted.',
  })
  @PresignTtlValue()
  objstore_presign_ttl?: number | string | null;

  @ApiPropertyOptional({
    oneOf: [
      { type: 'integer', minimum: 1, maximum: 1000 },
      { type: 'string', pattern: '^\\s*\\d*\\s*$' },
    ],
    nullable: true,
    example: 20,
    description: 'Versions kept per memory (1..1000, default 20); a numeric string is accepted.',
  })
  @HistoryKeepValue()
  memory_history_keep?: number | string | null;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    enum: ['local', 'openai', 'none'],
    example: 'local',
    description: 'Embedding provider: local (in-process model), openai (OpenAI-compatible API) or none (keyword-only).',
  })
  @SettingValue('embedding_provider')
  embedding_provider?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, example: 'https://api.openai.com/v1', description: 'Base URL of an OpenAI-compatible embeddings API (openai provider).' })
  @SettingValue('embedding_url')
  embedding_url?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, example: 'sk-...', description: 'API key of the embeddings API. Secret.' })
  @SettingValue('embedding_api_key')
  embedding_api_key?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, example: 'text-embedding-3-small', description: 'Embedding model name (openai provider).' })
  @SettingValue('embedding_model')
  embedding_model?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, example: '1536', description: 'Vector dimensions asked of the model (openai provider).' })
  @SettingValue('embedding_dimensions')
  embedding_dimensions?: string | null;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    example: '0.2, 0.6',
    description: 'The model’s cosine for unrelated text and for a clear match, mapped to relevance 0 and 1 (openai provider).',
  })
  @SettingValue('embedding_cosine_scale')
  embedding_cosine_scale?: string | null;
}
