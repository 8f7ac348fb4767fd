import { fileURLToPath } from 'node:url';
import { Worker as Thread, MessageChannel, type MessagePort } from 'node:worker_threads';
import type { Config } from '../config.js';
import type { Services } from '../commands/services.js';
import { EmbeddedBus } from '../adapters/bus/embedded.js';
import { serveReadStore } from '../adapters/readstore/remote.js';
import type { Metrics } from '../observability/metrics.js';
import type { Platform } from '../main.js';
import type { Worker } from './worker.js';
import type { StoredRow } from '../adapters/eventstore/sqlite.js';
import { backoffMs } from '../shared/backoff.js';

/** How long the thread has to stop its workers and close its connections before it is ended. */
const STOP_GRACE_MS = 10_000;
/** A thread that ran this long before it died is restarted after the shortest wait again. */
const STEADY_MS = 60_000;

/** What the workers' thread says to the main thread. */
export type FromThread =
  | { type: 'started' }
  | { type: 'stopped' }
  | { type: 'failed'; message: string }
  /** The thread appended these rows, and the events file is synced up to this position. */
  | { type: 'appended'; durablePosition: number; rows: StoredRow[] }
  | { type: 'erased'; guestId: string }
  | { type: 'metric'; method: 'countSend' | 'countWebhookAttempt' | 'observeAppend' | 'setSendsBlockedOnCredentials'; args: unknown[] }
  | { type: 'readYourWrites'; id: number; position: number };

/** What the main thread says to the workers' thread. */
export type ToThread =
  | { type: 'stop' }
  | { type: 'published'; topic: string; partitions: number[] }
  | { type: 'erased'; guestId: string }
  | { type: 'readYourWritesDone'; id: number };

/** The workers' thread as a worker of the service; `current` is the running thread, for tests and diagnostics. */
export interface WorkersThread extends Worker {
  current(): Thread | undefined;
}

export interface ThreadData {
  /** The entry thread-boot.cjs requires (from source). */
  entryFile: string;
  config: Config;
  readStoreKind: string;
  readStorePort: MessagePort;
}

/**
 * Whether the bus consumers (the send worker and the webhook dispatcher) can run on a thread of
 * their own: only with the embedded event store and bus, whose SQLite files a second connection
 * shares (issue 13, goal 6). The read store stays in the main thread, which answers the thread's
 * lookups; with a real server each role can be a process of its own instead (README, Roles).
 */
export function workersThreadPossible(config: Config): boolean {
  return !config.eventStoreUrl && !config.kafkaBrokers;
}

/**
 * The bus consumers on a worker thread (WORKERS_THREAD=on): the thread opens its own connections
 * to the event store's and the bus's files, asks this thread for read-model lookups and
 * read-your-writes, and forwards its metrics. Each side wakes the other at once: the thread's
 * appends wake this thread's subscribers (projections, relay), this thread's publishes wake the
 * thread's consumers, and an erasure on either side drops the guest's key from the other's cache.
 */
export function workersThread(
  platform: Platform,
  services: Services,
  config: Config,
  metrics: Metrics,
  /** `entryFile`: another entry for the thread, run from source (tests: one that refuses to start). */
  options: { entryFile?: string } = {},
): WorkersThread {
  let thread: Thread | undefined;
  let stopped: Promise<void> | undefined;
  /** Deaths in a row (each thread that ran less than STEADY_MS), and the pending restart. */
  let deaths = 0;
  let restart: NodeJS.Timeout | undefined;
  const logger = services.logger.child({ worker: 'workers-thread' });
  const send = (message: ToThread) => thread?.postMessage(message);
  if (platform.bus instanceof EmbeddedBus) platform.bus.onPublish((topic, partitions) => send({ type: 'published', topic, partitions }));
  platform.dataKeys?.onErase((guestId) => send({ type: 'erased', guestId }));
  platform.embeddedEventStore?.expectAnnouncements();

  /**
   * A thread that dies on its own (an uncaught error, a crash of its SQLite connections) is
   * started again after a backoff; its leased sends and unacknowledged messages are picked up
   * again as after a restart of the service (each email still goes out once).
   */
  const restartLater = (ranMs: number) => {
    deaths = ranMs >= STEADY_MS ? 1 : deaths + 1;
    const delay = backoffMs(deaths, 1_000);
    logger.error({ restartInMs: delay, deaths }, "the workers' thread exited on its own; starting it again (sends and webhook deliveries wait until then)");
    restart = setTimeout(() => {
      restart = undefined;
      if (stopped) return;
      start().then(
        () => logger.info({ deaths }, "the workers' thread is running again"),
        (error: unknown) => {
          // A thread that fails to start counts as one more quick death: tried again, later each time.
          logger.error({ err: error }, "the workers' thread could not start again");
          if (!stopped) restartLater(0);
        },
      );
    }, delay);
  };

  const start = () =>
    new Promise<void>((resolve, reject) => {
      if (thread || stopped) return resolve();
      const channel = new MessageChannel();
      serveReadStore(platform.readStore, channel.port1);
      // Under tsx (npm start, tests) the entry is TypeScript, loaded by thread-boot.cjs.
      const fromSource = import.meta.url.endsWith('.ts');
      const entry = new URL(fromSource ? './thread-entry.ts' : './thread-entry.js', import.meta.url);
      const data: ThreadData = {
        config,
        readStoreKind: platform.readStore.kind,
        readStorePort: channel.port2,
        entryFile: options.entryFile ?? fileURLToPath(entry),
      };
      const started = new Thread(fromSource ? new URL('./thread-boot.cjs', import.meta.url) : entry, {
        workerData: data,
        transferList: [channel.port2],
        ...(fromSource ? { execArgv: ['--import', 'tsx'] } : {}),
      });
      thread = started;
      const startedAt = Date.now();
      let running = false;
      started.on('message', (message: FromThread) => {
        switch (message.type) {
          case 'started':
            running = true;
            return resolve();
          case 'failed':
            thread = undefined;
            void started.terminate();
            return reject(new Error(`the workers' thread could not start: ${message.message}`));
          case 'appended':
            return platform.embeddedEventStore?.announceAppend(message.durablePosition, message.rows);
          case 'erased':
            return platform.dataKeys?.erasedElsewhere(message.guestId);
          case 'metric':
            return (metrics[message.method] as (...args: unknown[]) => void)(...message.args);
          case 'readYourWrites':
            return void services.readYourWrites(message.position).finally(() => send({ type: 'readYourWritesDone', id: message.id }));
        }
      });
      started.on('error', (error) => {
        logger.error({ err: error }, "the workers' thread failed");
        reject(error);
      });
      started.on('exit', (code) => {
        channel.port1.close();
        if (thread === started) thread = undefined;
        if (stopped) return;
        logger.error({ code }, "the workers' thread exited");
        // One that never started is the caller's to retry (start's rejection); one that ran is restarted here.
        if (running) restartLater(Date.now() - startedAt);
        else reject(new Error(`the workers' thread exited with code ${code} before it started`));
      });
    });

  return {
    name: 'workers-thread',
    start,
    current: () => thread,
    stop: () => {
      clearTimeout(restart);
      const running = thread;
      if (!running) {
        stopped ??= Promise.resolve();
        return stopped;
      }
      stopped ??= new Promise<void>((resolve) => {
        // Its workers stopped and its connections closed; a thread that does not say so in time is ended anyway.
        const guard = setTimeout(() => {
          logger.warn({ waitedMs: STOP_GRACE_MS }, "the workers' thread did not stop in time; ending it (its work in flight is redelivered)");
          void running.terminate();
        }, STOP_GRACE_MS);
        // However it ends (a crash while stopping included), the guard must not hold the process.
        running.once('exit', () => {
          clearTimeout(guard);
          resolve();
        });
        running.on('message', (message: FromThread) => {
          if (message.type !== 'stopped') return;
          clearTimeout(guard);
          void running.terminate();
        });
        send({ type: 'stop' });
      });
      return stopped;
    },
  };
}
