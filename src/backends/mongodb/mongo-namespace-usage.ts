import type { NamespaceUsage, NamespaceUsageQuery } from '../ports/memory-index.port';
import type { Model } from 'mongoose';
import type { MongoModels } from './mongo-models';
import type { MemoryRecord } from './mongo.schemas';

/**
 * Usage per namespace on MongoDB (issue 43, decision 0155): aggregations grouping the memories
 * by namespace, their $match on the namespace-first indexes (ns_*), summing each memory's `size`
 * (the UTF-8 bytes of its content, written with it: FerretDB has no $strLenBytes). A namespace's
 * usage costs in proportion to its own memories, not the store's.
 */
export async function mongoNamespaceUsage(m: MongoModels, q: NamespaceUsageQuery): Promise<NamespaceUsage[]> {
  const and: Record<string, unknown>[] = [];
  if (q.after !== undefined) and.push({ namespace: { $gt: q.after } });
  if (q.names !== undefined) and.push({ namespace: { $in: [...q.names] } });
  if (q.prefix !== undefined) and.push({ $or: [{ namespace: q.prefix }, { namespace: { $gt: `${q.prefix}/`, $lt: `${q.prefix}0` } }] });
  const match = and.length === 0 ? { namespace: { $type: 'string' } } : and.length === 1 ? and[0] : { $and: and };
  // Two pipelines of one accumulator each: FerretDB sums only the first of two $sum accumulators of a $group.
  const group = (acc: { $sum: 1 | string }) =>
    m.memories.aggregate<{ _id: string; v: number }>([{ $match: match }, { $group: { _id: '$namespace', v: acc } }, { $sort: { _id: 1 } }, { $limit: q.limit }]).exec();
  const [counts, sizes] = await Promise.all([group({ $sum: 1 }), group({ $sum: '$size' })]);
  const bytes = new Map(sizes.map((r) => [r._id, r.v]));
  return counts.map((r) => ({ namespace: r._id, memories: r.v, bytes: bytes.get(r._id) ?? 0 }));
}

/** Gives memories written before `size` existed their size, in batches, once (later starts find none). */
export async function backfillContentSizes(memories: Model<MemoryRecord>): Promise<void> {
  for (;;) {
    const batch = await memories.collection
      .find({ size: { $exists: false } }, { projection: { _id: 1, content: 1 } })
      .limit(500)
      .toArray();
    if (batch.length === 0) return;
    await memories.collection.bulkWrite(
      batch.map((d) => ({
        updateOne: { filter: { _id: d._id }, update: { $set: { size: Buffer.byteLength(typeof d.content === 'string' ? d.content : '') } } },
      })),
      { ordered: false },
    );
  }
}
