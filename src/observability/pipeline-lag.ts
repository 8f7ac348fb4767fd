/**
 * Scrape-time figures of the pipeline, read from the shared stores and the bus rather than
 * from this process's own runners: an api process reports the lag of projections, relay and
 * consumers that run in other processes too.
 */
import type { Bus } from '../adapters/bus/port.js';
import type { EventStore } from '../adapters/eventstore/port.js';
import type { ReadStore } from '../adapters/readstore/port.js';
import type { PipelineProbe } from './metrics.js';

export interface PipelineParts {
  eventStore: EventStore;
  readStore: ReadStore;
  bus: Bus;
  /** Projection names; their checkpoints are `projection:<name>` in the read store. */
  projections: string[];
  /** The relay's checkpoint name in the read store. */
  relayCheckpoint: string;
  /** Consumer groups and the topics each reads. */
  consumers: { group: string; topics: string[] }[];
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
      const [head, checkpoints] = await Promise.all([
        parts.eventStore.headPosition(),
        Promise.all(parts.projections.map(async (name) => (await parts.readStore.getCheckpoint(`projection:${name}`)) ?? -1)),
      ]);
      const age = await ages(checkpoints, head);
      return parts.projections.map((projection, i) => {
        const checkpoint = checkpoints[i]!;
        return { projection, events: Math.max(0, head - checkpoint), seconds: age.get(checkpoint) ?? 0 };
      });
    },

    async relay() {
      const [head, checkpoint] = await Promise.all([
        parts.eventStore.headPosition(),
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
