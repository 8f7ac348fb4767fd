import type { EventStore, StoredEvent, SubscribeOptions } from '../../src/adapters/eventstore/port.js';

/** Collects what a subscription to all events delivers, in the background, until `stop`. */
export function collectSubscription(store: EventStore, options?: SubscribeOptions): { seen: StoredEvent[]; stop: () => Promise<void> } {
  const seen: StoredEvent[] = [];
  const subscription = store.subscribeToAll(options);
  const running = (async () => {
    for await (const batch of subscription) seen.push(...batch.events);
  })();
  return {
    seen,
    stop: async () => {
      await subscription.stop();
      await running;
    },
  };
}
