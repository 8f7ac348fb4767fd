/**
 * Which event store a read store belongs to (issue 12, item 9). Read models and checkpoints
 * (the projections' and the relay's) only mean something for the event store they were built
 * from: a service started with a fresh event store (a new DATA_DIR) against a read store that
 * holds another store's checkpoints would skip its own first events, silently.
 *
 * An event store's identity is the id of its first event (ids are random UUIDs, so two stores
 * never share one) plus a description for people. The read store records it in
 * `service_identity/event-store`. At start every role checks:
 *  - the recorded identity differs from this store's, or this store is empty while the read
 *    store recorded one: refuse, naming both;
 *  - a checkpoint is ahead of this store's end (its last event, the server's own included:
 *    EventStoreDB's checkpoints can be at one, past the last event of ours): refuse, naming both;
 *  - nothing recorded yet and the store has events: record it.
 * `READ_STORE_MISMATCH=rebuild` (projections or all role) drops the read models and the
 * checkpoints instead of refusing, records this store, and lets the projections and the relay
 * start over from the beginning.
 */
import type { EventStore } from '../adapters/eventstore/port.js';
import type { ReadStore } from '../adapters/readstore/port.js';
import type { Logger } from '../shared/logger.js';
import { checkpointName, type Projection } from './projection.js';

export const identityCollection = 'service_identity';
export const eventStoreIdentityId = 'event-store';

export interface StoreIdentityDoc {
  _id: string;
  firstEventId: string;
  firstEventAt: string;
  /** Where that store was, as its service described it: a file path or a server URL without credentials. */
  description: string;
  recordedAt: string;
}

export class StoreMismatchError extends Error {
  override readonly name = 'StoreMismatchError';
}

export interface IdentityCheck {
  eventStore: EventStore;
  readStore: ReadStore;
  /** The event store, for messages: "SQLite file /data/events.sqlite", "EventStoreDB at host:2113". */
  eventStoreDescription: string;
  /** The read store, for messages. */
  readStoreDescription: string;
  projections: Projection[];
  /** Checkpoint names besides the projections' (the relay's). */
  otherCheckpoints: string[];
  /** READ_STORE_MISMATCH=rebuild and this role may rebuild. */
  rebuildOnMismatch: boolean;
  logger: Logger;
}

/** Runs the check; throws StoreMismatchError on a refusal. Returns whether the identity is recorded. */
export async function checkStoreIdentity(check: IdentityCheck): Promise<{ recorded: boolean; rebuilt: boolean }> {
  const { eventStore, readStore, logger } = check;
  const identities = readStore.collection<StoreIdentityDoc>(identityCollection);
  const head = await eventStore.headPosition();
  const first = head >= 0 ? await firstEvent(eventStore) : undefined;
  const recorded = await identities.get(eventStoreIdentityId);
  const names = [...check.projections.map(checkpointName), ...check.otherCheckpoints];
  const checkpoints = await Promise.all(names.map(async (name) => ({ name, position: (await readStore.getCheckpoint(name)) ?? -1 })));
  const end = eventStore.endPosition ? await eventStore.endPosition() : head;
  const ahead = checkpoints.filter((c) => c.position > end);

  let problem: string | undefined;
  if (recorded && (!first || recorded.firstEventId !== first.id)) {
    problem =
      `the read store (${check.readStoreDescription}) holds the read models of another event store ` +
      `(${recorded.description}, first event ${recorded.firstEventId} of ${recorded.firstEventAt}), ` +
      `but this service's event store is ${check.eventStoreDescription} (${first ? `first event ${first.id} of ${first.recordedAt}` : 'empty'})`;
  } else if (ahead.length > 0) {
    problem =
      `the read store (${check.readStoreDescription}) has checkpoints ahead of this event store's last event ${end} ` +
      `(${ahead.map((c) => `${c.name} at ${c.position}`).join(', ')}): they belong to another event store than ` +
      `${check.eventStoreDescription}${recorded ? ` (recorded: ${recorded.description})` : ''}`;
  }
  if (problem) {
    if (!check.rebuildOnMismatch) {
      throw new StoreMismatchError(
        `${problem}. Point DATA_DIR/EVENTSTORE_URL at the event store these read models came from, or MONGO_URL/MONGO_DB at ` +
          'a read store of this event store; or start the projections role once with READ_STORE_MISMATCH=rebuild to drop ' +
          'these read models and rebuild them from this event store.',
      );
    }
    logger.warn({ problem }, 'READ_STORE_MISMATCH=rebuild: dropping the read models and checkpoints, rebuilding from this event store');
    for (const projection of check.projections) {
      for (const collection of projection.collections) await readStore.dropCollection(collection.name);
    }
    for (const { name } of checkpoints) await readStore.setCheckpoint(name, null);
    await identities.deleteOne(eventStoreIdentityId);
    const nowRecorded = first ? await record(check, first) : false;
    return { recorded: nowRecorded, rebuilt: true };
  }
  if (recorded) return { recorded: true, rebuilt: false };
  return { recorded: first ? await record(check, first) : false, rebuilt: false };
}

async function record(check: IdentityCheck, first: { id: string; recordedAt: string }): Promise<boolean> {
  await check.readStore.collection<StoreIdentityDoc>(identityCollection).updateOne(
    eventStoreIdentityId,
    {
      $setOnInsert: {
        firstEventId: first.id,
        firstEventAt: first.recordedAt,
        description: check.eventStoreDescription,
        recordedAt: new Date().toISOString(),
      },
    },
    { upsert: true },
  );
  // Another process may have recorded first: what counts is what the read store holds now.
  const now = await check.readStore.collection<StoreIdentityDoc>(identityCollection).get(eventStoreIdentityId);
  if (now && now.firstEventId !== first.id) {
    throw new StoreMismatchError(`the read store (${check.readStoreDescription}) was just claimed by another event store (${now.description})`);
  }
  check.logger.info({ firstEventId: first.id, eventStore: check.eventStoreDescription }, 'event store identity recorded in the read store');
  return true;
}

async function firstEvent(eventStore: EventStore): Promise<{ id: string; recordedAt: string } | undefined> {
  const subscription = eventStore.subscribeToAll({ fromPosition: -1, batchSize: 1 });
  try {
    for await (const batch of subscription) {
      const [event] = batch.events;
      if (event) return { id: event.id, recordedAt: event.recordedAt };
    }
    return undefined;
  } finally {
    await subscription.stop();
  }
}
