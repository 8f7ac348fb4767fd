/**
 * Where the rate-limit counters live (issue 12, item 9). With MONGO_URL, in that server, so
 * every instance shares one count, but only if it counts atomically: a concurrent `$inc` on
 * one document must never lose an increment. FerretDB 1.x (MongoDB wire protocol over SQLite
 * or PostgreSQL) does not: 1,100 concurrent increments of one counter, 50 at a time, left it
 * at 85 (and it cannot create the TTL index the limiter wants), so the limit failed open.
 * There the counters go to the SQLite file in DATA_DIR instead, which counts atomically and
 * is shared by every instance on the host: the limit then holds per host, and the log says so.
 */
import type { MongoClient } from 'mongodb';
import type { Logger } from '../../shared/logger.js';

export interface AtomicCounting {
  atomic: boolean;
  /** What the server said it is, for the log. */
  server: string;
}

/** Asks the server what it is (`buildInfo`): MongoDB counts atomically, FerretDB does not. */
export async function mongoCountsAtomically(client: MongoClient, timeoutMs = 5_000): Promise<AtomicCounting> {
  const info = await Promise.race([
    client.db('admin').command({ buildInfo: 1 }),
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer to buildInfo within ${timeoutMs} ms`)), timeoutMs).unref()),
  ]);
  if (typeof info.ferretdbVersion === 'string') return { atomic: false, server: `FerretDB ${info.ferretdbVersion}` };
  return { atomic: true, server: `MongoDB ${String(info.version)}` };
}

/** The decision for a MongoDB-protocol server, logged: 'mongo' (shared by all) or 'local' (per host). */
export async function chooseCounterStore(client: MongoClient, logger: Logger): Promise<'mongo' | 'local'> {
  try {
    const counting = await mongoCountsAtomically(client);
    if (counting.atomic) {
      logger.info({ server: counting.server }, 'rate limits counted in MONGO_URL, shared by every instance');
      return 'mongo';
    }
    logger.warn(
      { server: counting.server },
      'the MONGO_URL server cannot count atomically (concurrent increments get lost); rate limits are counted in DATA_DIR/rate-limits.sqlite instead, so they hold per host, not across hosts',
    );
  } catch (error) {
    logger.warn({ err: error }, 'could not ask the MONGO_URL server what it is; rate limits are counted per host in DATA_DIR/rate-limits.sqlite');
  }
  return 'local';
}
