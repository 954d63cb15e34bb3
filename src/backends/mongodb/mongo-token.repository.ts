import type { Scope } from '../../common/auth/principal';
import { DEFAULT_NAMESPACE } from '../../namespaces/namespace';
import { TokenPatch, TokenRecord, TokenRepository } from '../ports/token.repository';
import type { MongoExec, MongoModels } from './mongo-models';
import type { TokenDocRecord } from './mongo.schemas';

function toRecord(r: TokenDocRecord): TokenRecord {
  return {
    id: r._id,
    name: r.name,
    secretHash: r.secretHash,
    scopes: [...(r.scopes ?? [])] as Scope[],
    // Tokens from before namespaces have none: 'default' (issue 43).
    namespaces: r.namespaces && r.namespaces.length > 0 ? [...r.namespaces] : [DEFAULT_NAMESPACE],
    createdAt: new Date(r.createdAt),
    expiresAt: r.expiresAt ? new Date(r.expiresAt) : null,
    allowedIps: [...(r.allowedIps ?? [])],
    lastUsedAt: r.lastUsedAt ? new Date(r.lastUsedAt) : null,
    revokedAt: r.revokedAt ? new Date(r.revokedAt) : null,
    rateLimitPerMinute: typeof r.rateLimitPerMinute === 'number' ? r.rateLimitPerMinute : null,
    createdBy: typeof r.createdBy === 'string' ? r.createdBy : null,
  };
}

/** API tokens in the `tokens` collection (`_id` = token id, unique). */
export class MongoTokenRepository extends TokenRepository {
  constructor(private readonly exec: MongoExec) {
    super();
  }

  private run<T>(fn: (m: MongoModels) => Promise<T>): Promise<T> {
    return this.exec(fn);
  }

  override create(r: TokenRecord): Promise<void> {
    return this.run(async (m) => {
      await m.tokens.create({
        _id: r.id,
        name: r.name,
        secretHash: r.secretHash,
        scopes: r.scopes,
        namespaces: r.namespaces,
        createdAt: r.createdAt,
        expiresAt: r.expiresAt,
        allowedIps: r.allowedIps,
        lastUsedAt: r.lastUsedAt,
        revokedAt: r.revokedAt,
        rateLimitPerMinute: r.rateLimitPerMinute,
        createdBy: r.createdBy,
      });
    });
  }

  override findById(id: string): Promise<TokenRecord | null> {
    return this.run(async (m) => {
      const r = await m.tokens.findById(String(id)).lean<TokenDocRecord>().exec();
      return r ? toRecord(r) : null;
    });
  }

  override list(): Promise<TokenRecord[]> {
    return this.run(async (m) => {
      const rows = await m.tokens.find({}).sort({ createdAt: -1, _id: -1 }).lean<TokenDocRecord[]>().exec();
      return rows.map(toRecord);
    });
  }

  override update(id: string, patch: TokenPatch): Promise<TokenRecord | null> {
    return this.run(async (m) => {
      const set: Record<string, unknown> = {};
      for (const k of ['name', 'scopes', 'namespaces', 'expiresAt', 'allowedIps', 'revokedAt', 'lastUsedAt', 'rateLimitPerMinute'] as const) {
        if (patch[k] !== undefined) set[k] = patch[k];
      }
      const r = await m.tokens
        .findOneAndUpdate({ _id: String(id) }, { $set: set }, { new: true })
        .lean<TokenDocRecord>()
        .exec();
      return r ? toRecord(r) : null;
    });
  }

  override delete(id: string): Promise<boolean> {
    return this.run(async (m) => (await m.tokens.deleteOne({ _id: String(id) }).exec()).deletedCount === 1);
  }
}
