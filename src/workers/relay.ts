import { matchesFilter, type EventStore, type StoredEvent, type Subscription } from '../adapters/eventstore/port.js';
import type { Bus, OutgoingMessage } from '../adapters/bus/port.js';
import type { ReadStore } from '../adapters/readstore/port.js';
import type { Logger } from '../shared/logger.js';
import type { RelayRoute } from './topics.js';
import { backoffMs, sleep } from '../shared/backoff.js';
import { byTrace, runInCarriedTrace, traceHeaders } from '../observability/trace.js';

export const relayCheckpoint = 'relay';

/** The bus form of a stored event; consumers dedupe on `headers['event-id']`; the request's trace rides along. */
export function toMessage(event: StoredEvent): OutgoingMessage {
  return {
    key: event.streamName,
    value: JSON.stringify(event),
    headers: {
      'event-id': event.id,
      'event-type': event.type,
      'event-position': String(event.position),
      'tenant-id': event.metadata.tenantId,
      ...traceHeaders(event.metadata),
    },
  };
}

export const fromMessage = (value: string): StoredEvent => JSON.parse(value) as StoredEvent;

/**
 * Copies selected events from the event store to the bus, in order, at least once.
 * Its checkpoint lives in the read store; resetting it re-publishes history.
 */
export class Relay {
  private subscription?: Subscription;
  private loop?: Promise<void>;
  private running = false;
  private published = -1;

  constructor(
    private readonly eventStore: EventStore,
    private readonly bus: Bus,
    private readonly checkpoints: ReadStore,
    private readonly routes: RelayRoute[],
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    this.published = (await this.checkpoints.getCheckpoint(relayCheckpoint)) ?? -1;
    this.running = true;
    this.loop = this.runForever();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.subscription?.stop();
    await this.loop;
  }

  position(): number {
    return this.published;
  }

  private async runForever(): Promise<void> {
    let failures = 0;
    while (this.running) {
      try {
        this.subscription = this.eventStore.subscribeToAll({
          fromPosition: this.published,
          filter: { streamPrefixes: this.routes.flatMap((r) => r.filter.streamPrefixes ?? ['']) },
        });
        for await (const batch of this.subscription) {
          if (!this.running) break;
          await this.publish(batch.events);
          await this.checkpoints.setCheckpoint(relayCheckpoint, batch.position);
          this.published = batch.position;
          failures = 0;
        }
      } catch (error) {
        if (!this.running) break;
        failures += 1;
        const delay = backoffMs(failures);
        this.logger.error({ err: error, retryInMs: delay }, 'relay publish failed; retrying from its checkpoint');
        await this.subscription?.stop().catch(() => {});
        await sleep(delay);
      }
    }
  }

  private async publish(events: StoredEvent[]): Promise<void> {
    for (const route of this.routes) {
      const routed = events.filter((e) => matchesFilter(e, route.filter));
      if (routed.length === 0) continue;
      await this.bus.publish(route.topic, routed.map(toMessage));
      // One line per request whose events went out, in that request's trace.
      for (const group of byTrace(routed)) {
        runInCarriedTrace(group[0]!.metadata, () =>
          this.logger.info({ topic: route.topic, events: group.length, types: [...new Set(group.map((e) => e.type))], position: group[group.length - 1]!.position }, 'relay published'),
        );
      }
    }
  }
}
