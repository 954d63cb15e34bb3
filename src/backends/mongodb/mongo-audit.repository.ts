import { Prop, Schema, SchemaFactory } from '@nestjs/mongoose';
import type { Connection, Model } from 'mongoose';
import { AuditEntry, AuditQuery, AuditRepository } from '../ports/audit.repository';
import type { MongoExec } from './mongo-models';

@Schema({ versionKey: false, autoIndex: false, autoCreate: false, bufferCommands: false, strict: true, collection: 'audit_log' })
export class AuditRecord {
  /** newAuditId(): sorts by time. */
  @Prop({ type: String, required: true })
  _id!: string;

  @Prop({ type: Date, required: true })
  at!: Date;

  @Prop({ type: String, required: true })
  action!: string;

  @Prop({ type: String, required: true })
  outcome!: string;

  @Prop({ type: String, required: true })
  actorKind!: string;

  @Prop({ type: String, default: null })
  actorId!: string | null;

  @Prop({ type: String, default: null })
  actorName!: string | null;

  @Prop({ type: String, default: null })
  target!: string | null;

  @Prop({ type: String, default: null })
  address!: string | null;

  @Prop({ type: String, default: null })
  requestId!: string | null;

  /** JSON text, so that field names in it never meet MongoDB's rules on keys. */
  @Prop({ type: String, required: true })
  detail!: string;
}
export const AuditRecordSchema = SchemaFactory.createForClass(AuditRecord);

const INDEXES = [
  { key: { at: 1 } as Record<string, 1 | -1>, name: 'audit_at' },
  { key: { action: 1, _id: -1 } as Record<string, 1 | -1>, name: 'audit_action' },
  { key: { actorId: 1, _id: -1 } as Record<string, 1 | -1>, name: 'audit_actor' },
];

/**
 * The audit log in the `audit_log` collection. The model and its indexes are set up once per
 * connection, on first use (so the document database adapter does not need to know about it).
 */
export class MongoAuditRepository extends AuditRepository {
  private readonly models = new WeakMap<Connection, Promise<Model<AuditRecord>>>();

  constructor(private readonly exec: MongoExec) {
    super();
  }

  private run<T>(fn: (audit: Model<AuditRecord>) => Promise<T>): Promise<T> {
    return this.exec(async (m) => {
      const conn = m.memories.db;
      let model = this.models.get(conn);
      if (!model) {
        model = setUp(conn).catch((e) => {
          this.models.delete(conn);
          throw e;
        });
        this.models.set(conn, model);
      }
      return fn(await model);
    });
  }

  override append(e: AuditEntry): Promise<void> {
    return this.run(async (audit) => {
      await audit.collection.insertOne({
        _id: e.id,
        at: e.at,
        action: e.action,
        outcome: e.outcome,
        actorKind: e.actor.kind,
        actorId: e.actor.id,
        actorName: e.actor.name,
        target: e.target,
        address: e.address,
        requestId: e.requestId,
        detail: JSON.stringify(e.detail ?? {}),
      } as never);
    });
  }

  override list(q: AuditQuery): Promise<{ entries: AuditEntry[]; hasMore: boolean }> {
    return this.run(async (audit) => {
      const filter: Record<string, unknown> = {};
      if (q.action !== undefined) filter.action = String(q.action);
      if (q.actor !== undefined) filter.actorId = String(q.actor);
      if (q.since !== undefined) filter.at = { $gte: q.since };
      if (q.before !== undefined) filter._id = { $lt: String(q.before) };
      const rows = await audit
        .find(filter)
        .sort({ _id: -1 })
        .limit(q.limit + 1)
        .lean<AuditRecord[]>()
        .exec();
      return { entries: rows.slice(0, q.limit).map(toEntry), hasMore: rows.length > q.limit };
    });
  }

  override prune(before: Date): Promise<number> {
    return this.run(async (audit) => (await audit.deleteMany({ at: { $lt: before } }).exec()).deletedCount ?? 0);
  }
}

async function setUp(conn: Connection): Promise<Model<AuditRecord>> {
  const model = conn.models[AuditRecord.name] ? (conn.models[AuditRecord.name] as Model<AuditRecord>) : conn.model(AuditRecord.name, AuditRecordSchema, 'audit_log');
  let existing = new Set<string>();
  try {
    existing = new Set(((await model.collection.listIndexes().toArray()) as { name?: unknown }[]).map((i) => String(i.name)));
  } catch (e) {
    if ((e as { code?: number }).code !== 26) throw e; // NamespaceNotFound: no collection yet
  }
  // Only missing indexes: FerretDB 1.x drops the connection when asked to create an existing one.
  const missing = INDEXES.filter((i) => !existing.has(i.name));
  if (missing.length > 0) await model.collection.createIndexes(missing.map((i) => ({ key: i.key, name: i.name })));
  return model;
}

function toEntry(r: AuditRecord): AuditEntry {
  return {
    id: r._id,
    at: new Date(r.at),
    action: r.action,
    outcome: r.outcome === 'failure' ? 'failure' : 'success',
    actor: { kind: r.actorKind as AuditEntry['actor']['kind'], id: r.actorId ?? null, name: r.actorName ?? null },
    target: r.target ?? null,
    address: r.address ?? null,
    requestId: r.requestId ?? null,
    detail: JSON.parse(r.detail) as Record<string, unknown>,
  };
}
