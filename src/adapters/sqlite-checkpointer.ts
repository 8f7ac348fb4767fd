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

interface Thread {
  worker: Worker;
  /** Releases waiting for the thread to close their connection, by message id. */
  waiting: Map<number, () => void>;
}

let thread: Thread | undefined;
let nextId = 0;
/** Files checkpointed by the current thread, with how many owners registered each. */
const registered = new Map<string, number>();
let onWarning: (file: string, message: string) => void = () => {};

function ensureThread(): Thread {
  if (thread) return thread;
  const worker = new Worker(workerSource, {
    eval: true,
    workerData: { driver: createRequire(import.meta.url).resolve('better-sqlite3'), intervalMs },
  });
  worker.unref();
  const started: Thread = { worker, waiting: new Map() };
  worker.on('message', (message: { type: string; id?: number; file?: string; message?: string }) => {
    if (message.type === 'removed') {
      started.waiting.get(message.id!)?.();
      started.waiting.delete(message.id!);
    } else if (message.type === 'warning') onWarning(message.file!, message.message!);
  });
  // A checkpointer that fails leaves checkpoints to SQLite's automatic backstop: never crash the owner.
  worker.on('error', (error: Error) => onWarning('(all)', `the background checkpoint thread stopped: ${error.message}`));
  worker.on('exit', () => {
    if (thread === started) {
      thread = undefined;
      registered.clear();
    }
    for (const release of started.waiting.values()) release();
    started.waiting.clear();
  });
  thread = started;
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
  const owner = ensureThread();
  const owners = registered.get(file) ?? 0;
  registered.set(file, owners + 1);
  if (owners === 0) owner.worker.postMessage({ type: 'add', file, synchronous });
  let released = false;
  return {
    release: () => {
      if (released) return Promise.resolve();
      released = true;
      // The thread this file was registered with has ended since: nothing holds the file.
      if (thread !== owner) return Promise.resolve();
      const left = (registered.get(file) ?? 1) - 1;
      if (left > 0) {
        registered.set(file, left);
        return Promise.resolve();
      }
      registered.delete(file);
      const id = nextId++;
      return new Promise<void>((resolve) => {
        owner.waiting.set(id, resolve);
        owner.worker.postMessage({ type: 'remove', file, id });
      }).then(() => {
        // No file left and no release under way: the thread ends, so a process (a test, a CLI)
        // keeps no thread it does not use. A later registration starts a new one.
        if (thread === owner && registered.size === 0 && owner.waiting.size === 0) {
          thread = undefined;
          void owner.worker.terminate();
        }
      });
    },
  };
}
