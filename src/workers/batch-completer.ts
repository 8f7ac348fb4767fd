import type { EventStore } from '../adapters/eventstore/port.js';
import type { ReadStore } from '../adapters/readstore/port.js';
import { batchLogStream, completeOpenBatches, intentRetentionSeconds } from '../commands/batch-intents.js';
import type { Logger } from '../shared/logger.js';

/**
 * The process manager of multi-stream batches on a store without atomic batches: at start
 * and then periodically, finishes every batch whose intent was recorded but whose writer
 * never recorded an outcome (it crashed, or the store failed between two streams).
 */
export class BatchCompleter {
  private timer?: NodeJS.Timeout;
  private sweeping?: Promise<void>;

  constructor(
    private readonly eventStore: EventStore,
    private readonly checkpoints: ReadStore,
    private readonly logger: Logger,
    private readonly options: { intervalMs?: number; olderThanMs?: number } = {},
  ) {}

  async start(): Promise<void> {
    // Intents are not needed once their batch ended: the store may drop old ones (EventStoreDB scavenging).
    await this.eventStore.setMaxAge?.(batchLogStream, intentRetentionSeconds).catch((error: unknown) =>
      this.logger.warn({ err: error }, 'could not set the $maxAge of the batch log; it keeps every intent until set (docs/eventstore.md)'),
    );
    await this.sweepOnce();
    this.timer = setInterval(() => void this.sweep(), this.options.intervalMs ?? 30_000);
    this.timer.unref();
  }

  private async sweepOnce(): Promise<void> {
    const result = await completeOpenBatches(this.eventStore, {
      logger: this.logger,
      checkpoints: this.checkpoints,
      olderThanMs: this.options.olderThanMs ?? 30_000,
    });
    if (result.completed + result.aborted > 0) this.logger.info(result, 'unfinished batches completed');
  }

  private async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = this.sweepOnce()
      .catch((error: unknown) => this.logger.warn({ err: error }, 'batch completer sweep failed; it runs again later'))
      .finally(() => (this.sweeping = undefined));
    await this.sweeping;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.sweeping;
  }
}
