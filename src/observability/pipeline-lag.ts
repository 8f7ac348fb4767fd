/**
 * Scrape-time figures of the pipeline, read from the shared stores and the bus rather than
 * from this process's own runners: an api process reports the lag of projections, relay and
 * consumers that run in other processes too.
 */
import { deadLetterTopic, isReadableBus, type Bus } from '../adapters/bus/port.js';
import type { EventFilter, EventStore } from '../adapters/eventstore/port.js';
import type { ReadStore } from '../adapters/readstore/port.js';
import { checkpointName } from '../projections/projection.js';
import type { PipelineProbe } from './metrics.js';

export interface PipelineParts {
  eventStore: EventStore;
  readStore: ReadStore;
  bus: Bus;
  /**
   * Projections: checkpoints `projection:<name>` in the read store. Lag is measured to the last
   * event each one's filter matches: the events after it (other streams, EventStoreDB's own)
   * never move its checkpoint on every store (docs/eventstore.md).
   */
  projections: { name: string; filter: EventFilter }[];
  /** The relay's checkpoint name in the read store. */
  relayCheckpoint: string;
  /** The events the relay publishes (default: all). */
  relayFilter?: EventFilter;
  /** Consumer groups and the topics each reads. */
  consumers: { group: string; topics: string[] }[];
  /** The topics whose dead letters are counted (`bus_dead_letters`). */
  deadLetterTopics?: string[];
  /** The read model of webhook deliveries (status pending | retrying | dead, deadLetteredAt). */
  webhookDeliveries: string;
  clock?: () => number;
}

export function pipelineProbe(parts: PipelineParts): PipelineProbe {
  const now = parts.clock ?? Date.now;
  /** Seconds since the oldest event after each position was recorded; positions share one read. */
  const ages = async (positions: number[], head: number): Promise<Map<number, number>> => {
    const behind = [...new Set(positions.filter((p) => p < head))];
    const entries = await Promise.all(behind.map(async (p) => [p, await ageOfEventAfter(parts.eventStore, p, now())] as const));
    return new Map(entries);
  };

  return {
    async projections() {
      const [heads, checkpoints] = await Promise.all([
        Promise.all(parts.projections.map((p) => parts.eventStore.headPosition(p.filter))),
        Promise.all(parts.projections.map(async (p) => (await parts.readStore.getCheckpoint(checkpointName(p))) ?? -1)),
      ]);
      const caughtUp = (i: number) => checkpoints[i]! >= heads[i]!;
      const age = await ages(checkpoints.filter((_, i) => !caughtUp(i)), Math.max(...heads));
      return parts.projections.map((projection, i) => {
        const checkpoint = checkpoints[i]!;
        return {
          projection: projection.name,
          events: Math.max(0, heads[i]! - checkpoint),
          seconds: caughtUp(i) ? 0 : (age.get(checkpoint) ?? 0),
        };
      });
    },

    async relay() {
      const [head, checkpoint] = await Promise.all([
        parts.eventStore.headPosition(parts.relayFilter),
        parts.readStore.getCheckpoint(parts.relayCheckpoint).then((c) => c ?? -1),
      ]);
      const age = await ages([checkpoint], head);
      return { events: Math.max(0, head - checkpoint), seconds: age.get(checkpoint) ?? 0 };
    },

    async consumers() {
      const rows = await Promise.all(
        parts.consumers.map(async ({ group, topics }) =>
          (await parts.bus.consumerLag(group, topics)).map((lag) => ({ group, topic: lag.topic, messages: lag.messages })),
        ),
      );
      return rows.flat();
    },

    async deadLetters() {
      const { bus } = parts;
      // A bus that cannot count what a topic holds (a test double) reports no dead-letter series.
      if (!isReadableBus(bus)) return [];
      return Promise.all(
        (parts.deadLetterTopics ?? []).map(async (topic) => {
          const [held, replayed] = await Promise.all([bus.heldMessages(deadLetterTopic(topic)), bus.heldMessages(`${deadLetterTopic(topic)}.replayed`)]);
          return { topic, held, replayed };
        }),
      );
    },

    async webhookDeliveries() {
      const deliveries = parts.readStore.collection(parts.webhookDeliveries);
      const [pending, deadLettered] = await Promise.all([
        deliveries.count({ status: { $in: ['pending', 'retrying'] } }),
        deliveries.count({ status: 'dead' }),
      ]);
      return { pending, deadLettered };
    },
  };
}

/** Seconds since the store recorded the first event after `position` (0 if there is none yet). */
async function ageOfEventAfter(store: EventStore, position: number, nowMs: number): Promise<number> {
  const subscription = store.subscribeToAll({ fromPosition: position, batchSize: 1 });
  try {
    const next = subscription[Symbol.asyncIterator]().next();
    const timeout = new Promise<undefined>((resolve) => void setTimeout(() => resolve(undefined), 2_000).unref());
    const result = await Promise.race([next, timeout]);
    const event = result && !result.done ? result.value.events[0] : undefined;
    return event ? Math.max(0, (nowMs - Date.parse(event.recordedAt)) / 1000) : 0;
  } finally {
    await subscription.stop();
  }
}
