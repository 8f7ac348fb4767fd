/**
 * A second process must not run the projections on a read store another live process projects
 * into (two would write the same documents and checkpoints; the embedded read store holds them in
 * each process's memory). A holder that is gone does not hold the store: a dead pid on this host
 * at once, another host's once its heartbeat is stale.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestService } from '../support/service.js';
import { holderCollection, projectionsHolderId, type HolderDoc } from '../../src/projections/holder.js';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkin-holder-'));
let sleeper: ChildProcess | undefined;
afterAll(() => {
  sleeper?.kill();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** Starts the api role on the data folder, makes `holder` the read store's projections holder, stops it (the doc stays). */
async function leaveHolder(holder: Omit<HolderDoc, '_id'>): Promise<void> {
  const service = await startTestService({}, { dataDir, role: 'api' });
  await service.platform.readStore.collection<HolderDoc>(holderCollection).replaceOne(projectionsHolderId, holder);
  await service.close();
}

describe('the projections holder', () => {
  it('refuses to start a second projecting process on the read store of a live one, naming it; starts once it is gone', async () => {
    sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 120000)'], { stdio: 'ignore' });
    const pid = sleeper.pid!;
    const now = () => new Date().toISOString();
    await leaveHolder({ pid, host: os.hostname(), startedAt: now(), heartbeatAt: now() });
    await expect(startTestService({}, { dataDir })).rejects.toThrow(new RegExp(`another process runs the projections on this read store \\(pid ${pid} on ${os.hostname()}`));
    // The api role alone does not project: it starts beside it.
    const api = await startTestService({}, { dataDir, role: 'api' });
    await api.close();

    // Killed: its pid is gone on this host, so a restart need not wait for the heartbeat to go stale.
    sleeper.kill('SIGKILL');
    await new Promise((resolve) => sleeper!.once('exit', resolve));
    const restarted = await startTestService({}, { dataDir });
    await restarted.close();

    // Another host's fresh heartbeat holds the store; a stale one (over 20 s) does not.
    await leaveHolder({ pid: 1, host: 'door-server-2', startedAt: now(), heartbeatAt: now() });
    await expect(startTestService({}, { dataDir })).rejects.toThrow(/pid 1 on door-server-2/);
    const old = new Date(Date.now() - 60_000).toISOString();
    await leaveHolder({ pid: 1, host: 'door-server-2', startedAt: old, heartbeatAt: old });
    const afterStale = await startTestService({}, { dataDir });
    await afterStale.close();
  }, 120_000);
});
