/**
 * Spec, Limits: every request to the API counts against a per-source-IP budget
 * (1000 a minute, then a 60-second block); `POST /comms/v1/api/comms/send` also counts
 * against its own budget (300 a minute). A request must pass both.
 *
 * Counters live in a store that every service instance shares (SQLite file in embedded
 * mode, MongoDB otherwise), so N instances still allow 1000 a minute, not N × 1000.
 * If the store fails, an in-process memory limiter takes over (rate-limiter-flexible's
 * insurance limiter): the limit then holds per instance instead of taking the API down.
 */
import { isIPv6 } from 'node:net';
import type Database from 'better-sqlite3';
import type { Request, RequestHandler, Response } from 'express';
import type { MongoClient } from 'mongodb';
import {
  RateLimiterMemory,
  RateLimiterMongo,
  RateLimiterRes,
  RateLimiterSQLite,
  type RateLimiterAbstract,
} from 'rate-limiter-flexible';
import type { Logger } from '../../shared/logger.js';
import { HttpError } from '../errors.js';

export type RateLimitStore =
  | { kind: 'sqlite'; db: Database.Database }
  | { kind: 'mongo'; client: MongoClient; dbName: string }
  | { kind: 'memory' };

export interface RateLimitOptions {
  /** Requests per window per source IP on the whole API; 0 switches the limit off. */
  perMinute: number;
  /** Extra budget for `POST /comms/v1/api/comms/send`; 0 switches it off. */
  sendPerMinute: number;
  store: RateLimitStore;
  logger?: Logger;
  /** Window length; 60 (the spec's minute) unless a test shortens it. */
  windowSeconds?: number;
  /** Block after the whole-API budget is exceeded; 60 (spec) unless a test shortens it. */
  blockSeconds?: number;
}

export interface RateLimits {
  /** Mount before authentication and body parsing, on everything the API host serves. */
  all: RequestHandler;
  /** Mount next to `all`: it picks out `POST /comms/v1/api/comms/send` itself. */
  send: RequestHandler;
}

export const SEND_PATH = '/comms/v1/api/comms/send';

/** One table (SQLite) or collection (MongoDB) for both limiters; keys carry the limiter's prefix. */
const TABLE = 'rate_limits';

export function createRateLimits(options: RateLimitOptions): RateLimits {
  const windowSeconds = options.windowSeconds ?? 60;
  const blockSeconds = options.blockSeconds ?? 60;
  const all = counterLimiter(options.store, { keyPrefix: 'api', points: options.perMinute, duration: windowSeconds, blockDuration: blockSeconds }, options.logger);
  // The spec gives the send limit no mitigation window: a refusal lasts until its window ends.
  const send = counterLimiter(options.store, { keyPrefix: 'send', points: options.sendPerMinute, duration: windowSeconds, blockDuration: 0 }, options.logger);
  return {
    all: all ? limitBy(all, options.logger) : passThrough,
    send: send ? limitBy(send, options.logger, isSend) : passThrough,
  };
}

const passThrough: RequestHandler = (_req, _res, next) => next();

export interface LimiterShape {
  keyPrefix: string;
  points: number;
  duration: number;
  blockDuration: number;
}

/** A counter in the shared store (keys carry `shape.keyPrefix`), with a per-process fallback while the store fails; none for 0 points. */
export function counterLimiter(store: RateLimitStore, shape: LimiterShape, logger?: Logger): RateLimiterAbstract | undefined {
  if (!(shape.points > 0)) return undefined;
  if (store.kind === 'memory') return new RateLimiterMemory(shape);
  const insuranceLimiter = new RateLimiterMemory(shape);
  if (store.kind === 'sqlite') {
    return new PreparedSQLiteLimiter(
      { ...shape, storeClient: store.db, storeType: 'better-sqlite3', tableName: TABLE, clearExpiredByTimeout: true, insuranceLimiter },
      // Until the table exists (or if creating it fails) every request goes to the insurance limiter.
      (error) => {
        if (error) logger?.error({ err: error }, 'rate limit table could not be created; limiting per instance only');
      },
      logger,
    );
  }
  const mongo = new RateLimiterMongo({ ...shape, storeClient: store.client, dbName: store.dbName, tableName: TABLE, insuranceLimiter });
  // rate-limiter-flexible 8.1 reads the driver version from `client.options.metadata`, which the
  // mongodb 6.9+ driver makes a Promise; it then falls back to 0.0.0 and asks for the document
  // *before* the update, so every count is off by one and the first request of a window throws
  // (upstream issue #251, PR #300). Any major version >= 4 selects `returnDocument: 'after'`.
  (mongo as unknown as { _driverVersion: { major: number; feature: number; patch: number } })._driverVersion = {
    major: 7,
    feature: 0,
    patch: 0,
  };
  return mongo;
}

type Counter = { points: number; expire: number | null };

/** As rate-limiter-flexible 8.1's SQLite store: a purge every 5 minutes of counters expired over an hour ago. */
export const PURGE_EVERY_MS = 300_000;
const PURGE_AFTER_MS = 3_600_000;

/**
 * RateLimiterSQLite with its two upserts prepared once. The library prepares the statement and
 * opens a transaction on every call: about 25 µs of CPU (60 µs of latency) per request, against 7.
 * Same SQL as rate-limiter-flexible 8.1 (a single statement is atomic without a transaction);
 * `_upsert` is the hook every store limiter of the library implements. Until the library has
 * created the table, preparing fails and the insurance limiter answers, as in the library.
 */
class PreparedSQLiteLimiter extends RateLimiterSQLite {
  private readonly db: Database.Database;
  private readonly table: string;
  private statements?: { add: Database.Statement<unknown[], Counter>; reset: Database.Statement<unknown[], Counter> };

  private readonly logger?: Logger;

  constructor(
    options: ConstructorParameters<typeof RateLimiterSQLite>[0] & { storeClient: Database.Database; tableName: string },
    ready?: (error?: Error) => void,
    logger?: Logger,
  ) {
    super(options, ready);
    this.db = options.storeClient;
    this.table = options.tableName;
    this.logger = logger;
  }

  /**
   * The library's purge (every 5 minutes, the counters that expired over an hour ago), which it
   * schedules itself once the table exists; the same, except when a purge fails. The library's
   * chain has no `catch`: a DELETE refused (SQLITE_BUSY while another api process writes the
   * shared file past the 100 ms busy timeout, SQLITE_FULL, a closed file) was an unhandled
   * rejection, which ends the process (src/shared/exit-on-crash.ts), and no purge ran after it,
   * so the table grew by a row per source IP for as long as the process lived. Now the failure
   * is logged and the next purge is scheduled all the same.
   */
  _clearExpiredHourAgo(): void {
    const self = this as unknown as { _clearExpiredTimeoutId?: NodeJS.Timeout; clearExpired(before: number): Promise<void> };
    clearTimeout(self._clearExpiredTimeoutId);
    self._clearExpiredTimeoutId = setTimeout(() => {
      self
        .clearExpired(Date.now() - PURGE_AFTER_MS)
        .catch((error: unknown) => this.logger?.warn({ err: error }, 'rate limit purge of expired counters failed; it runs again in 5 minutes'))
        // A closed file (the service stopped) ends the chain.
        .finally(() => this.db.open && this._clearExpiredHourAgo());
    }, PURGE_EVERY_MS);
    self._clearExpiredTimeoutId.unref();
  }

  async _upsert(key: string, points: number, msDuration: number, forceExpire = false): Promise<Counter | undefined> {
    this.statements ??= {
      add: this.db.prepare(
        `INSERT INTO ${this.table} (key, points, expire) VALUES (?, ?, ?)
         ON CONFLICT(key) DO UPDATE SET
           points = CASE WHEN expire IS NULL OR expire > ? THEN points + excluded.points ELSE excluded.points END,
           expire = CASE WHEN expire IS NULL OR expire > ? THEN expire ELSE excluded.expire END
         RETURNING points, expire`,
      ),
      reset: this.db.prepare(`INSERT OR REPLACE INTO ${this.table} (key, points, expire) VALUES (?, ?, ?) RETURNING points, expire`),
    };
    const now = Date.now();
    const expire = msDuration > 0 ? now + msDuration : null;
    return forceExpire ? this.statements.reset.get(key, points, expire) : this.statements.add.get(key, points, expire, now, now);
  }
}

function isSend(req: Request): boolean {
  if (req.method !== 'POST') return false;
  // Express routes case-insensitively and ignores a trailing slash; so must the match.
  const path = (req.baseUrl + req.path).toLowerCase().replace(/\/+$/, '');
  return path === SEND_PATH;
}

/**
 * Source IP = `req.ip`, so express's `trust proxy` setting decides whether X-Forwarded-For
 * counts: behind a load balancer set it to the proxy hops, or every client shares one budget;
 * without a proxy leave it off, or a client picks a new IP per request by forging the header.
 * An IPv6 client counts by its /64: a host is routinely given a whole /64 and can take a new
 * address of it for every request.
 */
export function sourceIp(req: Request): string {
  const ip = withoutPort(req.ip ?? req.socket.remoteAddress ?? 'unknown');
  return isIPv6(ip) ? ipv6Prefix64(ip) : ip;
}

/**
 * Some proxies write the client's address with its source port in X-Forwarded-For (Azure
 * Application Gateway: `203.0.113.7:51234`, `[2001:db8::7]:51234`), and express's `req.ip`
 * keeps the entry as written. Counted as it is, every new connection of a client would be a
 * new source with a fresh budget; the port is not part of the source IP.
 */
function withoutPort(ip: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(ip);
  if (bracketed) return bracketed[1]!;
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(ip);
  return v4 ? v4[1]! : ip;
}

/** `2001:db8:7:1::ff` -> `2001:db8:7:1::/64`; an IPv4-mapped address (`::ffff:192.0.2.1`) is its IPv4 address. */
function ipv6Prefix64(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  const [head = '', tail] = ip.split('%')[0]!.split('::');
  const groups = (part: string | undefined) => (part ? part.split(':') : []);
  const left = groups(head);
  // An address without `::` has its eight groups; with it, the gap is zeros.
  const full = tail === undefined ? left : [...left, ...Array(8 - left.length - groups(tail).length).fill('0'), ...groups(tail)];
  return `${full.slice(0, 4).map((g) => Number.parseInt(g, 16).toString(16)).join(':')}::/64`;
}

function limitBy(limiter: RateLimiterAbstract, logger: Logger | undefined, appliesTo?: (req: Request) => boolean): RequestHandler {
  return async (req, res, next) => {
    if (appliesTo && !appliesTo(req)) return next();
    let outcome: RateLimiterRes;
    try {
      outcome = await limiter.consume(sourceIp(req));
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) {
        // Both the store and the insurance limiter failed: let the request through rather than fail it.
        (req.log ?? logger)?.warn({ err: rejection }, 'rate limiter failed; request not limited');
        return next();
      }
      const seconds = secondsUntil(rejection);
      describeBudget(res, limiter.points, rejection);
      return next(
        new HttpError(429, 'rate_limit', `too many requests from this source IP; retry in ${seconds} s`, undefined, {
          'Retry-After': String(seconds),
        }),
      );
    }
    describeBudget(res, limiter.points, outcome);
    next();
  };
}

function secondsUntil(outcome: RateLimiterRes): number {
  return Math.max(1, Math.ceil(outcome.msBeforeNext / 1000));
}

/**
 * `RateLimit-Limit/Remaining/Reset` (IETF draft "RateLimit header fields", draft 6 style).
 * When both limits apply, the headers describe the one with fewer requests left.
 */
function describeBudget(res: Response, limit: number, outcome: RateLimiterRes): void {
  const shown = res.get('RateLimit-Remaining');
  if (shown !== undefined && Number(shown) <= outcome.remainingPoints) return;
  res.set({
    'RateLimit-Limit': String(limit),
    'RateLimit-Remaining': String(outcome.remainingPoints),
    'RateLimit-Reset': String(secondsUntil(outcome)),
  });
}
