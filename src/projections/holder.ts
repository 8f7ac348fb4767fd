import os from 'node:os';
import type { Collection, ReadStore } from '../adapters/readstore/port.js';
import type { Logger } from '../shared/logger.js';
import { processAlive } from '../shared/process-alive.js';

/**
 * Which process runs the projections on a read store (issue 12, item 7): the projections role of
 * a service, or a `projections rebuild`, takes one document (`claimProjections`), writes a
 * heartbeat into it every `holderHeartbeatMs`, and removes it when it stops. Whoever finds another
 * live holder there refuses, so two processes never write the same collections and checkpoints.
 */
export const holderCollection = 'service_holders';
export const projectionsHolderId = 'projections';
export const holderHeartbeatMs = 5_000;
/** A heartbeat older than this belongs to a process that is gone (killed, host lost). */
export const holderStaleMs = 20_000;

/** What holds the projections: the projections role of a service, or a `projections rebuild`. */
export type HolderRole = 'projections' | 'rebuild';

export interface HolderDoc {
  _id: string;
  pid: number;
  host: string;
  startedAt: string;
  heartbeatAt: string;
  /** Absent in documents written before rebuilds held the store: a service's projections role. */
  role?: HolderRole;
}

export interface Holding {
  /** Stops the heartbeat and removes the document, unless another process has taken it since. */
  stop(): Promise<void>;
}

/** What identifies one heartbeat of one holder (a swap expects exactly it). */
const beatOf = (doc: Omit<HolderDoc, '_id'>): Partial<Omit<HolderDoc, '_id'>> => ({ pid: doc.pid, host: doc.host, startedAt: doc.startedAt, heartbeatAt: doc.heartbeatAt });

/**
 * Takes the projections of this read store for this process, or answers the live process that
 * holds them. The taking is one compare-and-swap against the stored document (Collection.swap):
 * of two processes started in the same instant, one takes it and the other is answered the
 * first. A document left by a process that is gone (see `liveOther`) is taken over.
 *
 * While held, a heartbeat every `holderHeartbeatMs`, each a swap from the previous beat: if
 * another process took the document over (this one's heartbeat had gone stale, the store
 * unreachable or the process stalled for 20 s), `onLost` hears who, and the beats stop.
 */
export async function claimProjections(
  readStore: ReadStore,
  logger: Logger,
  options: {
    role: HolderRole;
    onLost?: (taker: HolderDoc | null) => void;
    /** Tests: who claims (another process), and how often it beats. */
    as?: { pid: number; host: string; heartbeatMs?: number };
  },
): Promise<{ holding: Holding } | { other: HolderDoc }> {
  const holders = readStore.collection<HolderDoc>(holderCollection);
  const startedAt = new Date().toISOString();
  const me = { pid: options.as?.pid ?? process.pid, host: options.as?.host ?? os.hostname() };
  const mine = (): Omit<HolderDoc, '_id'> => ({ ...me, startedAt, heartbeatAt: new Date().toISOString(), role: options.role });
  let seen = await holders.get(projectionsHolderId);
  for (let attempt = 1; ; attempt++) {
    if (attempt > 5) throw new Error(`the projections holder document (${holderCollection}/${projectionsHolderId}) changed under five tries to take it; is another process starting over and over?`);
    const other = seen ? liveOther(seen, me) : undefined;
    if (other) {
      // What was read may be out of date (the embedded store answers `get` from this process's
      // memory): the refusal stands only if a swap finds that very document still stored.
      const { _id: _stored, ...same } = other;
      const still = await holders.swap(projectionsHolderId, beatOf(other), same);
      if (still.swapped) return { other };
      seen = still.current;
      continue;
    }
    const first = mine();
    const taken = await holders.swap(projectionsHolderId, seen ? beatOf(seen) : null, first).catch(async (error: unknown) => {
      // The write may be stored though its answer was lost (see `isMine`): then it is held.
      const stored = await holders.get(projectionsHolderId);
      if (stored && isMine(stored, first)) return { swapped: true, current: stored };
      throw error;
    });
    if (taken.swapped) return { holding: keepHolding(holders, first, mine, logger, options.as?.heartbeatMs ?? holderHeartbeatMs, options.onLost) };
    seen = taken.current;
  }
}

function keepHolding(
  holders: Collection<HolderDoc>,
  first: Omit<HolderDoc, '_id'>,
  mine: () => Omit<HolderDoc, '_id'>,
  logger: Logger,
  heartbeatMs: number,
  onLost?: (taker: HolderDoc | null) => void,
): Holding {
  let last = first;
  let lost = false;
  // One write at a time, in order: a beat still under way when `stop` comes is awaited first.
  let writes: Promise<unknown> = Promise.resolve();
  const beat = () =>
    (writes = writes.then(async () => {
      if (lost) return;
      const next = mine();
      const result = await holders.swap(projectionsHolderId, beatOf(last), next).catch((error: unknown) => {
        logger.warn({ err: error }, 'projections heartbeat not written; retrying');
        return undefined;
      });
      if (!result) return;
      if (result.swapped) {
        last = next;
        return;
      }
      if (result.current && isMine(result.current, first)) {
        // A beat of this holder that an earlier call stored though it answered with an error.
        const { _id: _stored, ...stored } = result.current;
        last = stored;
        return;
      }
      lost = true;
      clearInterval(timer);
      logger.error(
        { holder: result.current },
        'another process took over the projections of this read store (this one\'s heartbeat had gone stale): this one stops projecting',
      );
      onLost?.(result.current);
    }));
  const timer = setInterval(() => void beat(), heartbeatMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await writes;
      if (!lost) await holders.swap(projectionsHolderId, beatOf(last), null).catch(() => {});
      lost = true;
    },
  };
}

/**
 * Whether the stored document is a beat of this very claim (same pid, host and start). A write
 * can be stored and still answer with an error: MongoDB retries a write once, and not at all on a
 * standalone server (docs: core/retryable-writes), so a lost reply or a `w: "majority"` timeout
 * reaches the caller. Only this claim writes its start, and every swap is filtered on the beat it
 * expects, so a late write of this one never lands over another process's document.
 */
function isMine(stored: Omit<HolderDoc, '_id'>, first: Omit<HolderDoc, '_id'>): boolean {
  return stored.pid === first.pid && stored.host === first.host && stored.startedAt === first.startedAt;
}

/** The live holder of the projections, if any (a heartbeat younger than `holderStaleMs`). */
export async function projectionsHolder(readStore: ReadStore, now = Date.now()): Promise<HolderDoc | undefined> {
  const doc = await readStore.collection<HolderDoc>(holderCollection).get(projectionsHolderId);
  if (!doc) return undefined;
  return now - Date.parse(doc.heartbeatAt) < holderStaleMs ? doc : undefined;
}

/**
 * `doc` when it names another live process holding the projections: a fresh heartbeat that is not
 * this process's, and not that of a process of this host that is gone (a restart after a kill
 * need not wait for the heartbeat to go stale). Another host's fresh heartbeat counts until it is
 * `holderStaleMs` old.
 */
function liveOther(doc: HolderDoc, me: { pid: number; host: string }, now = Date.now()): HolderDoc | undefined {
  if (now - Date.parse(doc.heartbeatAt) >= holderStaleMs) return undefined;
  if (doc.host !== me.host) return doc;
  return doc.pid === me.pid || (doc.host === os.hostname() && !processAlive(doc.pid)) ? undefined : doc;
}

/** The holder named for an operator: "a projections rebuild (pid ... on ...)" or "a projections role (...)". */
export function describeHolder(doc: HolderDoc): string {
  return `${doc.role === 'rebuild' ? 'a projections rebuild' : 'a projections role'} (pid ${doc.pid} on ${doc.host}, since ${doc.startedAt}, last heartbeat ${doc.heartbeatAt})`;
}
