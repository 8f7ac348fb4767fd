/**
 * A workers' thread entry for tests: while a file `refuse-workers-thread` is in the thread's data
 * folder it refuses to start (as a thread whose SQLite files cannot be opened would); else
 * it is the real entry.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import type { FromThread, ThreadData } from '../../src/workers/thread.js';

const { config } = workerData as ThreadData;
if (fs.existsSync(path.join(config.dataDir, 'refuse-workers-thread'))) {
  parentPort!.postMessage({ type: 'failed', message: 'refused by the test' } satisfies FromThread);
} else {
  // Loaded as thread-boot.cjs loads the real entry: required through tsx's hook.
  require('../../src/workers/thread-entry.ts');
}
