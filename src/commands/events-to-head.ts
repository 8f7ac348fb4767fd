import type { EventFilter, EventStore, StoredEvent } from '../adapters/eventstore/port.js';

/**
 * Every event `filter` matches, up to the store's head as of the call, a page at a time: the
 * offline admin commands' full read (hold-pending-sends, reapply-erasures). Events appended
 * meanwhile are neither waited for nor returned. `position` is how far the read got.
 */
export async function* eventsToHead(
  store: EventStore,
  filter: EventFilter,
  pageSize = 500,
): AsyncGenerator<{ events: StoredEvent[]; position: number; head: number }> {
  const head = await store.headPosition(filter);
  if (head < 0) return;
  const subscription = store.subscribeToAll({ fromPosition: -1, filter, batchSize: pageSize });
  try {
    for await (const batch of subscription) {
      yield { events: batch.events.filter((event) => event.position <= head), position: Math.min(batch.position, head), head };
      if (batch.position >= head) return;
    }
  } finally {
    await subscription.stop();
  }
}
