import { matchesFilter, type EventStore, type StoredEvent, type Subscription } from '../adapters/eventstore/port.js';
import type { Bus } from '../adapters/bus/port.js';
import type { ReadStore } from '../adapters/readstore/port.js';
import type { Logger } from '../shared/logger.js';
import type { RelayRoute } from './topics.js';
import { backoffMs, sleep } from '../shared/backoff.js';
import { byTrace, runInCarriedTrace } from '../observability/trace.js';
import { dataOmitted, toMessage } from './event-message.js';

export const relayCheckpoint = 'relay';

/** The relay's checkpoint is written at most this often (and when it stops). */
const checkpointEveryMs = 200;

/**
 * Copies selected events from the event store to the bus, in order, at least once.
 * Its checkpoint lives in the read store; resetting it re-publishes history. It is written at
 * most every `checkpointEveryMs` and when the relay stops, not after every batch (a read-store
 * commit per scan was about 1% of the door's time): after a kill the relay publishes again what
 * it published in that last fraction of a second, with the same event ids, which every consumer
 * drops as a repeat (at least once, as before).
 */
export class Relay {
  private subscription?: Subscription;
  private loop?: Promise<void>;
  private running = false;
  private published = -1;
  private saved = -1;
  private savedAt = 0;
  /** Saves run one after the other, so a checkpoint never goes back. */
  private saving: Promise<void> = Promise.resolve();
  private trailing?: NodeJS.Timeout;

  constructor(
    private readonly eventStore: EventStore,
    private readonly bus: Bus,
    private readonly checkpoints: ReadStore,
    private readonly routes: RelayRoute[],
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    this.published = (await this.checkpoints.getCheckpoint(relayCheckpoint)) ?? -1;
    this.saved = this.published;
    this.running = true;
    this.loop = this.runForever();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.subscription?.stop();
    await this.loop;
    clearTimeout(this.trailing);
    await this.saveCheckpoint(); // does nothing when the last position is saved
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
          this.published = batch.position;
          if (Date.now() - this.savedAt >= checkpointEveryMs) await this.saveCheckpoint();
          else this.saveLater();
          failures = 0;
        }
        if (!this.running) break;
        // The store ended the subscription (a server restart, a dropped connection): subscribe again.
        failures += 1;
        const delay = backoffMs(failures);
        this.logger.warn({ position: this.published, retryInMs: delay }, 'the event store ended the relay subscription; resubscribing from its checkpoint');
        await sleep(delay);
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

  private saveCheckpoint(): Promise<void> {
    this.saving = this.saving.catch(() => undefined).then(async () => {
      const position = this.published;
      if (position === this.saved) return;
      await this.checkpoints.setCheckpoint(relayCheckpoint, position);
      this.saved = position;
      this.savedAt = Date.now();
    });
    return this.saving;
  }

  /** The last batches of a burst are saved shortly after, not only with the next batch. */
  private saveLater(): void {
    if (this.trailing) return;
    this.trailing = setTimeout(() => {
      this.trailing = undefined;
      this.saveCheckpoint().catch((error: unknown) =>
        this.logger.warn({ err: error, position: this.published }, 'relay checkpoint not saved; it is saved again with the next batch'),
      );
    }, checkpointEveryMs);
    this.trailing.unref();
  }

  private async publish(events: StoredEvent[]): Promise<void> {
    for (const route of this.routes) {
      const routed = events.filter((e) => matchesFilter(e, route.filter));
      if (routed.length === 0) continue;
      const messages = routed.map((event) => toMessage(event, { maxBytes: this.bus.maxMessageBytes }));
      for (const [index, message] of messages.entries()) {
        if (!dataOmitted(message)) continue;
        const event = routed[index]!;
        runInCarriedTrace(event.metadata, () =>
          this.logger.warn(
            { topic: route.topic, eventId: event.id, type: event.type, stream: event.streamName, revision: event.revision, maxMessageBytes: this.bus.maxMessageBytes },
            'relay published an event without its data: too large for the bus; consumers read it from the event store',
          ),
        );
      }
      await this.bus.publish(route.topic, messages);
      // One line per request whose events went out, in that request's trace.
      for (const group of byTrace(routed)) {
        runInCarriedTrace(group[0]!.metadata, () =>
          this.logger.info({ topic: route.topic, events: group.length, types: [...new Set(group.map((e) => e.type))], position: group[group.length - 1]!.position }, 'relay published'),
        );
      }
    }
  }
}
