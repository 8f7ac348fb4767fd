import { EventEmitter } from 'node:events';
import { matchesFilter, type EventFilter, type EventStore, type Subscription } from '../adapters/eventstore/port.js';
import type { Checkpoint, ReadStore, WriteOp } from '../adapters/readstore/port.js';
import type { Logger } from '../shared/logger.js';
import { checkpointName, type Projection } from './projection.js';
import { backoffMs, sleep } from '../shared/backoff.js';
import { byTrace, runInCarriedTrace } from '../observability/trace.js';
import { outdatedProjections, recordVersions, type OutdatedProjection } from './versions.js';

export interface RebuildProgress {
  projection: string;
  position: number;
  head: number;
  events: number;
}

/**
 * Runs projections from one subscription to all events: each projection keeps its own
 * checkpoint (stored with its documents), so one can be rebuilt while the others stay.
 */
export class ProjectionRunner {
  private readonly checkpoints = new Map<string, number>();
  private readonly progress = new EventEmitter();
  private subscription?: Subscription;
  private loop?: Promise<void>;
  private running = false;
  /** From start until the runner first reaches the head it found then: what it logs when done. */
  private catchingUp?: { position: number; head: number; events: number; startedAt: number };
  /** While `rebuild` runs: what it rebuilds and how far it is (readiness reports it). */
  private rebuildingNow?: RebuildProgress & { projections: string[] };

  constructor(
    private readonly eventStore: EventStore,
    private readonly readStore: ReadStore,
    readonly projections: Projection[],
    private readonly logger: Logger,
    private readonly options: { batchSize?: number; retryDelayMs?: number } = {},
  ) {
    this.progress.setMaxListeners(0);
  }

  async start(): Promise<void> {
    for (const projection of this.projections) {
      for (const collection of projection.collections) {
        for (const index of collection.indexes) await this.readStore.collection(collection.name).createIndex(index);
      }
      this.checkpoints.set(projection.name, (await this.readStore.getCheckpoint(checkpointName(projection))) ?? -1);
    }
    // Those that have built nothing yet build with this code (src/projections/versions.ts).
    await recordVersions(
      this.readStore,
      this.projections.filter((p) => (this.checkpoints.get(p.name) ?? -1) < 0),
    );
    // Behind at start (a crash or stop during an import, a new projection): said now and when
    // caught up, so a long catch-up is visible in the log (its batches log `projections applied`).
    const position = this.position();
    const head = await this.eventStore.headPosition(this.filter).catch(() => undefined);
    if (head !== undefined && head > position) {
      this.catchingUp = { position, head, events: 0, startedAt: Date.now() };
      this.logger.info({ position, head }, 'projections catching up');
    }
    this.running = true;
    this.loop = this.runForever();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.subscription?.stop();
    await this.loop;
    this.loop = undefined;
  }

  /** The projections whose read models another version of their code built (src/projections/versions.ts). */
  outdated(): Promise<OutdatedProjection[]> {
    return outdatedProjections(this.readStore, this.projections);
  }

  /** The rebuild in progress, if any. */
  get rebuilding(): (RebuildProgress & { projections: string[] }) | undefined {
    return this.rebuildingNow;
  }

  /** From start until the runner first reaches the head it found then (readiness reports it). */
  get catchingUpTo(): { position: number; head: number } | undefined {
    return this.catchingUp && { position: this.position(), head: this.catchingUp.head };
  }

  /** The position every projection has processed through. */
  position(): number {
    return Math.min(...this.projections.map((p) => this.checkpoints.get(p.name) ?? -1));
  }

  /** The events the runner reads: every projection's streams. */
  get filter(): EventFilter {
    return filterOf(this.projections);
  }

  /**
   * How far the runner is from the last event it has to process (0 when caught up, even when
   * the store's tail is events no projection reads).
   */
  async lag(): Promise<{ position: number; head: number; lag: number }> {
    const head = await this.eventStore.headPosition(this.filter);
    const position = this.position();
    return { position, head, lag: Math.max(0, head - position) };
  }

  /**
   * Resolves true once every projection has processed `position`, false after `timeoutMs`.
   * A position no projection reads (a reservation, a batch log entry) counts as processed
   * once the last event they do read before it is: the store reports progress past skipped
   * events only now and then (EventStoreDB: at checkpoints).
   */
  async waitFor(position: number, timeoutMs = 2000): Promise<boolean> {
    if (position < 0 || this.position() >= position) return true;
    const deadline = Date.now() + timeoutMs;
    try {
      const head = await withDeadline(this.eventStore.headPosition(this.filter), timeoutMs);
      position = Math.min(position, head);
    } catch {
      // The store did not say: wait for the position itself.
    }
    if (this.position() >= position) return true;
    return new Promise((resolve) => {
      const onProgress = () => {
        if (this.position() < position) return;
        done(true);
      };
      const timer = setTimeout(() => done(false), Math.max(0, deadline - Date.now()));
      const done = (value: boolean) => {
        clearTimeout(timer);
        this.progress.off('progress', onProgress);
        resolve(value);
      };
      this.progress.on('progress', onProgress);
    });
  }

  /**
   * Empties the named projections' collections and replays every event into them.
   * The live loop is paused meanwhile and resumes afterwards.
   */
  async rebuild(names: string[], onProgress?: (progress: RebuildProgress) => void): Promise<void> {
    const targets = this.projections.filter((p) => names.length === 0 || names.includes(p.name));
    const unknown = names.filter((n) => !this.projections.some((p) => p.name === n));
    if (unknown.length > 0) {
      throw new Error(`unknown projection ${unknown.join(', ')}; known: ${this.projections.map((p) => p.name).join(', ')}`);
    }
    const wasRunning = this.running;
    if (wasRunning) await this.stop();
    const rebuilt = targets.map((p) => p.name);
    this.rebuildingNow = { projections: rebuilt, projection: rebuilt[0] ?? '', position: -1, head: -1, events: 0 };
    try {
      await this.rebuildTargets(targets, onProgress);
    } finally {
      this.rebuildingNow = undefined;
    }
    if (wasRunning) {
      this.running = true;
      this.loop = this.runForever();
    }
  }

  private async rebuildTargets(targets: Projection[], onProgress?: (progress: RebuildProgress) => void): Promise<void> {
    for (const projection of targets) {
      for (const collection of projection.collections) {
        await this.readStore.dropCollection(collection.name);
        for (const index of collection.indexes) await this.readStore.collection(collection.name).createIndex(index);
      }
      await this.readStore.setCheckpoint(checkpointName(projection), null);
      this.checkpoints.set(projection.name, -1);
    }
    const filter = filterOf(targets);
    const head = await this.eventStore.headPosition(filter);
    let events = 0;
    const report = (progress: RebuildProgress) => {
      if (this.rebuildingNow) Object.assign(this.rebuildingNow, progress);
      onProgress?.(progress);
    };
    if (head >= 0) {
      const subscription = this.eventStore.subscribeToAll({ fromPosition: -1, filter, batchSize: this.options.batchSize ?? 2000 });
      let reached = -1;
      try {
        for await (const batch of subscription) {
          events += batch.events.length;
          await this.applyBatch(batch.events, batch.position, targets);
          reached = batch.position;
          for (const projection of targets) report({ projection: projection.name, position: batch.position, head, events });
          if (batch.position >= head) break;
        }
      } finally {
        await subscription.stop();
      }
      if (reached < head) throw new Error(`the event store ended the rebuild at position ${reached}, before ${head}; run it again`);
    }
    await recordVersions(this.readStore, targets);
  }

  private async runForever(): Promise<void> {
    let failures = 0;
    while (this.running) {
      try {
        this.subscription = this.eventStore.subscribeToAll({
          fromPosition: this.position(),
          filter: this.filter,
          batchSize: this.options.batchSize ?? 1000,
        });
        for await (const batch of this.subscription) {
          if (!this.running) break;
          await this.applyBatch(batch.events, batch.position, this.projections);
          this.logApplied(batch.events);
          failures = 0;
          if (this.catchingUp) this.noteCatchUp(batch.events.length, batch.position);
        }
        if (!this.running) break;
        // The store ended the subscription (a server restart, a dropped connection): subscribe again.
        failures += 1;
        const delay = backoffMs(failures, this.options.retryDelayMs);
        this.logger.warn({ position: this.position(), retryInMs: delay }, 'the event store ended the projection subscription; resubscribing from the checkpoint');
        await sleep(delay);
      } catch (error) {
        if (!this.running) break;
        failures += 1;
        const delay = backoffMs(failures, this.options.retryDelayMs);
        this.logger.error({ err: error, retryInMs: delay }, 'projection batch failed; retrying from the checkpoint');
        await this.subscription?.stop().catch(() => {});
        await sleep(delay);
      }
    }
  }

  /**
   * One read-store write per delivered batch: every projection's ops, each guarded by its own
   * checkpoint, and every checkpoint moved, together (one transaction on the embedded store).
   */
  private async applyBatch(events: Parameters<Projection['apply']>[0][], position: number, projections: Projection[]) {
    const ops: WriteOp[] = [];
    const moved: { projection: Projection; checkpoint: Checkpoint }[] = [];
    for (const projection of projections) {
      const checkpoint = this.checkpoints.get(projection.name) ?? -1;
      if (position <= checkpoint) continue;
      const name = checkpointName(projection);
      for (const event of events) {
        if (event.position <= checkpoint || !matchesFilter(event, projection.filter)) continue;
        for (const op of projection.apply(event)) ops.push({ ...op, position: event.position, checkpoint: name });
      }
      moved.push({ projection, checkpoint: { name, position } });
    }
    if (moved.length === 0) return;
    await this.readStore.applyBatch(
      ops,
      moved.map((m) => m.checkpoint),
    );
    for (const { projection } of moved) this.checkpoints.set(projection.name, position);
    this.progress.emit('progress');
  }

  /** Counts a catch-up's events; at the head found at start, logs `projections caught up`. */
  private noteCatchUp(events: number, position: number): void {
    const catchingUp = this.catchingUp!;
    catchingUp.events += events;
    if (position < catchingUp.head) return;
    this.catchingUp = undefined;
    const { head, startedAt } = catchingUp;
    this.logger.info({ from: catchingUp.position, head, events: catchingUp.events, seconds: (Date.now() - startedAt) / 1000 }, 'projections caught up');
  }

  /** One line per request whose events the live loop applied, in that request's trace (a rebuild logs none). */
  private logApplied(events: Parameters<Projection['apply']>[0][]): void {
    if (!this.logger.isLevelEnabled('info')) return;
    for (const group of byTrace(events)) {
      runInCarriedTrace(group[0]!.metadata, () =>
        this.logger.info({ events: group.length, types: [...new Set(group.map((e) => e.type))], position: group[group.length - 1]!.position }, 'projections applied'),
      );
    }
  }
}

/** The union of the projections' stream filters (a projection without prefixes reads every stream). */
const filterOf = (projections: Projection[]): EventFilter => ({ streamPrefixes: projections.flatMap((p) => p.filter.streamPrefixes ?? ['']) });

function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}
