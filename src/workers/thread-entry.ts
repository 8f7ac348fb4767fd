/**
 * The workers' thread (src/workers/thread.ts): the send worker and the webhook dispatcher with
 * their own connections to the embedded event store's and bus's files, the main thread's read
 * store over a port.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { Config } from '../config.js';
import type { Services } from '../commands/services.js';
import { webhookSettings } from '../commands/webhooks.js';
import { EmbeddedBus } from '../adapters/bus/embedded.js';
import { RemoteReadStore } from '../adapters/readstore/remote.js';
import { systemClock } from '../shared/clock.js';
import { createLogger } from '../shared/logger.js';
import { createPlatform, createWorkers, retryForever } from '../main.js';
import type { FromThread, ThreadData, ToThread } from './thread.js';

const port = parentPort!;
const { config: cloned, readStoreKind, readStorePort } = workerData as ThreadData;
const tell = (message: FromThread) => port.postMessage(message);

/** Buffers arrive as Uint8Arrays (a Buffer loses its class crossing threads): the keyrings' keys become Buffers again. */
function revive<T>(value: T): T {
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength) as T;
  if (value instanceof Map) return new Map([...value].map(([k, v]) => [k, revive(v)])) as T;
  if (Array.isArray(value)) return value.map(revive) as T;
  if (value && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, revive(v)])) as T;
  }
  return value;
}

try {
  const config = revive(cloned) as Config;
  const logger = createLogger(config.logLevel).child({ thread: 'workers' });
  const metric = (method: Extract<FromThread, { type: 'metric' }>['method']) => (...args: unknown[]) => tell({ type: 'metric', method, args });
  const metrics = { countSend: metric('countSend'), countWebhookAttempt: metric('countWebhookAttempt'), observeAppend: metric('observeAppend'), setSendsBlockedOnCredentials: metric('setSendsBlockedOnCredentials') };
  const readStore = new RemoteReadStore(readStorePort, readStoreKind);
  const platform = createPlatform(config, logger, metrics, undefined, readStore);
  // The main thread's subscribers (projections, relay) read these rows from memory, not the file.
  platform.embeddedEventStore?.onAppend((durablePosition, rows) => tell({ type: 'appended', durablePosition, rows }));
  platform.dataKeys?.onErase((guestId) => tell({ type: 'erased', guestId }));
  const waits = new Map<number, () => void>();
  let nextWait = 0;
  const services: Services = {
    eventStore: platform.eventStore,
    readStore,
    clock: systemClock,
    logger,
    ...(platform.dataKeys ? { dataKeys: platform.dataKeys, storedEvents: platform.sealedEventStore } : {}),
    readYourWrites: (position) =>
      position < 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            const id = nextWait++;
            waits.set(id, resolve);
            tell({ type: 'readYourWrites', id, position });
          }),
    secretsKeyring: webhookSettings(config).keyring,
  };
  const workers = createWorkers(platform, services, config, metrics, { retention: false });
  for (const worker of workers) void retryForever(worker.name, () => worker.start(), logger);
  port.on('message', (message: ToThread) => {
    switch (message.type) {
      case 'published':
        if (platform.bus instanceof EmbeddedBus) platform.bus.announcePublished(message.topic, message.partitions);
        return;
      case 'erased':
        return platform.dataKeys?.erasedElsewhere(message.guestId);
      case 'readYourWritesDone':
        waits.get(message.id)?.();
        waits.delete(message.id);
        return;
      case 'stop':
        void (async () => {
          await Promise.allSettled(workers.map((w) => w.stop()));
          // The read store here only stops asking the main thread's, which stays open.
          await platform.close();
          tell({ type: 'stopped' });
        })();
        return;
    }
  });
  tell({ type: 'started' });
} catch (error) {
  tell({ type: 'failed', message: (error as Error).message });
}
