/**
 * How long the comms history read models keep what they show: `comms_events` (GET
 * /comms/v1/api/comms/events, the reconciliation feed) and `webhook_deliveries` (the delivery
 * log). Both gain a document with every email and every provider report, for ever; the embedded
 * read store holds its documents in memory, so without a bound the api process grows with every
 * email ever sent (docs/operations.md, "What grows and how it is bounded").
 *
 * Only read-model documents go: the events stay in the event store, so nothing a guarantee rests
 * on is lost. The dispatcher's dedupe (a redelivered bus message schedules nothing) and the send
 * worker's (an invitation is emailed once) read the event streams, not these documents. A
 * delivery goes only once it is finished (delivered, failed, or dead and published to the
 * dead-letter topic) and unchanged for the whole window: one pending or retrying is never
 * removed, whatever its age, and the window is checked at start to be longer than the webhook
 * retry schedule (config.ts).
 */
import type { Collection, ReadStore } from '../adapters/readstore/port.js';
import type { CommsEventDoc, DeliveryDoc } from '../projections/webhooks.js';

export const DAY_MS = 86_400_000;

export interface CommsHistoryRetention {
  /** COMMS_HISTORY_RETENTION_DAYS: days a comms event and a finished delivery are kept; 0 keeps them for ever. */
  days: number;
}

/** The instant before which documents go, or undefined when the history is kept for ever. */
export function commsHistoryCutoff(retention: CommsHistoryRetention, now: Date): string | undefined {
  return retention.days > 0 ? new Date(now.getTime() - retention.days * DAY_MS).toISOString() : undefined;
}

/**
 * Deletes the comms events created before the window and the finished deliveries last changed
 * before it. A delivery is deleted only as it was read (a redelivery requested meanwhile keeps
 * it). Returns how many of each went.
 */
export async function pruneCommsHistory(
  readStore: ReadStore,
  retention: CommsHistoryRetention,
  now: Date,
): Promise<{ commsEvents: number; deliveries: number }> {
  const cutoff = commsHistoryCutoff(retention, now);
  if (cutoff === undefined) return { commsEvents: 0, deliveries: 0 };
  const deliveries = readStore.collection<DeliveryDoc>('webhook_deliveries');
  const finished = [
    { status: { $in: ['delivered', 'failed'] }, updatedAt: { $lt: cutoff } },
    // A dead delivery not yet on the dead-letter topic is published by the next resume: kept until then.
    { status: 'dead', deadLetteredAt: { $exists: true }, updatedAt: { $lt: cutoff } },
  ];
  let deliveriesDeleted = 0;
  for (const filter of finished) deliveriesDeleted += await deleteAsRead(deliveries, filter);
  const events = readStore.collection<CommsEventDoc>('comms_events');
  let eventsDeleted = 0;
  for await (const event of events.stream({ createdAt: { $lt: cutoff } })) {
    await events.deleteOne(event._id);
    eventsDeleted += 1;
  }
  return { commsEvents: eventsDeleted, deliveries: deliveriesDeleted };
}

async function deleteAsRead(deliveries: Collection<DeliveryDoc>, filter: Record<string, unknown>): Promise<number> {
  let deleted = 0;
  for await (const doc of deliveries.stream(filter)) {
    const { swapped } = await deliveries.swap(doc._id, { status: doc.status, updatedAt: doc.updatedAt }, null);
    if (swapped) deleted += 1;
  }
  return deleted;
}
