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
import { claimProjections, holderCollection, projectionsHolderId, type HolderDoc } from '../../src/projections/holder.js';
import { EmbeddedReadStore } from '../../src/adapters/readstore/embedded.js';
import type { ReadStore } from '../../src/adapters/readstore/port.js';
import { createLogger } from '../../src/shared/logger.js';

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
    await expect(startTestService({}, { dataDir })).rejects.toThrow(new RegExp(`another process runs the projections on this read store: a projections role \\(pid ${pid} on ${os.hostname()}`));
    // On the embedded read store no other role can serve beside it (its read models are that process's
    // memory: an api process there reads a copy never updated), so the refusal does not suggest ROLE=api.
    const refusal = await startTestService({}, { dataDir }).catch((error: Error) => error.message);
    expect(refusal).not.toMatch(/ROLE=api/);
    expect(refusal).toMatch(/Stop it first\. The embedded read store \(no MONGO_URL\) .* set MONGO_URL/);
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

  it('of two processes claiming in the same instant, lets one hold and names it to the other', async () => {
    // Two connections to one read store file, as two processes have: both read "no holder" first.
    // Before, each checked, found none, and wrote its own heartbeat: both projected.
    const file = path.join(dataDir, 'race.sqlite');
    const first = new EmbeddedReadStore(file);
    const second = new EmbeddedReadStore(file);
    const logger = createLogger('silent');
    try {
      expect(await first.collection(holderCollection).get(projectionsHolderId)).toBeNull();
      expect(await second.collection(holderCollection).get(projectionsHolderId)).toBeNull();
      const answers = await Promise.all([
        claimProjections(first, logger, { role: 'projections', as: { pid: 101, host: 'door-a' } }),
        claimProjections(second, logger, { role: 'projections', as: { pid: 202, host: 'door-b' } }),
      ]);
      const held = answers.filter((a) => 'holding' in a);
      const refused = answers.flatMap((a) => ('other' in a ? [a.other] : []));
      expect(held).toHaveLength(1);
      expect(refused).toHaveLength(1);
      const winner = answers[0] && 'holding' in answers[0] ? { pid: 101, host: 'door-a' } : { pid: 202, host: 'door-b' };
      expect(refused[0]).toMatchObject({ ...winner, role: 'projections' });
      // Stopped, the holder gives the store back: the other takes it.
      for (const answer of answers) if ('holding' in answer) await answer.holding.stop();
      const again = await claimProjections(second, logger, { role: 'projections', as: { pid: 202, host: 'door-b' } });
      expect('holding' in again).toBe(true);
      if ('holding' in again) await again.holding.stop();
    } finally {
      await first.close();
      await second.close();
    }
  });

  it('tells a holder whose store another process took over (its heartbeat had gone stale), and stops its heartbeat', async () => {
    const store: ReadStore = new EmbeddedReadStore(path.join(dataDir, 'lost.sqlite'));
    try {
      let lostTo: HolderDoc | null | undefined;
      const claim = await claimProjections(store, createLogger('silent'), { role: 'projections', as: { pid: 101, host: 'door-a', heartbeatMs: 20 }, onLost: (taker) => (lostTo = taker) });
      expect('holding' in claim).toBe(true);
      const now = new Date().toISOString();
      await store.collection<HolderDoc>(holderCollection).replaceOne(projectionsHolderId, { pid: 303, host: 'door-c', startedAt: now, heartbeatAt: now, role: 'projections' });
      for (let waited = 0; lostTo === undefined && waited < 10_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(lostTo).toMatchObject({ pid: 303, host: 'door-c' });
      // The taker's document stays: neither a later beat nor the stop writes over it.
      await new Promise((resolve) => setTimeout(resolve, 100));
      if ('holding' in claim) await claim.holding.stop();
      expect(await store.collection<HolderDoc>(holderCollection).get(projectionsHolderId)).toMatchObject({ pid: 303, host: 'door-c' });
    } finally {
      await store.close();
    }
  });

  it('refuses to start a projecting process while a projections rebuild holds the read store, naming the rebuild', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'checkin-holder-rebuild-'));
    try {
      const api = await startTestService({}, { dataDir: dir, role: 'api' });
      const claim = await claimProjections(api.platform.readStore, createLogger('silent'), { role: 'rebuild', as: { pid: 4242, host: 'ops-host' } });
      expect('holding' in claim).toBe(true);
      await expect(startTestService({}, { dataDir: dir })).rejects.toThrow(/another process runs the projections on this read store: a projections rebuild \(pid 4242 on ops-host/);
      if ('holding' in claim) await claim.holding.stop();
      await api.close();
      const service = await startTestService({}, { dataDir: dir });
      await service.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
