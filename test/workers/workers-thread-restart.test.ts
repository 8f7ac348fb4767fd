/**
 * The workers' thread (WORKERS_THREAD=on) restarts itself when it dies on its own, and keeps
 * trying when a restart fails: a thread that cannot start (its files unreadable for a while) must
 * not leave the service without its send worker and webhook dispatcher until the next deploy.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { workersThread, type WorkersThread } from '../../src/workers/thread.js';
import { startTestService, type TestService } from '../support/service.js';
import { until } from '../support/flows.js';
import { loggedLines } from '../support/log-lines.js';

/** While this file is in the data folder, test/support/refusing-thread-entry.ts refuses to start. */
const REFUSE_FILE = 'refuse-workers-thread';

const { logger, lines } = loggedLines();

let service: TestService;
let worker: WorkersThread | undefined;

beforeAll(async () => {
  // The api role runs no workers of its own: the thread made here is the only one.
  service = await startTestService({}, { role: 'api' });
});
afterAll(async () => {
  await worker?.stop();
  await service?.close();
});

describe("the workers' thread restarts", () => {
  it('tries again, later each time, after a restart that failed, and runs once the cause is gone', async () => {
    const config = loadConfig({ DATA_DIR: service.dataDir, LOG_LEVEL: 'silent', SQLITE_SYNCHRONOUS: 'NORMAL' });
    const services = { ...service.services, logger };
    worker = workersThread(service.platform, services, config, service.metrics, {
      entryFile: path.resolve(import.meta.dirname, '../support/refusing-thread-entry.ts'),
    });
    await worker.start();
    const first = worker.current();
    expect(first).toBeDefined();

    fs.writeFileSync(path.join(service.dataDir, REFUSE_FILE), '');
    await first!.terminate();
    const refusals = () => lines.filter((l) => l.msg === "the workers' thread could not start again").length;
    // Two refused restarts in a row: the second is tried although the first failed, after a longer wait.
    await until(async () => (refusals() >= 2 ? true : undefined), 'two refused restarts', 60_000);
    const waits = lines.filter((l) => l.msg === "the workers' thread exited on its own; starting it again (sends and webhook deliveries wait until then)").map((l) => l.restartInMs as number);
    expect(waits.length).toBeGreaterThanOrEqual(2);
    expect(waits[1]!).toBeGreaterThan(waits[0]!);
    expect(worker.current()).toBeUndefined();

    fs.rmSync(path.join(service.dataDir, REFUSE_FILE));
    const again = await until(async () => worker!.current(), 'a running thread again', 120_000);
    expect(again).not.toBe(first);
    await until(async () => (lines.some((l) => l.msg === "the workers' thread is running again") ? true : undefined), 'the running-again log line', 60_000);
    // A hang guard only: the waits alone are 2 + 4 + 8 s, and each start compiles the thread's
    // entry; on a loaded machine that went past vitest's 20 s default.
  }, 240_000);

  it('stops without waiting out its guard once the thread has exited', async () => {
    await expect(worker!.stop()).resolves.toBeUndefined();
    expect(worker!.current()).toBeUndefined();
    worker = undefined;
  });
});
