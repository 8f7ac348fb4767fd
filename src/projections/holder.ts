import os from 'node:os';
import type { ReadStore } from '../adapters/readstore/port.js';
import type { Logger } from '../shared/logger.js';
import { processAlive } from '../shared/process-alive.js';

/**
 * Which process runs the projections on a read store (issue 12, item 7): the projections role
 * writes a heartbeat document every `heartbeatMs`, and removes it when it stops. The
 * `projections rebuild` command refuses while a fresh heartbeat exists, so a rebuild never
 * races the live runner over the same collections and checkpoints.
 */
export const holderCollection = 'service_holders';
export const projectionsHolderId = 'projections';
export const holderHeartbeatMs = 5_000;
/** A heartbeat older than this belongs to a process that is gone (killed, host lost). */
export const holderStaleMs = 20_000;

export interface HolderDoc {
  _id: string;
  pid: number;
  host: string;
  startedAt: string;
  heartbeatAt: string;
}

export function holdProjections(readStore: ReadStore, logger: Logger): { stop(): Promise<void> } {
  const holders = readStore.collection<HolderDoc>(holderCollection);
  const startedAt = new Date().toISOString();
  const beat = () =>
    holders
      .replaceOne(projectionsHolderId, { pid: process.pid, host: os.hostname(), startedAt, heartbeatAt: new Date().toISOString() })
      .catch((error: unknown) => logger.warn({ err: error }, 'projections heartbeat not written; retrying'));
  void beat();
  const timer = setInterval(() => void beat(), holderHeartbeatMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      const current = await holders.get(projectionsHolderId).catch(() => null);
      if (current?.pid === process.pid && current.host === os.hostname()) await holders.deleteOne(projectionsHolderId).catch(() => {});
    },
  };
}

/** The live holder of the projections, if any (a heartbeat younger than `holderStaleMs`). */
export async function projectionsHolder(readStore: ReadStore, now = Date.now()): Promise<HolderDoc | undefined> {
  const doc = await readStore.collection<HolderDoc>(holderCollection).get(projectionsHolderId);
  if (!doc) return undefined;
  return now - Date.parse(doc.heartbeatAt) < holderStaleMs ? doc : undefined;
}

/**
 * Another live process holding the projections of this read store, if any: a fresh heartbeat
 * that is not this process's, and not that of a process of this host that is gone (a restart
 * after a kill need not wait for the heartbeat to go stale). Another host's fresh heartbeat
 * counts until it is `holderStaleMs` old.
 */
export async function otherProjectionsHolder(readStore: ReadStore, now = Date.now()): Promise<HolderDoc | undefined> {
  const holder = await projectionsHolder(readStore, now);
  if (!holder || holder.host !== os.hostname()) return holder;
  return holder.pid === process.pid || !processAlive(holder.pid) ? undefined : holder;
}
