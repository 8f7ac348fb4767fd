/**
 * WAL checkpoints of the embedded SQLite files, off the event loop.
 *
 * SQLite copies the WAL back into the database file (a checkpoint: page copies and, at
 * synchronous NORMAL or FULL, two fsyncs) inside whichever commit crosses `wal_autocheckpoint`
 * pages. On the door's hot path that commit is an event-store group commit or a projection
 * batch, and the CPU profile of scans showed checkpoints as most of the read store's commit
 * time. Here one worker thread per process, with its own connection to each registered file,
 * runs `PRAGMA wal_checkpoint(PASSIVE)` every `intervalMs`: PASSIVE never waits for or blocks
 * readers and writers, so commits in the main thread only append to the WAL.
 *
 * Durability does not change: a commit is durable when its WAL frames are synced (the owner's
 * `synchronous`, which this connection copies, so the checkpoint syncs as SQLite's own would).
 * The owner's connection keeps an automatic checkpoint at `backstopPages` (SQLite's default is
 * 1,000), so the WAL stays bounded if this worker falls behind or is gone.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** The owner connection's automatic checkpoint while a background checkpointer runs (pages of 4 kB: ~40 MB). */
export const backstopPages = 10_000;

const intervalMs = 100;

// Plain JavaScript (an eval worker), so it starts without a TypeScript loader in development.
const workerSource = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const files = new Map();
const checkpointAll = () => {
  for (const [file, db] of files) {
    try {
      db.pragma('wal_checkpoint(PASSIVE)');
    } catch (error) {
      parentPort.postMessage({ type: 'warning', file, message: String(error && error.message || error) });
    }
  }
};
let timer;
parentPort.on('message', (message) => {
  if (message.type === 'add') {
    try {
      const db = new Database(message.file, { fileMustExist: true });
      db.pragma('busy_timeout = 0');
      db.pragma('synchronous = ' + message.synchronous);
      files.set(message.file, db);
    } catch (error) {
      parentPort.postMessage({ type: 'warning', file: message.file, message: String(error && error.message || error) });
    }
    timer ??= setInterval(checkpointAll, workerData.intervalMs);
  } else if (message.type === 'remove') {
    const db = files.get(message.file);
    files.delete(message.file);
    try { db && db.close(); } catch {}
    parentPort.postMessage({ type: 'removed', id: message.id });
  }
});
`;

interface Registration {
  file: string;
  refs: number;
}

let worker: Worker | undefined;
let nextId = 0;
const registered = new Map<string, Registration>();
const waiting = new Map<number, () => void>();
let onWarning: (file: string, message: string) => void = () => {};

function ensureWorker(): Worker {
  if (worker) return worker;
  const started = new Worker(workerSource, {
    eval: true,
    workerData: { driver: createRequire(import.meta.url).resolve('better-sqlite3'), intervalMs },
  });
  started.unref();
  started.on('message', (message: { type: string; id?: number; file?: string; message?: string }) => {
    if (message.type === 'removed') {
      waiting.get(message.id!)?.();
      waiting.delete(message.id!);
    } else if (message.type === 'warning') onWarning(message.file!, message.message!);
  });
  // A checkpointer that fails leaves checkpoints to SQLite's automatic backstop: never crash the owner.
  const gone = (error?: unknown) => {
    if (worker !== started) return;
    worker = undefined;
    if (error) onWarning('(all)', `the background checkpoint thread stopped: ${(error as Error).message ?? String(error)}`);
    for (const release of waiting.values()) release();
    waiting.clear();
    registered.clear();
  };
  started.on('error', gone);
  started.on('exit', () => gone());
  worker = started;
  return started;
}

/** Where the thread's warnings go (a file it could not open or checkpoint); the default drops them. */
export function onCheckpointWarning(handler: (file: string, message: string) => void): void {
  onWarning = handler;
}

/**
 * Checkpoints `file` in the background until the returned `release` is called (before the owner
 * closes its connection). The file must exist and be in WAL mode. `:memory:` is skipped.
 */
export function checkpointInBackground(file: string, synchronous: 'FULL' | 'NORMAL'): { release(): Promise<void> } {
  if (file === ':memory:' || file === '') return { release: async () => {} };
  const current = registered.get(file);
  if (current) current.refs += 1;
  else {
    registered.set(file, { file, refs: 1 });
    ensureWorker().postMessage({ type: 'add', file, synchronous });
  }
  let released = false;
  return {
    release: () => {
      if (released) return Promise.resolve();
      released = true;
      const registration = registered.get(file);
      if (!registration || --registration.refs > 0) return Promise.resolve();
      registered.delete(file);
      const running = worker;
      if (!running) return Promise.resolve();
      const id = nextId++;
      return new Promise<void>((resolve) => {
        waiting.set(id, resolve);
        running.postMessage({ type: 'remove', file, id });
      }).then(() => {
        // The last file gone: the thread ends, so a process (a test, a CLI) holds no thread it does not use.
        if (registered.size === 0 && worker === running) {
          worker = undefined;
          void running.terminate();
        }
      });
    },
  };
}
