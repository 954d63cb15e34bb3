/**
 * Records of issue 9 (write integrity) in MongoDB: version claims (the compare-and-swap tokens
 * and the history of a memory), pending write intents, and Idempotency-Key records.
 */
import { Prop, Schema, SchemaFactory } from '@nestjs/mongoose';

const COMMON = { versionKey: false, autoIndex: false, autoCreate: false, bufferCommands: false, strict: true } as const;

/**
 * One version of a memory, `_id` "<memory id>:<version>". Inserting it is how a writer claims
 * the step from version n-1 to n: inserts with a unique `_id` are atomic on every MongoDB-wire
 * server (FerretDB 1.x included, where a conditional update is not), so only one writer can
 * take each step. kind 'write' entries are the memory's history; a 'delete' claim lives only
 * while the delete runs.
 */
@Schema({ ...COMMON, collection: 'memory_versions' })
export class VersionRecord {
  @Prop({ type: String, required: true })
  _id!: string;

  @Prop({ type: String, required: true })
  memoryId!: string;

  /** Its memory's namespace (issue 43); 'default' for claims of an earlier version (set when the database is opened). */
  @Prop({ type: String, default: 'default' })
  namespace?: string;

  @Prop({ type: Number, required: true })
  version!: number;

  @Prop({ type: String, required: true })
  kind!: 'write' | 'delete';

  @Prop({ type: String, default: null })
  objectKey!: string | null;

  @Prop({ type: String, default: null })
  title!: string | null;

  @Prop({ type: Number, default: 0 })
  size!: number;

  @Prop({ type: Date, required: true })
  updatedAt!: Date;

  @Prop({ type: Object, default: null })
  author!: { kind: 'token' | 'admin'; id: string; name: string | null } | null;

  /** When the claim was made (a claim whose memory never moved on is stale after a while). */
  @Prop({ type: Date, required: true })
  claimedAt!: Date;
}
export const VersionRecordSchema = SchemaFactory.createForClass(VersionRecord);
export const VERSION_INDEX = { key: { memoryId: 1, version: -1 } as Record<string, 1 | -1>, name: 'by_memory' };

@Schema({ ...COMMON, collection: 'write_intents' })
export class WriteIntentRecord {
  /** The object key. */
  @Prop({ type: String, required: true })
  _id!: string;

  @Prop({ type: String, required: true })
  memoryId!: string;

  @Prop({ type: Date, required: true })
  createdAt!: Date;

  /** Absent on records from before delete intents: a write. */
  @Prop({ type: String, default: 'write' })
  kind!: 'write' | 'delete';
}
export const WriteIntentRecordSchema = SchemaFactory.createForClass(WriteIntentRecord);

@Schema({ ...COMMON, collection: 'idempotency_keys' })
export class IdempotencyKeyRecord {
  @Prop({ type: String, required: true })
  _id!: string;

  @Prop({ type: String, required: true })
  fingerprint!: string;

  @Prop({ type: Number, default: null })
  status!: number | null;

  @Prop({ type: String, default: null })
  body!: string | null;

  @Prop({ type: Date, required: true })
  createdAt!: Date;
}
export const IdempotencyKeyRecordSchema = SchemaFactory.createForClass(IdempotencyKeyRecord);
