/**
 * docs/api.md: an `Idempotency-Key` header on a POST makes a retry safe. The same
 * key with the same request within 24 h gets the first response again, without the
 * handler running twice; the same key with another request is 422; a repeat while the
 * first is still running is 409. Keys belong to one caller: a client, or one of its team members.
 *
 * Records live in the read store's `idempotency_keys` collection, `_id = <tenantId>:<key>`
 * (a team member's: `<tenantId>:team_member<TAB><teamMemberId><TAB><key>`).
 * A key is reserved without transactions: an insert that only succeeds where no record is
 * (`Collection.swap` from null, decided by the store, so it holds across processes sharing the
 * read store); whoever's random `owner` token is on the record runs the request.
 *
 * A request that failed (5xx) or was abandoned may still be applied later (on EventStoreDB a
 * recorded batch is completed after a crash: docs/eventstore.md), so the retry that runs it again
 * keeps the first attempt's `seed`, and the handler derives the ids it makes from it
 * (`res.locals.idempotencySeed`, `repeatableId`): the retry then finds the first attempt's work.
 */
import { createHash } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import type { Collection, ReadStore } from '../../adapters/readstore/port.js';
import { DuplicateKeyError } from '../../adapters/readstore/port.js';
import { newId } from '../../shared/ids.js';
import type { Principal } from '../context.js';
import { HttpError, logFailure } from '../errors.js';

export const IDEMPOTENCY_COLLECTION = 'idempotency_keys';

export interface IdempotencyOptions {
  /** How long a finished request's response is replayed; 24 h. */
  ttlMs?: number;
  /**
   * How long a request may stay in progress before its key counts as abandoned (the process
   * died mid-request) and a retry may run it again; 10 minutes.
   */
  inProgressTimeoutMs?: number;
  now?: () => Date;
}

interface IdempotencyRecord {
  _id: string;
  owner: string;
  /** sha256 of method, path and canonical JSON body. */
  fingerprint: string;
  /** `failed`: the handler answered 5xx; the key is free again, and a retry of the same request keeps the seed. */
  state: 'pending' | 'done' | 'failed';
  /** What the request's ids derive from: the first attempt's, for every retry of the same request within the TTL. */
  seed?: string;
  createdAt: string;
  /** After this the record counts as absent (ISO 8601 UTC; compared as strings). */
  expiresAt: string;
  /** While pending: after this the request counts as abandoned. */
  lockedUntil: string;
  status?: number;
  body?: string;
  bodyEncoding?: 'utf8' | 'base64';
  contentType?: string;
  location?: string;
}

const DAY_MS = 24 * 60 * 60 * 1000;
/** Printable ASCII, 1 to 255 characters. */
const KEY_PATTERN = /^[\x20-\x7e]{1,255}$/;
/** Larger responses are not kept (MongoDB documents stop at 16 MB); the key is released instead. */
const MAX_STORED_BODY_BYTES = 8 * 1024 * 1024;

export function idempotency(readStore: ReadStore, options: IdempotencyOptions = {}): RequestHandler {
  const keys = readStore.collection<IdempotencyRecord>(IDEMPOTENCY_COLLECTION);
  const ttlMs = options.ttlMs ?? DAY_MS;
  const inProgressTimeoutMs = Math.min(options.inProgressTimeoutMs ?? 10 * 60 * 1000, ttlMs);
  const now = options.now ?? (() => new Date());

  return async (req, res, next) => {
    const key = req.get('idempotency-key');
    const principal = res.locals.principal as Principal | undefined;
    // Routes outside the authenticated API (identity provider, admin) have no client to scope keys by.
    if (req.method !== 'POST' || key === undefined || !principal) return next();
    if (!KEY_PATTERN.test(key)) {
      return next(
        new HttpError(400, 'validation_error', 'the request is not valid: see errors', [
          { path: 'Idempotency-Key', message: 'must be 1 to 255 printable ASCII characters' },
        ]),
      );
    }
    const id = recordIdOf(principal, key);
    const fingerprint = fingerprintOf(req);
    const owner = newId();
    const record = await reserve(keys, id, owner, fingerprint, now(), ttlMs, inProgressTimeoutMs);
    if (record.owner === owner) {
      res.locals.idempotencySeed = `${id}\n${record.seed ?? record.owner}`;
      recordResponse(req, res, keys, record);
      return next();
    }
    if (record.fingerprint !== fingerprint) {
      return next(
        new HttpError(422, 'idempotency_key_reused', 'this Idempotency-Key was already used with a different request'),
      );
    }
    // A failed one (5xx) another retry took over in between is as good as running: never replayed.
    if (record.state !== 'done') {
      return next(
        new HttpError(409, 'idempotency_key_in_progress', 'a request with this Idempotency-Key is still in progress; retry', undefined, {
          'Retry-After': '1',
        }),
      );
    }
    replay(res, record);
  };
}

/**
 * Keys belong to the caller: the client's keep `<clientId>:<key>` (records stored before team
 * members had their own), a team member's are its own under the client's prefix, so neither
 * can replay, or block with its own refusal, a request of the other. The tabs cannot occur in
 * a key (printable ASCII), so no client key names a team member's record. The `<clientId>:`
 * prefix is what erasure scrubs by (src/commands/personal-data.ts).
 */
function recordIdOf(principal: Principal, key: string): string {
  if (principal.role === 'client') return `${principal.tenantId}:${key}`;
  return `${principal.tenantId}:${principal.role}\t${principal.actor.id}\t${key}`;
}

/**
 * The record that decides the request: ours when we reserved the key, else the earlier one.
 * An expired, failed or abandoned record is taken over by one compare-and-swap on its owner and
 * state (`Collection.swap`), so of two retries racing over the same stale record exactly one
 * runs the request; the other finds the winner's record (in progress: 409; done: its answer).
 */
async function reserve(
  keys: Collection<IdempotencyRecord>,
  id: string,
  owner: string,
  fingerprint: string,
  at: Date,
  ttlMs: number,
  inProgressTimeoutMs: number,
): Promise<IdempotencyRecord> {
  const fields = {
    owner,
    seed: owner,
    fingerprint,
    state: 'pending',
    createdAt: at.toISOString(),
    expiresAt: new Date(at.getTime() + ttlMs).toISOString(),
    lockedUntil: new Date(at.getTime() + inProgressTimeoutMs).toISOString(),
  };
  for (let attempt = 1; ; attempt++) {
    // Inserted only where no record is: a compare-and-swap decided by the store itself (MongoDB: an
    // insert its unique _id refuses; the embedded store: a transaction on its file, not on this
    // process's copy), so two api processes sharing one read store never both take a key.
    const inserted = await keys.swap(id, null, fields as Omit<IdempotencyRecord, '_id'>).catch((error: unknown) => {
      // A store that answers a lost race with a duplicate-key error: the other one won.
      if (error instanceof DuplicateKeyError) return { swapped: false, current: null };
      throw error;
    });
    const record = inserted.swapped ? ({ _id: id, ...fields } as IdempotencyRecord) : (inserted.current ?? (await keys.get(id)));
    if (record && (record.owner === owner || !isStale(record, fields.createdAt))) return record;
    if (record) {
      // A retry of a request that failed or was abandoned (not expired) runs it again with its seed.
      const seed = record.fingerprint === fingerprint && record.expiresAt > fields.createdAt && record.seed ? record.seed : owner;
      const taken = { ...fields, seed } as Omit<IdempotencyRecord, '_id'>;
      const { swapped, current } = await keys.swap(id, { owner: record.owner, state: record.state }, taken);
      if (swapped) return { _id: id, ...taken };
      // Another retry took the stale record over first (or it was purged): theirs decides.
      if (current) return current;
    }
    if (attempt > 2) throw new Error(`could not reserve idempotency key ${id}: it keeps disappearing`);
  }
}

function isStale(record: IdempotencyRecord, nowIso: string): boolean {
  return record.expiresAt <= nowIso || record.state === 'failed' || (record.state === 'pending' && record.lockedUntil <= nowIso);
}

/** Same method, path (with query) and JSON body, whatever the order of object keys. */
function fingerprintOf(req: Request): string {
  return createHash('sha256')
    .update(`${req.method}\n${req.originalUrl}\n${canonicalJson(req.body)}`)
    .digest('hex');
}

function canonicalJson(value: unknown): string {
  const sorted = JSON.stringify(value, (_key, field: unknown) =>
    field !== null && typeof field === 'object' && !Array.isArray(field)
      ? Object.fromEntries(Object.entries(field).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : field,
  ) as string | undefined;
  return sorted ?? '';
}

/**
 * Keeps what the handler sends and stores it before the response leaves, so a client that
 * has its answer and retries gets the replay, never "in progress". A 5xx releases the key
 * (keeping its seed): the retry the error asks for runs the request again.
 */
function recordResponse(req: Request, res: Response, keys: Collection<IdempotencyRecord>, reserved: IdempotencyRecord): void {
  const id = reserved._id;
  const chunks: Buffer[] = [];
  let size = 0;
  const keep = (chunk: unknown, encoding: unknown): void => {
    if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
    const buffer = Buffer.isBuffer(chunk)
      ? chunk
      : typeof chunk === 'string'
        ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
        : Buffer.from(chunk as Uint8Array);
    size += buffer.length;
    if (size <= MAX_STORED_BODY_BYTES) chunks.push(buffer);
  };

  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => Response;
  res.write = ((...args: unknown[]) => {
    keep(args[0], args[1]);
    return write(...args);
  }) as Response['write'];
  let ended = false;
  res.end = ((...args: unknown[]) => {
    if (ended) return end(...args);
    ended = true;
    keep(args[0], args[1]);
    const body = size <= MAX_STORED_BODY_BYTES ? Buffer.concat(chunks) : undefined;
    settle(res, keys, reserved, body)
      .catch((error: unknown) => logFailure(req.log, error, { idempotencyKey: id }, 'could not store the idempotent response'))
      .finally(() => end(...args));
    return res;
  }) as Response['end'];
}

/**
 * A route whose answer carries a secret shown once (a webhook signing secret) marks it with
 * `doNotStoreResponse`: the key is released rather than the secret kept in plain text.
 */
export const doNotStoreResponse = (res: Response): void => {
  res.locals.doNotStoreResponse = true;
};

/**
 * Stores the outcome on the record this request reserved, by a compare-and-swap on its owner:
 * a request that was taken for abandoned and whose key a retry took over while it still ran
 * changes nothing when it ends (its 5xx would free the key under the running retry, its answer
 * would be replayed in place of the retry's).
 */
async function settle(res: Response, keys: Collection<IdempotencyRecord>, reserved: IdempotencyRecord, body: Buffer | undefined): Promise<void> {
  const { _id: id, ...record } = reserved;
  const ours = { owner: record.owner, state: 'pending' as const };
  // A 5xx frees the key for the retry it asks for, but keeps the seed: the request may still be applied.
  if (res.statusCode >= 500) return void (await keys.swap(id, ours, { ...record, state: 'failed' }));
  if (body === undefined || res.locals.doNotStoreResponse === true) return void (await keys.swap(id, ours, null));
  const contentType = res.get('Content-Type');
  const location = res.get('Location');
  const encoding = contentType === undefined || /json|^text\//i.test(contentType) ? 'utf8' : 'base64';
  await keys.swap(id, ours, {
    ...record,
    state: 'done',
    status: res.statusCode,
    body: body.toString(encoding),
    bodyEncoding: encoding,
    ...(contentType !== undefined ? { contentType } : {}),
    ...(location !== undefined ? { location } : {}),
  });
}

function replay(res: Response, record: IdempotencyRecord): void {
  res.status(record.status ?? 200);
  if (record.contentType) res.set('Content-Type', record.contentType);
  if (record.location) res.set('Location', record.location);
  res.set('Idempotent-Replayed', 'true');
  const body = Buffer.from(record.body ?? '', record.bodyEncoding ?? 'utf8');
  if (body.length === 0) res.end();
  else res.send(body);
}

/**
 * Deletes expired records; the read-store port has no TTL index, so call this now and then.
 * Each delete is a compare-and-swap on the record as read: a retry that took the expired key
 * over in between (`reserve`) keeps its fresh record.
 */
export async function purgeExpiredIdempotencyKeys(readStore: ReadStore, at: Date = new Date()): Promise<number> {
  const keys = readStore.collection<IdempotencyRecord>(IDEMPOTENCY_COLLECTION);
  let purged = 0;
  for await (const record of keys.stream({ expiresAt: { $lte: at.toISOString() } })) {
    const { swapped } = await keys.swap(record._id, { owner: record.owner, state: record.state }, null);
    if (swapped) purged++;
  }
  return purged;
}
