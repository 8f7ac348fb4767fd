/**
 * MongoDB read store. Uses only what MongoDB and FerretDB 1.x both serve: no
 * transactions, no change streams, no $text.
 *
 * Without transactions, applyBatch makes replays harmless instead of atomic: each
 * document remembers the position of the last op applied to it (hidden fields `_pos`
 * and `_seq`), every positioned op is guarded by it, and the checkpoint is written
 * last. A crash between the writes and the checkpoint makes the runner hand the same
 * ops again, and the guards skip what was already applied.
 */
import type { Logger } from '../../shared/logger.js';
import {
  MongoBulkWriteError,
  MongoClient,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
  ReadPreference,
  type AnyBulkWriteOperation,
  type Collection as MongoCollection,
  type Db,
  type Document,
  type WriteError,
} from 'mongodb';
import {
  afterCursorFilter,
  clampLimit,
  decodeCursor,
  encodeCursor,
  fetchPaths,
  isPlainObject,
  project,
  sortKeys,
  sortValues,
  valueAt,
  type SortKey,
} from './cursor.js';
import {
  DuplicateKeyError,
  ReadStoreUnavailableError,
  type Checkpoint,
  type Collection,
  type Doc,
  type Filter,
  type FindOptions,
  type IndexSpec,
  type Page,
  type ReadStore,
  type Sort,
  type StreamOptions,
  type Update,
  type WriteOp,
} from './port.js';

/** Fields the adapter keeps on documents for replay guards; never returned. */
const HIDDEN_FIELDS = { _pos: 0, _seq: 0 } as const;
const CHECKPOINTS = '_checkpoints';
/**
 * For the reads replays and leases decide on (checkpoints, their `pending` marks, replay guards, a
 * swap's answer), whatever read preference MONGO_URL asks for: a secondary may lag the primary
 * (docs: core/read-preference), and an older checkpoint read there after a restart, with no
 * `pending` mark, would make the replayed batches write unguarded and apply twice.
 */
const PRIMARY = { readPreference: ReadPreference.primary } as const;
const DUPLICATE_KEY = 11000;
const NAMESPACE_NOT_FOUND = 26;
/**
 * FerretDB 1.24 (SQLite) keeps a pool connection open for every statement of one `update`
 * command that matched a document, until the command ends; at 100 (its pool size) the
 * server deadlocks. Small commands stay far below that, also with a few writers at once.
 */
const OPS_PER_COMMAND = 32;
/** How many times in a row a stream reopens its cursor without reading a document in between. */
const MAX_RESUMES = 3;

export interface MongoReadStoreOptions {
  url: string;
  dbName: string;
  /** Where a restarted driver monitor is reported (unreachableFor). */
  logger?: Pick<Logger, 'warn'>;
  /** unreachableFor's monitorSilentMs (tests). */
  monitorSilentMs?: number;
}

export class MongoReadStore implements ReadStore {
  readonly kind = 'mongo';
  private readonly client: MongoClient;
  private readonly db: Db;
  /** What the server is: whether it ignores `$push`'s `$slice` (FerretDB 1.x), whether `find` takes `allowDiskUse`. */
  private readonly traits: ServerTraits;
  private closing = false;
  /** Throws a driver error as the port's; reconnects a client the driver left closed (unreachableFor). */
  private readonly unreachable: (error: unknown) => never;

  constructor({ url, dbName, logger, monitorSilentMs }: MongoReadStoreOptions) {
    // ignoreUndefined: an undefined field is left out, as JSON (and the embedded store) does.
    this.client = new MongoClient(url, { ignoreUndefined: true, ...serverSelectionDefault(url) });
    this.db = this.client.db(dbName);
    this.traits = new ServerTraits(this.db);
    this.unreachable = unreachableFor(this.client, () => this.closing, { ...(logger ? { logger } : {}), ...(monitorSilentMs === undefined ? {} : { monitorSilentMs }) });
  }

  collection<T extends Doc = Doc>(name: string): Collection<T> {
    return new MongoDocuments<T>(this.db.collection(name), name, this.traits, this.unreachable);
  }

  /**
   * Ops on different collections touch different documents, so only their order within a
   * collection matters: one ordered bulkWrite per collection, not one per run of ops, saves
   * round trips when a projection alternates between collections.
   *
   * A replay can only follow a batch that wrote and then did not move its checkpoints (a
   * crash between the two). So a batch first marks its checkpoints `pending`; while none is
   * pending, ops are plain writes by `_id` (an index lookup; FerretDB 1.24 pushes no other filter down),
   * skipping ops at or below their checkpoint. After a crash the marks are still there and
   * the next batch writes guarded: each op only while the document has not seen its position.
   */
  async applyBatch(ops: WriteOp[], checkpoint?: Checkpoint | Checkpoint[]): Promise<void> {
    return this.applyOnServer(ops, checkpoint).catch(this.unreachable);
  }

  private async applyOnServer(ops: WriteOp[], checkpoint?: Checkpoint | Checkpoint[]): Promise<void> {
    const checkpoints = checkpoint === undefined ? [] : Array.isArray(checkpoint) ? checkpoint : [checkpoint];
    const marks = this.db.collection<{ _id: string; position?: number; pending?: boolean }>(CHECKPOINTS, PRIMARY);
    const stored = new Map<string, number>();
    let guard = checkpoints.length === 0;
    if (checkpoints.length > 0) {
      for (const doc of await marks.find({ _id: { $in: checkpoints.map((c) => c.name) } }).toArray()) {
        if (typeof doc.position === 'number') stored.set(doc._id, doc.position);
        if (doc.pending) guard = true;
      }
    }
    const only = checkpoints.length === 1 ? checkpoints[0]!.name : undefined;
    const live = ops.filter((op) => {
      const at = stored.get(op.checkpoint ?? only ?? '');
      return at === undefined || op.position === undefined || op.position > at;
    });
    const byCollection = new Map<string, GuardedOp[]>();
    for (const guarded of withSequence(live)) {
      const group = byCollection.get(guarded.op.collection);
      if (group) group.push(guarded);
      else byCollection.set(guarded.op.collection, [guarded]);
    }
    if (checkpoints.length > 0 && byCollection.size > 0) {
      await marks.bulkWrite(
        checkpoints.map((c) => ({ updateOne: { filter: { _id: c.name }, update: { $set: { pending: true } }, upsert: true } })),
        { ordered: false },
      );
    }
    for (const [name, group] of byCollection) {
      await this.writeInOrder(name, group, guard);
      await this.traits.enforceSlices(this.db.collection(name), group.map(({ op }) => op));
    }
    if (checkpoints.length > 0) {
      // $max: replaying an older batch never moves a checkpoint back.
      await marks.bulkWrite(
        checkpoints.map((c) => ({
          updateOne: { filter: { _id: c.name }, update: { $max: { position: c.position }, $unset: { pending: '' } }, upsert: true },
        })),
        { ordered: false },
      );
    }
  }

  /**
   * The collection's ops in order, as ordered bulkWrites of at most OPS_PER_COMMAND ops.
   * An ordered bulk stops at its first error; a duplicate key from a guarded upsert whose
   * document already carries this position means "applied before", so writing resumes
   * after that op.
   */
  private async writeInOrder(name: string, ops: GuardedOp[], guard: boolean): Promise<void> {
    const collection = this.db.collection(name);
    for (let start = 0; start < ops.length; ) {
      const chunk = ops.slice(start, start + OPS_PER_COMMAND);
      try {
        await collection.bulkWrite(chunk.map((op) => toWriteModel(op, guard)), { ordered: true });
        start += chunk.length;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
        const failure = firstWriteError(error);
        // FerretDB reports an update's unique-index violation without saying which op failed.
        if (!failure) throw await duplicateKeyError(collection, error.message);
        if (failure.code !== DUPLICATE_KEY) throw error;
        if (!(await alreadyApplied(collection, chunk[failure.index]))) {
          throw await duplicateKeyError(collection, failure.errmsg);
        }
        start += failure.index + 1;
      }
    }
  }

  async getCheckpoint(name: string): Promise<number | null> {
    const doc = await this.db.collection<{ _id: string; position?: number }>(CHECKPOINTS, PRIMARY).findOne({ _id: name }).catch(this.unreachable);
    return typeof doc?.position === 'number' ? doc.position : null;
  }

  async setCheckpoint(name: string, position: number | null): Promise<void> {
    const checkpoints = this.db.collection<{ _id: string; position: number }>(CHECKPOINTS);
    if (position === null) await checkpoints.deleteOne({ _id: name }).catch(this.unreachable);
    else await checkpoints.updateOne({ _id: name }, { $set: { position } }, { upsert: true }).catch(this.unreachable);
  }

  async dropCollection(name: string): Promise<void> {
    try {
      await this.db.collection(name).drop();
    } catch (error) {
      if (!(error instanceof MongoServerError && error.code === NAMESPACE_NOT_FOUND)) this.unreachable(error);
    }
  }

  async ping(): Promise<void> {
    await this.db.command({ ping: 1 }).catch(this.unreachable);
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.client.close();
  }
}

class MongoDocuments<T extends Doc> implements Collection<T> {
  constructor(
    private readonly collection: MongoCollection<Document>,
    readonly name: string,
    private readonly traits: ServerTraits,
    private readonly unreachable: (error: unknown) => never,
  ) {}

  async get(id: string): Promise<T | null> {
    return (await this.collection.findOne({ _id: id as never }, { projection: HIDDEN_FIELDS }).catch(this.unreachable)) as T | null;
  }

  async findOne(filter: Filter): Promise<T | null> {
    return (await this.collection.findOne(serverFilter(filter), { projection: HIDDEN_FIELDS }).catch(this.unreachable)) as T | null;
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<Page<T>> {
    const keys = sortKeys(options.sort);
    const limit = clampLimit(options.limit);
    // The cursor is bound to the filter as the caller gave it (as the embedded store binds it).
    const given = filter;
    filter = serverFilter(filter);
    let query = filter;
    if (options.cursor !== undefined) {
      const after = afterCursorFilter(decodeCursor(options.cursor, keys, given), keys);
      if (!after) return { items: [] };
      query = Object.keys(filter).length === 0 ? after : { $and: [filter, after] };
    }
    // The sort keys are fetched even when not projected: the next cursor is made of them.
    const wanted = options.projection && Object.keys(options.projection).length > 0 ? options.projection : undefined;
    const projection = wanted ? fetchPaths(wanted, keys) : HIDDEN_FIELDS;
    const docs = (await this.collection
      .find(query, { sort: sortSpec(keys), limit: limit + 1, projection })
      .toArray()
      .catch(this.unreachable)) as unknown as T[];
    const page = docs.slice(0, limit);
    const last = page[page.length - 1];
    return {
      items: page.map((doc) => project(doc, wanted)),
      ...(docs.length > limit && last ? { nextCursor: encodeCursor(sortValues(last, keys), keys, given) } : {}),
    };
  }

  /**
   * Keyset-resumed: a server cursor idle for 10 minutes (`cursorTimeoutMillis`) or whose
   * session sat idle for 30 is killed, `noCursorTimeout` does not outlive the session, and the
   * driver retries a find but never a getMore. Every stream is sorted, ending with `_id`, so
   * when a getMore fails with CursorNotFound or another error a cursor can resume on (a network
   * error, a step-down), the stream opens a new cursor after the last document it yielded and
   * goes on. A failure it cannot resume on, or more than MAX_RESUMES in a row without a document
   * between them, ends the iteration with that error: the consumer never sees a short stream
   * as a complete one.
   */
  async *stream(filter: Filter, options: StreamOptions = {}): AsyncIterable<T> {
    filter = serverFilter(filter);
    const keys = sortKeys(options.sort);
    // A stream has no limit: unless an index gives its order (`_id` included, the tie-break), the
    // server sorts every match, which before MongoDB 6.0 fails past 100 MB without allowDiskUse.
    const allowDiskUse = await this.traits.findAllowsDiskUse().catch(this.unreachable);
    let last: unknown[] | undefined;
    let resumes = 0;
    for (;;) {
      let query = filter;
      if (last) {
        const after = afterCursorFilter(last, keys);
        if (!after) return;
        query = Object.keys(filter).length === 0 ? after : { $and: [filter, after] };
      }
      const cursor = this.collection.find(query, {
        sort: sortSpec(keys),
        projection: HIDDEN_FIELDS,
        batchSize: options.batchSize ?? 500,
        ...(allowDiskUse ? { allowDiskUse: true } : {}),
      });
      try {
        for await (const doc of cursor) {
          last = sortValues(doc, keys);
          resumes = 0;
          yield doc as unknown as T;
        }
        return;
      } catch (error) {
        if (!isResumableRead(error) || resumes >= MAX_RESUMES) this.unreachable(error);
        resumes += 1;
      } finally {
        await cursor.close().catch(() => undefined);
      }
    }
  }

  async *batches(filter: Filter, options: StreamOptions = {}): AsyncIterable<T[]> {
    const batchSize = Math.max(1, options.batchSize ?? 500);
    let batch: T[] = [];
    for await (const doc of this.stream(filter, options)) {
      batch.push(doc);
      if (batch.length === batchSize) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length > 0) yield batch;
  }

  async count(filter: Filter = {}): Promise<number> {
    return this.collection.countDocuments(serverFilter(filter)).catch(this.unreachable);
  }

  async updateOne(id: string, update: Update, options: { upsert?: boolean } = {}): Promise<boolean> {
    try {
      const result = await this.collection.updateOne({ _id: id as never }, update, { upsert: options.upsert === true });
      await this.traits.enforceSlices(this.collection, [{ kind: 'update', collection: this.name, id, update }]);
      return result.matchedCount > 0 || result.upsertedCount > 0;
    } catch (error) {
      this.unreachable(await asDuplicateKeyError(error, this.collection));
    }
  }

  async replaceOne(id: string, doc: Omit<T, '_id'>): Promise<void> {
    try {
      await this.collection.replaceOne({ _id: id as never }, withoutId(doc), { upsert: true });
    } catch (error) {
      this.unreachable(await asDuplicateKeyError(error, this.collection));
    }
  }

  async deleteOne(id: string): Promise<void> {
    await this.collection.deleteOne({ _id: id as never }).catch(this.unreachable);
  }

  /** Collection.swap: one conditional write (an insert that a duplicate `_id` refuses, or a filtered replace or delete). */
  async swap(id: string, expected: Partial<Omit<T, '_id'>> | null, next: Omit<T, '_id'> | null): Promise<{ swapped: boolean; current: T | null }> {
    return this.swapOnServer(id, expected, next).catch(this.unreachable);
  }

  private async swapOnServer(id: string, expected: Partial<Omit<T, '_id'>> | null, next: Omit<T, '_id'> | null): Promise<{ swapped: boolean; current: T | null }> {
    const filter = { _id: id as never, ...(expected ?? {}) };
    let swapped: boolean;
    if (expected === null) {
      if (next === null) swapped = (await this.collection.findOne({ _id: id as never }, { projection: { _id: 1 }, ...PRIMARY })) === null;
      else {
        try {
          await this.collection.insertOne({ ...withoutId(next), _id: id as never });
          swapped = true;
        } catch (error) {
          if (!isDuplicateKey(error)) throw error;
          swapped = false;
        }
      }
    } else if (next === null) swapped = (await this.collection.deleteOne(filter)).deletedCount === 1;
    else swapped = (await this.collection.replaceOne(filter, withoutId(next))).matchedCount === 1;
    const current = (await this.collection.findOne({ _id: id as never }, { projection: HIDDEN_FIELDS, ...PRIMARY })) as T | null;
    return { swapped, current };
  }

  async createIndex(index: IndexSpec): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.collection.createIndex(index.keys, { name: index.name, ...(index.unique ? { unique: true } : {}) });
        return;
      } catch (error) {
        if (isDuplicateKey(error)) throw new DuplicateKeyError(this.name, index.name);
        // FerretDB (SQLite backend) at times answers "SQL logic error: index … already exists" for
        // an index of a collection dropped a moment before (a projections rebuild), while another
        // connection of the pool touched the collection. MongoDB answers createIndex of an existing
        // identical index with success: do the same when it is there, else ask again.
        if (!(error instanceof MongoServerError && /already exists/.test(error.message)) || attempt >= 5) this.unreachable(error);
        if (await this.hasIndex(index)) return;
        await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
      }
    }
  }

  private async hasIndex(index: IndexSpec): Promise<boolean> {
    const existing = await this.collection.listIndexes().toArray().catch(() => []);
    return existing.some((found) => found.name === index.name && JSON.stringify(found.key) === JSON.stringify(index.keys));
  }
}

/**
 * The filter as the server takes it. MongoDB refuses a `$regex` holding a NUL character
 * ("Regular expression cannot contain an embedded null byte", BadValue), which a search for a
 * caller's literal text can hold; `\x00` is the same character to PCRE (and to FerretDB's and
 * JavaScript's engines). Returns the filter itself when nothing changes.
 */
export function serverFilter<F>(filter: F): F {
  if (Array.isArray(filter)) {
    const mapped = filter.map(serverFilter);
    return mapped.some((item, i) => item !== filter[i]) ? (mapped as F) : filter;
  }
  if (!isPlainObject(filter)) return filter;
  let changed: Record<string, unknown> | undefined;
  for (const [key, value] of Object.entries(filter)) {
    const next = key === '$regex' && typeof value === 'string' && value.includes('\0') ? value.replaceAll('\0', '\\x00') : serverFilter(value);
    if (next !== value) (changed ??= { ...filter })[key] = next;
  }
  return (changed ?? filter) as F;
}

function sortSpec(keys: SortKey[]): Record<string, 1 | -1> {
  return Object.fromEntries(keys);
}

function withoutId(doc: object): Document {
  const { _id: _ignored, ...rest } = doc as Document;
  return rest;
}

// ---------------------------------------------------------------------------------------
// What the server is: $push with $slice, find with allowDiskUse

/**
 * What the server can do, from its `buildInfo`, asked once.
 *
 * Bounded arrays (`$push: {field: {$each: [...], $slice: n}}`) are how projections keep a
 * growing list (an invitation's history, a webhook's attempt log) under MongoDB's 16 MB
 * document limit. FerretDB 1.x accepts `$slice` and ignores it, so there the store trims the
 * arrays itself after the writes: the same result for appends (the last -n, or first n, of all
 * the elements pushed), with one more read of the touched documents, and a write per array over
 * its bound (guarded by the length read, so a push in between is not lost).
 */
class ServerTraits {
  private info?: Promise<{ ferretDb: boolean; version: number[] }>;

  constructor(private readonly db: Db) {}

  /** What the server says it is (`buildInfo`), asked once (again after a failure). */
  private server(): Promise<{ ferretDb: boolean; version: number[] }> {
    this.info ??= this.db
      .admin()
      .command({ buildInfo: 1 })
      .then((info) => ({
        ferretDb: typeof info.ferretdbVersion === 'string',
        version: Array.isArray(info.versionArray) ? (info.versionArray as number[]) : String(info.version).split('.').map(Number),
      }))
      .catch((error: unknown) => {
        this.info = undefined;
        throw error;
      });
    return this.info;
  }

  private async serverIgnoresSlice(): Promise<boolean> {
    return (await this.server()).ferretDb;
  }

  /**
   * Whether `find` takes `allowDiskUse` (MongoDB 4.4 and later; 4.2, the driver's oldest, rejects
   * the field). Before 6.0 a sort no index answers stops at 100 MB of memory without it.
   */
  async findAllowsDiskUse(): Promise<boolean> {
    const [major = 0, minor = 0] = (await this.server()).version;
    return major > 4 || (major === 4 && minor >= 4);
  }

  async enforceSlices(collection: MongoCollection<Document>, ops: WriteOp[]): Promise<void> {
    const bounds = new Map<string, { slice: number; ids: Set<string> }>();
    for (const op of ops) {
      if (op.kind !== 'update') continue;
      for (const [field, slice] of slicedPushes(op.update)) {
        const bound = bounds.get(field) ?? { slice, ids: new Set<string>() };
        bound.ids.add(op.id);
        bounds.set(field, bound);
      }
    }
    if (bounds.size === 0 || !(await this.serverIgnoresSlice())) return;
    for (const [field, { slice, ids }] of bounds) {
      const docs = await documentsById(collection, [...ids], { [field]: 1 });
      for (const doc of docs) {
        const items = valueAt(doc, field);
        if (!Array.isArray(items) || items.length <= Math.abs(slice)) continue;
        const kept = slice >= 0 ? items.slice(0, slice) : items.slice(items.length + slice);
        await collection.updateOne({ _id: doc._id, [field]: { $size: items.length } }, { $set: { [field]: kept } });
      }
    }
  }
}

/** How many lookups by `_id` documentsById has in flight at once. */
const LOOKUPS_IN_FLIGHT = 16;

/**
 * The documents with these ids, by one lookup each. FerretDB 1.24 answers from its `_id` index
 * only a filter that is one exact `_id`: `{_id: {$in: ids}}` reads and decodes the whole
 * collection, which on the invitations of a 20,000-guest import was most of the server's time.
 * (Used on FerretDB only: MongoDB answers `$in` from the index, and needs none of this.)
 */
async function documentsById(collection: MongoCollection<Document>, ids: string[], projection: Document): Promise<Document[]> {
  const found: Document[] = [];
  let next = 0;
  const lookUp = async () => {
    while (next < ids.length) {
      const doc = await collection.findOne({ _id: ids[next++] as never }, { projection });
      if (doc) found.push(doc);
    }
  };
  await Promise.all(Array.from({ length: Math.min(LOOKUPS_IN_FLIGHT, ids.length) }, lookUp));
  return found;
}

/** The `$push` fields an update bounds with an integer `$slice`, and their bounds. */
function slicedPushes(update: Update): [field: string, slice: number][] {
  const push = update.$push;
  if (!isPlainObject(push)) return [];
  return Object.entries(push).flatMap(([field, value]): [string, number][] =>
    isPlainObject(value) && Number.isInteger(value.$slice) ? [[field, value.$slice as number]] : [],
  );
}

// ---------------------------------------------------------------------------------------
// Replay guards

/**
 * An op with its place among the batch's ops that share its document and position
 * (one event can write one document more than once). The runner never splits an
 * event's ops across batches, so a replay gives every op the same (position, seq).
 */
interface GuardedOp {
  op: WriteOp;
  seq: number;
}

function withSequence(ops: WriteOp[]): GuardedOp[] {
  const seen = new Map<string, number>();
  return ops.map((op) => {
    if (op.position === undefined) return { op, seq: 0 };
    const key = JSON.stringify([op.collection, op.id, op.position]);
    const seq = seen.get(key) ?? 0;
    seen.set(key, seq + 1);
    return { op, seq };
  });
}

/** Matches the document only while it has not seen (position, seq) yet. */
function notYetApplied(position: number, seq: number): Document {
  const before: Document[] = [{ _pos: { $exists: false } }, { _pos: { $lt: position } }];
  if (seq > 0) before.push({ _pos: position, _seq: { $lt: seq } });
  return { $or: before };
}

function toWriteModel({ op, seq }: GuardedOp, guard: boolean): AnyBulkWriteOperation<Document> {
  const positioned = op.position !== undefined;
  const filter: Document = positioned && guard ? { _id: op.id, ...notYetApplied(op.position as number, seq) } : { _id: op.id };
  const mark = positioned ? { _pos: op.position, _seq: seq } : undefined;
  switch (op.kind) {
    case 'update': {
      const update = mark ? { ...op.update, $set: { ...(op.update.$set as Document | undefined), ...mark } } : op.update;
      return { updateOne: { filter, update, upsert: op.upsert === true } };
    }
    case 'replace':
      return { replaceOne: { filter, replacement: { ...withoutId(op.doc), ...mark }, upsert: true } };
    case 'delete':
      return { deleteOne: { filter } };
  }
}

/** Whether the document already carries this op's (position, seq) or a later one. */
async function alreadyApplied(collection: MongoCollection<Document>, { op, seq }: GuardedOp): Promise<boolean> {
  if (op.position === undefined) return false;
  const seen = await collection.findOne(
    { _id: op.id as never, $or: [{ _pos: { $gt: op.position } }, { _pos: op.position, _seq: { $gte: seq } }] },
    { projection: { _id: 1 }, ...PRIMARY },
  );
  return seen !== null;
}

// ---------------------------------------------------------------------------------------
// Errors

/**
 * Errors a getMore can fail with after which reading on from a new cursor is sound: the
 * codes the driver's change streams resume on (GET_MORE_RESUMABLE_CODES in mongodb's
 * lib/error.js, from the change-streams spec), CursorNotFound among them, and network errors.
 */
const RESUMABLE_CODES = new Set([
  6, // HostUnreachable
  7, // HostNotFound
  43, // CursorNotFound: idle cursor or expired session killed
  89, // NetworkTimeout
  91, // ShutdownInProgress
  133, // FailedToSatisfyReadPreference
  189, // PrimarySteppedDown
  262, // ExceededTimeLimit
  9001, // SocketException
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11602, // InterruptedDueToReplStateChange
  13435, // NotPrimaryNoSecondaryOk
  13436, // NotPrimaryOrSecondary
  63, // StaleShardVersion
  150, // StaleEpoch
  13388, // StaleConfig
]);

/**
 * The driver's "cannot reach the server" (no server selected within serverSelectionTimeoutMS, a
 * network error; the client between its close and connect when unreachableFor restarts it) as
 * the port's ReadStoreUnavailableError, which the API answers 503 with Retry-After; every other
 * error as it is.
 */
export function asUnavailable(error: unknown): unknown {
  const cause = driverCause(error);
  // Node's own socket errors also escape the driver at times (a write after the server closed
  // the socket: "This socket has been ended by the other party", code EPIPE).
  const socketCode = (cause as NodeJS.ErrnoException | undefined)?.code;
  if (cause instanceof MongoServerSelectionError || cause instanceof MongoNetworkError || cause instanceof MongoTopologyClosedError || cause instanceof MongoNotConnectedError || (cause instanceof Error && (socketCode === 'EPIPE' || socketCode === 'ECONNRESET'))) {
    return new ReadStoreUnavailableError(`the MONGO_URL server did not answer: ${cause.message}`, { cause: error });
  }
  return error;
}

/** A bulkWrite wraps a driver error (a lost connection) in a MongoBulkWriteError, keeping it as `errorResponse`. */
function driverCause(error: unknown): unknown {
  return error instanceof MongoBulkWriteError && error.errorResponse instanceof Error ? error.errorResponse : error;
}

/** Options of unreachableFor: when a silent server monitor counts as stopped, the clock, where to say so. */
export interface UnreachableOptions {
  /**
   * How long the driver may go without any server heartbeat event (started, succeeded or failed)
   * while operations fail unreachable before its monitor counts as stopped: longer than the longest
   * check can take (connectTimeoutMS 30 s plus heartbeatFrequencyMS 10 s, by default). Default 60 s,
   * or those two of MONGO_URL plus 20 s when that is longer.
   */
  monitorSilentMs?: number;
  now?: () => number;
  logger?: Pick<Logger, 'warn'>;
}

/**
 * A thrower of the driver's errors as asUnavailable makes them, for one client. It also mends
 * two states mongodb 7.0 can leave a client in for good:
 *
 * - a client whose first connection fails (the server down when the service starts) closes that
 *   topology and keeps it, so every later operation fails "Topology is closed"
 *   (MongoTopologyClosedError) even once the server is back: only a client without a topology
 *   connects on demand. `client.connect()` makes a new topology when the one it has is not
 *   connected; it is called on that error unless the client is being closed.
 * - the server monitor stops: seen on this machine under load (about one in two server stops of
 *   40 s with the load average near 20, never on a quiet machine): the server is stopped while the
 *   monitor checks it, the monitor then emits no heartbeat again, the server stays Unknown with the
 *   lost connection's error, and every operation waits serverSelectionTimeoutMS and fails with that
 *   error ("connection 8 to ... closed") long after the server is back, until the process restarts.
 *   A healthy monitor emits a heartbeat event at least every connectTimeoutMS + heartbeatFrequencyMS
 *   (a check that hangs ends at its timeout); so when an operation fails unreachable and no
 *   heartbeat event came for `monitorSilentMs`, the client is closed and connected again (a new
 *   topology, new monitors), once at a time, with a warn line.
 */
export function unreachableFor(client: MongoClient, closing: () => boolean, options: UnreachableOptions = {}): (error: unknown) => never {
  const now = options.now ?? Date.now;
  // A check that hangs ends at connectTimeoutMS (30 s by default; 0 is none), the next starts heartbeatFrequencyMS (10 s) later.
  const { connectTimeoutMS = 30_000, heartbeatFrequencyMS = 10_000 } = client.options ?? {};
  const silentMs = options.monitorSilentMs ?? Math.max(60_000, (connectTimeoutMS || 30_000) + heartbeatFrequencyMS + 20_000);
  let reconnecting: Promise<unknown> | undefined;
  let lastHeartbeat = now();
  const heard = () => (lastHeartbeat = now());
  for (const event of ['serverHeartbeatStarted', 'serverHeartbeatSucceeded', 'serverHeartbeatFailed'] as const) client.on(event, heard);
  const reconnect = (restart: boolean) => {
    reconnecting ??= (restart ? client.close().catch(() => undefined) : Promise.resolve())
      .then(() => (closing() ? undefined : client.connect()))
      .catch(() => undefined)
      .finally(() => {
        reconnecting = undefined;
        heard();
      });
  };
  return (error: unknown): never => {
    const unavailable = asUnavailable(error);
    if (!closing() && reconnecting === undefined) {
      if (driverCause(error) instanceof MongoTopologyClosedError) reconnect(false);
      else if (unavailable instanceof ReadStoreUnavailableError && now() - lastHeartbeat > silentMs) {
        options.logger?.warn(
          { silentMs: now() - lastHeartbeat, err: unavailable },
          'the MongoDB driver heard no server heartbeat while operations failed: its server monitor stopped; closing the client and connecting again',
        );
        heard();
        reconnect(true);
      }
    }
    throw unavailable;
  };
}

/**
 * How long an operation waits for a server it can use before it fails (the driver's
 * serverSelectionTimeoutMS, 30 s by default): 5 s, so that a request while the server is down
 * answers 503 within a client's patience instead of hanging half a minute. MONGO_URL's own
 * `serverSelectionTimeoutMS` wins.
 */
export const defaultServerSelectionTimeoutMs = 5_000;

export function serverSelectionDefault(url: string): { serverSelectionTimeoutMS?: number } {
  return /[?&]serverSelectionTimeoutMS=/i.test(url) ? {} : { serverSelectionTimeoutMS: defaultServerSelectionTimeoutMs };
}

function isResumableRead(error: unknown): boolean {
  if (error instanceof MongoNetworkError) return true;
  return error instanceof MongoServerError && typeof error.code === 'number' && RESUMABLE_CODES.has(error.code);
}

function firstWriteError(error: unknown): WriteError | undefined {
  if (!(error instanceof MongoBulkWriteError)) return undefined;
  const errors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
  return errors.reduce<WriteError | undefined>((first, e) => (e && (!first || e.index < first.index) ? e : first), undefined);
}

/**
 * MongoDB reports code 11000. FerretDB 1.x (SQLite) does too when an insert collides, but an
 * update or a createIndex that breaks a unique index comes back as an InternalError (code 1)
 * whose message holds SQLite's "UNIQUE constraint failed", with no per-op write error.
 */
function isDuplicateKey(error: unknown): error is MongoServerError {
  if (!(error instanceof MongoServerError)) return false;
  return error.code === DUPLICATE_KEY || (error.code === 1 && error.message.includes('UNIQUE constraint failed'));
}

async function asDuplicateKeyError(error: unknown, collection: MongoCollection<Document>): Promise<unknown> {
  return isDuplicateKey(error) ? duplicateKeyError(collection, error.message) : error;
}

/**
 * The DuplicateKeyError naming the index. MongoDB's message names it ("... index: <name> dup key: ...");
 * FerretDB's names a table-prefixed index ("index '<table>_<name>'") or none, so the collection's
 * unique indexes are matched against the message, and a lone unique index is the answer.
 */
async function duplicateKeyError(collection: MongoCollection<Document>, message = ''): Promise<DuplicateKeyError> {
  const named = /index: (\S+) dup key/.exec(message)?.[1];
  if (named) return new DuplicateKeyError(collection.collectionName, named);
  const unique = (await collection.listIndexes().toArray().catch(() => []))
    .filter((index) => index.unique === true && index.name !== '_id_')
    .map((index) => String(index.name));
  const index = unique.find((name) => message.includes(`_${name}'`)) ?? (unique.length === 1 ? unique[0] : 'unknown');
  return new DuplicateKeyError(collection.collectionName, index);
}
