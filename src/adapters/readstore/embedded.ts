/**
 * Embedded read store: documents persisted in a SQLite file and held in memory
 * (one Map per collection, loaded on first use), queried with MongoDB filter
 * semantics through mingo (with MongoDB's string order: mingo-query.ts). Secondary
 * indexes live in memory too: they enforce unique keys and narrow equality queries
 * before mingo tests each candidate.
 *
 * Every write goes through one path (`Documents.write`): the in-memory changes are
 * made first with an undo log, then persisted in one SQLite transaction; if any op
 * or the commit fails, the undo log restores memory, so memory and file agree.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { update as mingoUpdate } from 'mingo';
import { compileFilter } from './fast-filter.js';
import { Query } from './mingo-query.js';
import { backstopPages, checkpointInBackground } from '../sqlite-checkpointer.js';
import {
  clampLimit,
  compareSortValues,
  compareValues,
  decodeCursor,
  encodeCursor,
  isPlainObject,
  project,
  sortKeys,
  sortValues,
  valueAt,
  type SortKey,
} from './cursor.js';
import {
  DuplicateKeyError,
  type Checkpoint,
  type Collection,
  type Doc,
  type Filter,
  type FindOptions,
  type IndexSpec,
  type Page,
  type ReadOptions,
  type ReadStore,
  type Sort,
  type StreamOptions,
  type Update,
  type WriteOp,
} from './port.js';

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS readstore_docs (
    collection TEXT NOT NULL,
    id TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (collection, id)
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS readstore_indexes (
    collection TEXT NOT NULL,
    name TEXT NOT NULL,
    spec TEXT NOT NULL,
    PRIMARY KEY (collection, name)
  );
  CREATE TABLE IF NOT EXISTS readstore_checkpoints (
    name TEXT PRIMARY KEY,
    position INTEGER NOT NULL
  );
`;

/** A collection read from the file into memory (its first use in this process): how many documents, in how long. */
export interface CollectionLoaded {
  collection: string;
  documents: number;
  ms: number;
}

export class EmbeddedReadStore implements ReadStore {
  readonly kind = 'embedded';
  private readonly documents: Documents;
  /** WAL checkpoints in a background thread (src/adapters/sqlite-checkpointer.ts), not inside projection commits. */
  private readonly checkpoints: { release(): Promise<void> };

  constructor(
    readonly path: string,
    options: { onCollectionLoaded?: (loaded: CollectionLoaded) => void } = {},
  ) {
    this.documents = new Documents(openDatabase(path), options.onCollectionLoaded);
    this.checkpoints = checkpointInBackground(path, 'NORMAL');
  }

  collection<T extends Doc = Doc>(name: string): Collection<T> {
    return new EmbeddedCollection<T>(this.documents, name);
  }

  async applyBatch(ops: WriteOp[], checkpoint?: Checkpoint | Checkpoint[]): Promise<void> {
    this.documents.write(ops, checkpoint === undefined ? [] : Array.isArray(checkpoint) ? checkpoint : [checkpoint]);
  }

  async getCheckpoint(name: string): Promise<number | null> {
    return this.documents.getCheckpoint(name);
  }

  async setCheckpoint(name: string, position: number | null): Promise<void> {
    this.documents.setCheckpoint(name, position);
  }

  async dropCollection(name: string): Promise<void> {
    this.documents.drop(name);
  }

  async ping(): Promise<void> {
    this.documents.ping();
  }

  /**
   * The WAL is checkpointed and truncated. Another checkpoint under way (the background thread's,
   * a few milliseconds, or another process's) makes SQLite answer busy: tried again for up to
   * about 5 s, then refused, so an erasure never reports data gone that the WAL still holds.
   */
  async purgeDeleted(): Promise<void> {
    for (let attempt = 0; attempt < 250; attempt++) {
      if (this.documents.checkpoint()) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error(`the read store's WAL (${this.path}-wal) could not be truncated: another connection kept it busy for 5 s; try again`);
  }

  async close(): Promise<void> {
    await this.checkpoints.release();
    this.documents.close();
  }
}

function openDatabase(path: string): Database.Database {
  try {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const db = new Database(path);
    try {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.pragma('busy_timeout = 5000');
      // Erasure (issue 14): deleted and overwritten documents leave zeros, not their old bytes.
      db.pragma('secure_delete = ON');
      db.pragma(`wal_autocheckpoint = ${backstopPages}`);
      db.exec(SCHEMA);
    } catch (error) {
      db.close();
      throw error;
    }
    return db;
  } catch (error) {
    throw new Error(`cannot open read store at ${path}: ${(error as Error).message}`, { cause: error });
  }
}

class EmbeddedCollection<T extends Doc> implements Collection<T> {
  constructor(
    private readonly documents: Documents,
    readonly name: string,
  ) {}

  async get(id: string, options: ReadOptions = {}): Promise<T | null> {
    const doc = this.documents.state(this.name).docs.get(id);
    return doc ? ((options.readOnly ? doc : copy(doc)) as T) : null;
  }

  async findOne(filter: Filter, options: ReadOptions = {}): Promise<T | null> {
    const [first] = this.documents.find(this.name, filter, { limit: 1, ...(options.readOnly ? { readOnly: true } : {}) }).items;
    return (first as T | undefined) ?? null;
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<Page<T>> {
    return this.documents.find(this.name, filter, options) as Page<T>;
  }

  async *stream(filter: Filter, options: StreamOptions = {}): AsyncIterable<T> {
    for await (const batch of this.batches(filter, options)) yield* batch;
  }

  async *batches(filter: Filter, options: StreamOptions = {}): AsyncIterable<T[]> {
    const batchSize = Math.max(1, options.batchSize ?? 500);
    const all = this.documents.sorted(this.name, filter, sortKeys(options.sort));
    for (let start = 0; start < all.length; start += batchSize) {
      // Let other work (HTTP requests) run between batches of a long export.
      if (start > 0) await new Promise((resolve) => setImmediate(resolve));
      const batch = all.slice(start, start + batchSize);
      // Stored documents are replaced, never changed in place, so a reader that only reads may have them.
      yield (options.readOnly ? batch : batch.map(copy)) as T[];
    }
  }

  async count(filter: Filter = {}): Promise<number> {
    return this.documents.count(this.name, filter);
  }

  async updateOne(id: string, update: Update, options: { upsert?: boolean } = {}): Promise<boolean> {
    this.documents.write([{ kind: 'update', collection: this.name, id, update, upsert: options.upsert }]);
    return this.documents.state(this.name).docs.has(id);
  }

  async replaceOne(id: string, doc: Omit<T, '_id'>): Promise<void> {
    this.documents.write([{ kind: 'replace', collection: this.name, id, doc }]);
  }

  async deleteOne(id: string): Promise<void> {
    this.documents.write([{ kind: 'delete', collection: this.name, id }]);
  }

  async swap(id: string, expected: Partial<Omit<T, '_id'>> | null, next: Omit<T, '_id'> | null): Promise<{ swapped: boolean; current: T | null }> {
    const { swapped, current } = this.documents.swap(this.name, id, expected, next);
    return { swapped, current: current ? (copy(current) as T) : null };
  }

  async createIndex(index: IndexSpec): Promise<void> {
    this.documents.createIndex(this.name, index);
  }
}

type Body = Doc;

interface CollectionState {
  readonly name: string;
  readonly docs: Map<string, Body>;
  readonly indexes: Map<string, SecondaryIndex>;
}

/** What a write changed, so that a failed batch can be undone in memory. */
interface Change {
  state: CollectionState;
  id: string;
  before: Body | undefined;
}

/** The in-memory collections and the SQLite file behind them. */
class Documents {
  private readonly states = new Map<string, CollectionState>();
  private readonly sql;
  /**
   * The stored checkpoints, as read or written through this connection (the file has one
   * process: its documents live in that process's memory). Every projection batch reads each
   * projection's checkpoint: from here, not by a query each.
   */
  private readonly checkpoints = new Map<string, number | null>();
  /** One statement that advances every checkpoint a batch moves, by how many it moves (a dozen projections: one statement, not twelve). */
  private readonly advanceAll = new Map<number, Database.Statement>();
  /** One transaction wrapper made once (better-sqlite3 builds its begin/commit functions per `transaction` call). */
  private readonly persistInTransaction: (dirty: Map<CollectionState, Map<string, Body | null>>, checkpoints: Checkpoint[]) => void;

  /**
   * Copies the WAL into the file and truncates it, so no old page versions stay in the WAL.
   * Whether it completed (false: busy, another checkpoint or a reader held the WAL).
   */
  checkpoint(): boolean {
    const [result] = this.db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
    return !result || result.busy === 0;
  }

  constructor(
    private readonly db: Database.Database,
    private readonly onLoaded?: (loaded: CollectionLoaded) => void,
  ) {
    this.sql = {
      loadDocs: db.prepare<[string], [string, string]>('SELECT id, body FROM readstore_docs WHERE collection = ?').raw(),
      loadIndexes: db.prepare<[string], { spec: string }>('SELECT spec FROM readstore_indexes WHERE collection = ?'),
      putDoc: db.prepare<[string, string, string]>(
        'INSERT INTO readstore_docs (collection, id, body) VALUES (?, ?, ?) ON CONFLICT (collection, id) DO UPDATE SET body = excluded.body',
      ),
      deleteDoc: db.prepare<[string, string]>('DELETE FROM readstore_docs WHERE collection = ? AND id = ?'),
      getDoc: db.prepare<[string, string], string>('SELECT body FROM readstore_docs WHERE collection = ? AND id = ?').pluck(),
      putIndex: db.prepare<[string, string, string]>(
        'INSERT OR REPLACE INTO readstore_indexes (collection, name, spec) VALUES (?, ?, ?)',
      ),
      dropDocs: db.prepare<[string]>('DELETE FROM readstore_docs WHERE collection = ?'),
      dropIndexes: db.prepare<[string]>('DELETE FROM readstore_indexes WHERE collection = ?'),
      getCheckpoint: db.prepare<[string], { position: number }>('SELECT position FROM readstore_checkpoints WHERE name = ?'),
      putCheckpoint: db.prepare<[string, number]>(
        'INSERT INTO readstore_checkpoints (name, position) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET position = excluded.position',
      ),
      advanceCheckpoint: db.prepare<[string, number]>(
        'INSERT INTO readstore_checkpoints (name, position) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET position = max(position, excluded.position)',
      ),
      deleteCheckpoint: db.prepare<[string]>('DELETE FROM readstore_checkpoints WHERE name = ?'),
    };
    this.persistInTransaction = db.transaction((dirty: Map<CollectionState, Map<string, Body | null>>, checkpoints: Checkpoint[]) => {
      for (const [state, bodies] of dirty) {
        for (const [id, body] of bodies) {
          if (body === null) this.sql.deleteDoc.run(state.name, id);
          else this.sql.putDoc.run(state.name, id, serialised.get(body) ?? JSON.stringify(body));
        }
      }
      if (checkpoints.length > 0) this.advance(checkpoints);
    });
  }

  /**
   * Collection.swap: decided on the document as the file holds it, in a transaction that takes
   * the write lock first (BEGIN IMMEDIATE), so another process's swap of the same document waits
   * and then sees this one's result. Memory takes the file's version when they differ (another
   * process wrote it since this one loaded the collection).
   */
  swap(name: string, id: string, expected: Record<string, unknown> | null, next: Record<string, unknown> | null): { swapped: boolean; current: Body | null } {
    const decide = this.db.transaction(() => {
      const text = this.sql.getDoc.get(name, id);
      const stored = text === undefined ? null : (JSON.parse(text) as Body);
      const matches = expected === null ? stored === null : stored !== null && Object.entries(expected).every(([field, value]) => stored[field] === value);
      const state = this.state(name);
      if (!matches) {
        putDocument(state, id, state.docs.get(id), stored ?? undefined, false);
        return { swapped: false, current: stored };
      }
      this.write([next === null ? { kind: 'delete', collection: name, id } : { kind: 'replace', collection: name, id, doc: next }]);
      return { swapped: true, current: state.docs.get(id) ?? null };
    });
    return decide.immediate();
  }

  /** The collection's in-memory state, loaded from the file on first use. */
  state(name: string): CollectionState {
    let state = this.states.get(name);
    if (state) return state;
    const started = performance.now();
    const docs = new Map<string, Body>();
    for (const [id, body] of this.sql.loadDocs.iterate(name)) docs.set(id, JSON.parse(body) as Body);
    state = { name, docs, indexes: new Map() };
    for (const { spec } of this.sql.loadIndexes.all(name)) {
      const index = new SecondaryIndex(JSON.parse(spec) as IndexSpec, docs);
      for (const [id, doc] of docs) index.add(id, doc);
      state.indexes.set(index.spec.name, index);
    }
    this.states.set(name, state);
    // Synchronous and as long as the collection is large (a restart's first requests wait on it): said, so a slow start has a name.
    this.onLoaded?.({ collection: name, documents: docs.size, ms: Math.round(performance.now() - started) });
    return state;
  }

  /**
   * Applies ops in order, then persists them and the checkpoint in one transaction: all or nothing.
   * Since ops and checkpoint commit together, an op at or below the checkpoint's stored position
   * was applied before: a replayed batch skips it, and the checkpoint never moves back.
   */
  write(ops: WriteOp[], checkpoints: Checkpoint[] = []): void {
    const applied = new Map(checkpoints.map((c) => [c.name, this.getCheckpoint(c.name)]));
    const only = checkpoints.length === 1 ? checkpoints[0]!.name : undefined;
    const undo: Change[] = [];
    // Final body (or null: deleted) per collection and id; several ops on one document persist once.
    const dirty = new Map<CollectionState, Map<string, Body | null>>();
    try {
      for (const op of ops) {
        const guard = applied.get(op.checkpoint ?? only ?? '');
        if (guard != null && op.position !== undefined && op.position <= guard) continue;
        const state = this.state(op.collection);
        const before = state.docs.get(op.id);
        const after = nextDoc(op, before);
        if (after === undefined) continue;
        putDocument(state, op.id, before, after ?? undefined, true);
        undo.push({ state, id: op.id, before });
        let bodies = dirty.get(state);
        if (!bodies) dirty.set(state, (bodies = new Map()));
        bodies.set(op.id, after);
      }
      this.persist(dirty, checkpoints);
    } catch (error) {
      for (const { state, id, before } of undo.reverse()) putDocument(state, id, state.docs.get(id), before, false);
      throw error;
    }
  }

  /** Each document's final version of the batch is serialised once, however many ops changed it. */
  private persist(dirty: Map<CollectionState, Map<string, Body | null>>, checkpoints: Checkpoint[]): void {
    this.persistInTransaction(dirty, checkpoints);
    // Committed: what the file now holds (never moved backwards).
    for (const { name, position } of checkpoints) {
      const stored = this.checkpoints.get(name);
      this.checkpoints.set(name, stored == null ? position : Math.max(stored, position));
    }
  }

  /** A name given twice moves to the further position: SQLite upserts the rows of one statement in turn. */
  private advance(checkpoints: Checkpoint[]): void {
    if (checkpoints.length === 1) {
      this.sql.advanceCheckpoint.run(checkpoints[0]!.name, checkpoints[0]!.position);
      return;
    }
    let statement = this.advanceAll.get(checkpoints.length);
    if (!statement) {
      statement = this.db.prepare(
        `INSERT INTO readstore_checkpoints (name, position) VALUES ${checkpoints.map(() => '(?, ?)').join(', ')} ` +
          'ON CONFLICT (name) DO UPDATE SET position = max(position, excluded.position)',
      );
      this.advanceAll.set(checkpoints.length, statement);
    }
    statement.run(checkpoints.flatMap((c) => [c.name, c.position]));
  }

  createIndex(name: string, spec: IndexSpec): void {
    const state = this.state(name);
    const existing = state.indexes.get(spec.name);
    if (existing) {
      if (sameIndex(existing.spec, spec)) return;
      throw new Error(`index ${spec.name} on ${name} already exists with other keys or options`);
    }
    const index = new SecondaryIndex(
      {
        name: spec.name,
        keys: { ...spec.keys },
        unique: spec.unique === true,
        ...(spec.substring ? { substring: true } : {}),
      },
      state.docs,
    );
    for (const [id, doc] of state.docs) {
      if (index.conflicts(id, doc)) throw new DuplicateKeyError(name, spec.name);
      index.add(id, doc);
    }
    this.sql.putIndex.run(name, spec.name, JSON.stringify(index.spec));
    state.indexes.set(spec.name, index);
  }

  drop(name: string): void {
    this.db.transaction(() => {
      this.sql.dropDocs.run(name);
      this.sql.dropIndexes.run(name);
    })();
    this.states.delete(name);
  }

  find(name: string, filter: Filter, options: FindOptions): Page<Doc> {
    const keys = sortKeys(options.sort);
    const limit = clampLimit(options.limit);
    const after = options.cursor === undefined ? undefined : decodeCursor(options.cursor, keys, filter);
    const state = this.state(name);
    // A rare text found through a substring index beats reading a whole group in order.
    const contains = substringCandidates(state, filter);
    const inOrder =
      contains && contains.size <= 2000 ? undefined : this.findInIndexOrder(state, filter, keys, limit, after, options);
    if (inOrder) return inOrder;
    const top = new TopRanked(limit + 1, keys);
    for (const doc of this.matches(this.state(name), filter)) {
      const values = sortValues(doc, keys);
      if (after && compareSortValues(values, after, keys) <= 0) continue;
      top.offer(values, doc);
    }
    const ranked = top.entries;
    const page = ranked.slice(0, limit);
    const last = page[page.length - 1];
    return {
      items: page.map(({ doc }) => project(options.readOnly ? doc : copy(doc), options.projection)),
      ...(ranked.length > limit && last ? { nextCursor: encodeCursor(last.values, keys, filter) } : {}),
    };
  }

  /**
   * When an index's first key is pinned to one value and its other keys are the sort, read
   * that index group in order from the cursor and stop after a page: the cost follows the
   * page size and the filter's selectivity, not the collection size.
   */
  private findInIndexOrder(
    state: CollectionState,
    filter: Filter,
    keys: SortKey[],
    limit: number,
    after: unknown[] | undefined,
    options: FindOptions,
  ): Page<Doc> | undefined {
    const index = [...state.indexes.values()].find(
      (candidate) =>
        candidate.restKeys.length === keys.length &&
        candidate.restKeys.every(([path, direction], i) => keys[i]![0] === path && keys[i]![1] === direction),
    );
    if (!index) return undefined;
    const pinned = pinnedValues(filter, index.firstPath);
    if (!pinned || pinned.length !== 1) return undefined;
    const fast = compileFilter(filter);
    const query = fast ? undefined : new Query(filter);
    const ids = index.sortedIds(pinned[0]);
    let start = 0;
    if (after) {
      // Binary search for the first id after the cursor.
      let hi = ids.length;
      while (start < hi) {
        const mid = (start + hi) >>> 1;
        if (compareSortValues(sortValues(state.docs.get(ids[mid]!), keys), after, keys) <= 0) start = mid + 1;
        else hi = mid;
      }
    }
    const page: Body[] = [];
    let more = false;
    for (let i = start; i < ids.length; i++) {
      const doc = state.docs.get(ids[i]!);
      if (!doc || !(fast ? fast(doc) : query!.test(doc))) continue;
      if (page.length === limit) {
        more = true;
        break;
      }
      page.push(doc);
    }
    const last = page[page.length - 1];
    return {
      items: page.map((doc) => project(options.readOnly ? doc : copy(doc), options.projection)),
      ...(more && last ? { nextCursor: encodeCursor(sortValues(last, keys), keys, filter) } : {}),
    };
  }

  /** Every match, in sort order (a snapshot: later writes do not change it). */
  sorted(name: string, filter: Filter, keys: SortKey[]): Body[] {
    const ranked = this.matches(this.state(name), filter).map((doc) => ({ values: sortValues(doc, keys), doc }));
    ranked.sort((a, b) => compareSortValues(a.values, b.values, keys));
    return ranked.map(({ doc }) => doc);
  }

  count(name: string, filter: Filter): number {
    const state = this.state(name);
    if (Object.keys(filter).length === 0) return state.docs.size;
    return this.matches(state, filter).length;
  }

  /** The documents that match, gathered in a plain loop (no generator step per document). */
  private matches(state: CollectionState, filter: Filter): Body[] {
    // A compiled predicate for common filters; mingo for everything else.
    const fast = compileFilter(filter);
    const query = fast || Object.keys(filter).length === 0 ? undefined : new Query(filter);
    const found: Body[] = [];
    for (const doc of candidates(state, filter)) {
      if (fast ? fast(doc) : !query || query.test(doc)) found.push(doc);
    }
    return found;
  }

  getCheckpoint(name: string): number | null {
    if (this.checkpoints.has(name)) return this.checkpoints.get(name)!;
    const position = this.sql.getCheckpoint.get(name)?.position ?? null;
    this.checkpoints.set(name, position);
    return position;
  }

  setCheckpoint(name: string, position: number | null): void {
    if (position === null) this.sql.deleteCheckpoint.run(name);
    else this.sql.putCheckpoint.run(name, position);
    this.checkpoints.set(name, position);
  }

  ping(): void {
    this.db.prepare('SELECT 1').get();
  }

  close(): void {
    this.db.close();
    this.states.clear();
  }
}

// ---------------------------------------------------------------------------------------
// Writes

/**
 * The document after the op: a new object (the stored one is never changed in place), null when
 * it is deleted, or undefined when the op changes nothing (an update of a missing document
 * without upsert). Documents hold what the file holds and share nothing with the writer: a JSON
 * round trip normalises them (dates become ISO strings, undefined fields vanish) and copies the
 * writer's objects. An update that only sets or counts scalar JSON values (most projection ops:
 * a check-in's flags, counters, times) needs neither, so it skips the round trip; a replacement
 * of plain JSON values (an import's guests) is copied as the round trip would leave it
 * (plainDocument), without the parse; the file's copy is serialised once per document and batch, in persist.
 */
function nextDoc(op: WriteOp, before: Body | undefined): Body | null | undefined {
  switch (op.kind) {
    case 'delete':
      return before ? null : undefined;
    case 'replace': {
      // Most replaced documents (an import's guests) hold plain JSON values only: copied as the round trip would leave them, without it.
      const plain = plainDocument(op.id, op.doc);
      if (plain) return plain;
      const { _id: _ignored, ...fields } = op.doc as Partial<Body>;
      return roundTrip({ _id: op.id, ...fields });
    }
    case 'update': {
      if (!before && !op.upsert) return undefined;
      const after = before ? applyUpdate(before, op.update) : insertWithUpdate(op.id, op.update);
      if (after._id !== op.id) throw new Error(`update of ${op.collection}/${op.id} must not change _id`);
      // mingo's updater (the uncommon operators) may build values of its own: round trip, as before.
      return isScalarUpdate(op.update) && !(after as Record<symbol, unknown>)[viaMingo] ? after : roundTrip(after);
    }
  }
}

/**
 * The JSON text each document came from in `roundTrip`, so `persist` writes that text instead of
 * serialising the document a second time (one JSON.stringify per document, not two). Valid because stored documents are never mutated (updates make new objects; read-only
 * readers must not write), and stringifying parsed JSON gives back the same text.
 */
const serialised = new WeakMap<Body, string>();

/** The document as JSON would store it (undefined dropped, dates as text), remembering its text. */
function roundTrip(doc: object): Body {
  const json = JSON.stringify(doc);
  const body = JSON.parse(json) as Body;
  serialised.set(body, json);
  return body;
}

/** What plainJson returns for a value it leaves to the JSON round trip. */
const notPlain = Symbol('notPlain');

/**
 * A replaced document with `_id` first, built as `roundTrip` would build it but without the JSON
 * text's parse, when every value in it is plain JSON: strings, booleans, null, finite numbers,
 * arrays without undefined or holes, and objects of Object's (or no) prototype without `toJSON`,
 * nested at most 32 deep. The copy drops undefined fields, writes -0 as 0, keeps the key order
 * JSON.stringify follows (Object.keys), and shares no object with the writer. Undefined for
 * anything else (a Date, a function, a non-finite number, a `__proto__` key, ...): the round trip
 * normalises those, as before. `persist` serialises the copy once, as it does an updated document.
 */
function plainDocument(id: string, doc: object): Body | undefined {
  if (typeof (doc as { toJSON?: unknown }).toJSON === 'function') return undefined;
  // 33: each field is then copied with the depth 32 a nested value has left (see plainObject).
  const copied = plainObject(doc, 33, { _id: id }, '_id');
  return copied === notPlain ? undefined : (copied as Body);
}

/** A plain JSON value copied (see plainDocument), or notPlain. */
function plainJson(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      // -0 === 0: JSON writes both as 0.
      return Number.isFinite(value) ? (value === 0 ? 0 : value) : notPlain;
    case 'object':
      break;
    default:
      return notPlain;
  }
  if (value === null) return null;
  if (depth === 0 || typeof (value as { toJSON?: unknown }).toJSON === 'function') return notPlain;
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype) return notPlain;
    const out: unknown[] = [];
    for (let i = 0; i < value.length; i++) {
      const element: unknown = value[i];
      if (element === undefined) return notPlain;
      const copied = plainJson(element, depth - 1);
      if (copied === notPlain) return notPlain;
      out.push(copied);
    }
    return out;
  }
  return plainObject(value, depth, {});
}

/** An object of Object's (or no) prototype copied into `out` (see plainDocument), leaving out `skip`; or notPlain. */
function plainObject(value: object, depth: number, out: Record<string, unknown>, skip?: string): Record<string, unknown> | typeof notPlain {
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return notPlain;
  const source = value as Record<string, unknown>;
  for (const key of Object.keys(source)) {
    if (key === skip) continue;
    const field = source[key];
    if (field === undefined) continue;
    if (key === '__proto__') return notPlain;
    const copied = plainJson(field, depth - 1);
    if (copied === notPlain) return notPlain;
    out[key] = copied;
  }
  return out;
}

/** Marks a document that mingo's updater produced (not enumerable: never stored or serialised). */
const viaMingo = Symbol('viaMingo');

/** Whether every operator of an update gives scalar JSON values: strings, booleans, null, finite numbers (not -0). */
function isScalarUpdate(update: Update): boolean {
  for (const op in update) {
    const fields = update[op];
    if (!isPlainObject(fields)) return false;
    for (const path in fields) {
      const value = fields[path];
      if (value === null || typeof value === 'string' || typeof value === 'boolean') continue;
      if (typeof value === 'number' && Number.isFinite(value) && !Object.is(value, -0)) continue;
      return false;
    }
  }
  return true;
}

/** An upsert's new document: `$setOnInsert` (which mingo lacks) first, then the other operators. */
function insertWithUpdate(id: string, update: Update): Body {
  const { $setOnInsert, ...rest } = update;
  const start: Body = { _id: id };
  const inserted = isPlainObject($setOnInsert) ? applyUpdate(start, { $set: $setOnInsert }) : start;
  return applyUpdate(inserted, rest);
}

/** The document after MongoDB update operators, without touching `doc` itself. */
function applyUpdate(doc: Body, update: Update): Body {
  const { $setOnInsert: _ignoredOnUpdate, ...modifier } = update;
  const operators = Object.keys(modifier);
  if (operators.length === 0) return doc;
  const nonOperator = operators.find((op) => !op.startsWith('$'));
  if (nonOperator) throw new Error(`update must use operators ($set, $inc, ...), got field ${nonOperator}`);
  const fast = applySimpleUpdate(doc, modifier);
  if (fast) return fast;
  const copyOfDoc = structuredClone(doc);
  mingoUpdate(copyOfDoc, modifier as Parameters<typeof mingoUpdate>[1]);
  Object.defineProperty(copyOfDoc, viaMingo, { value: true, enumerable: false });
  return copyOfDoc;
}

/**
 * One operator applied to one field of a (copied) parent object. Returns false when the
 * case is not a simple one (then mingo applies the whole update, with MongoDB's errors).
 */
type FieldUpdate = (parent: Record<string, unknown>, field: string, value: unknown) => boolean;

const fieldUpdates: Record<string, FieldUpdate> = {
  $set: (parent, field, value) => {
    parent[field] = value;
    return true;
  },
  $unset: (parent, field) => {
    delete parent[field];
    return true;
  },
  $inc: (parent, field, value) => {
    const current = parent[field] ?? 0;
    if (typeof value !== 'number' || typeof current !== 'number' || !Number.isFinite(current + value)) return false;
    parent[field] = current + value;
    return true;
  },
  $max: (parent, field, value) => {
    if (parent[field] === undefined || compareValues(value, parent[field]) > 0) parent[field] = value;
    return true;
  },
  $min: (parent, field, value) => {
    if (parent[field] === undefined || compareValues(value, parent[field]) < 0) parent[field] = value;
    return true;
  },
  $push: (parent, field, value) => {
    const items = eachValue(value, true);
    const current = parent[field] ?? [];
    if (!items || !Array.isArray(current)) return false;
    parent[field] = sliced([...current, ...items], isPlainObject(value) ? value.$slice : undefined);
    return true;
  },
  $addToSet: (parent, field, value) => {
    const items = eachValue(value);
    const current = parent[field] ?? [];
    if (!items || !Array.isArray(current)) return false;
    const next = [...current];
    const present = new Set(next.map((element) => JSON.stringify(element)));
    for (const item of items) {
      const key = JSON.stringify(item);
      if (!present.has(key)) next.push(item), present.add(key);
    }
    parent[field] = next;
    return true;
  },
  $pull: (parent, field, value) => {
    const current = parent[field];
    if (current === undefined) return true;
    if (!isScalar(value) || !Array.isArray(current) || !current.every(isScalar)) return false;
    parent[field] = current.filter((element) => element !== value);
    return true;
  },
};

/** Operators that never create a missing field (or the objects on its path). */
const removing = new Set(['$unset', '$pull']);

/**
 * The values `$push`/`$addToSet` add: the value itself, or `{$each: [...]}` without other
 * modifiers (`$push` also with an integer `$slice`, its bound on the array).
 */
function eachValue(value: unknown, sliceAllowed = false): unknown[] | undefined {
  if (!isPlainObject(value) || !Object.keys(value).some((k) => k.startsWith('$'))) return [value];
  const keys = Object.keys(value).filter((k) => !(sliceAllowed && k === '$slice' && Number.isInteger(value.$slice)));
  return keys.length === 1 && keys[0] === '$each' && Array.isArray(value.$each) ? value.$each : undefined;
}

/** `$push`'s `$slice`: the first n elements (n >= 0) or the last -n (n < 0), as MongoDB keeps them. */
function sliced(items: unknown[], slice: unknown): unknown[] {
  if (typeof slice !== 'number') return items;
  if (slice >= 0) return items.length > slice ? items.slice(0, slice) : items;
  return items.length > -slice ? items.slice(items.length + slice) : items;
}

/**
 * The common update operators on plain dotted paths through objects, applied copy-on-write.
 * mingo's updater costs ~50 µs a call whatever the update; projections mostly write these
 * operators, and doing them here keeps batches well above 20,000 upserts/s.
 * Returns undefined for anything else (array indexes or arrays on the path, positional or
 * array-filter paths, other operators or modifiers, conflicting paths, `_id`), which then
 * goes through mingo with its exact MongoDB semantics and errors.
 */
/** A path's segments when it is a plain dotted path (no `_id`, positional, array index or empty part), else null; kept per path. */
const pathSegments = new Map<string, string[] | null>();
function simpleSegments(path: string): string[] | null {
  let segments = pathSegments.get(path);
  if (segments === undefined) {
    const parts = path.split('.');
    segments = parts[0] === '_id' || parts.some((s) => s === '' || s.startsWith('$') || /^\d+$/.test(s)) ? null : parts;
    // Paths carry ids (timeline minutes, funnel entries): the memory starts over past a bound.
    if (pathSegments.size >= 10_000) pathSegments.clear();
    pathSegments.set(path, segments);
  }
  return segments;
}

function applySimpleUpdate(doc: Body, modifier: Update): Body | undefined {
  const steps: Array<[op: string, segments: string[], value: unknown]> = [];
  const paths = new Set<string>();
  for (const [op, expr] of Object.entries(modifier)) {
    if (!(op in fieldUpdates) || !isPlainObject(expr)) return undefined;
    for (const [path, value] of Object.entries(expr)) {
      const segments = simpleSegments(path);
      if (!segments) return undefined;
      if (paths.has(path)) return undefined;
      paths.add(path);
      steps.push([op, segments, value]);
    }
  }
  for (const path of paths) {
    for (let i = path.indexOf('.'); i > 0; i = path.indexOf('.', i + 1)) {
      if (paths.has(path.slice(0, i))) return undefined;
    }
  }
  const root: Record<string, unknown> = { ...doc };
  for (const [op, segments, value] of steps) {
    let parent: Record<string, unknown> | undefined = root;
    for (let i = 0; i < segments.length - 1; i++) {
      const segment = segments[i]!;
      const child: unknown = parent[segment];
      if (child === undefined) {
        if (removing.has(op)) {
          parent = undefined;
          break;
        }
        parent = parent[segment] = {};
      } else if (isPlainObject(child)) {
        parent = parent[segment] = { ...child };
      } else {
        return undefined;
      }
    }
    if (parent && !fieldUpdates[op](parent, segments[segments.length - 1], value)) return undefined;
  }
  return root as Body;
}

/** Swaps a document in memory and in every index; checks unique indexes first when asked. */
function putDocument(
  state: CollectionState,
  id: string,
  before: Body | undefined,
  after: Body | undefined,
  checkUnique: boolean,
): void {
  if (checkUnique && after) {
    for (const index of state.indexes.values()) {
      if (index.conflicts(id, after)) throw new DuplicateKeyError(state.name, index.spec.name);
    }
  }
  for (const index of state.indexes.values()) {
    // Most updates (a check-in, a counter) leave an index's fields alone: its entries stay.
    if (before && after && index.sameKeys(before, after)) continue;
    if (before) index.remove(id, before);
    if (after) index.add(id, after);
  }
  if (after) state.docs.set(id, after);
  else state.docs.delete(id);
}

function copy<T>(doc: T): T {
  return structuredClone(doc);
}

// ---------------------------------------------------------------------------------------
// Indexes and query planning

/** A lookup key for a value: JSON tells 1 from "1"; missing and null share one key, as in MongoDB. */
function valueKey(value: unknown): string {
  return JSON.stringify(value ?? null);
}

/** Ids per value key; one id is kept as a string, since most keys of a unique index have one. */
class IdsByValue {
  private readonly map = new Map<string, string | Set<string>>();

  add(key: string, id: string): void {
    const current = this.map.get(key);
    if (current === undefined) this.map.set(key, id);
    else if (typeof current === 'string') {
      if (current !== id) this.map.set(key, new Set([current, id]));
    } else current.add(id);
  }

  remove(key: string, id: string): void {
    const current = this.map.get(key);
    if (current === undefined) return;
    if (typeof current === 'string') {
      if (current === id) this.map.delete(key);
    } else {
      current.delete(id);
      if (current.size === 1) this.map.set(key, current.values().next().value as string);
    }
  }

  size(key: string): number {
    const current = this.map.get(key);
    return current === undefined ? 0 : typeof current === 'string' ? 1 : current.size;
  }

  *ids(key: string): Generator<string> {
    const current = this.map.get(key);
    if (current === undefined) return;
    if (typeof current === 'string') yield current;
    else yield* current;
  }
}

/** A group of a sorted index: its ids in order as of its last read, and the writes since. */
interface SortedGroup {
  ids: string[];
  /** Ids that came into the group (or changed their sort values) since `ids` was made. */
  readonly added: Set<string>;
  /** Ids that left the group (or changed their sort values) since `ids` was made. */
  readonly removed: Set<string>;
}

/**
 * An index from a createIndex spec. It maps every value of the first key to ids (an
 * array field maps each element, like a MongoDB multikey index), to narrow equality
 * queries; a unique index also maps the whole compound key to its one id.
 *
 * Unique keys treat a missing field as null, as a (non-sparse) MongoDB unique index
 * does: two documents that both lack the field collide. Arrays are compared as whole
 * values, not per element.
 */
class SecondaryIndex {
  readonly firstPath: string;
  private readonly firstSegments: string[];
  private readonly paths: string[];
  private readonly byFirstValue = new IdsByValue();
  private readonly byKey = new Map<string, string>();
  /** The order of the keys after the first (then `_id`), as a sort. */
  readonly restKeys: SortKey[];
  /**
   * Per first-key value: ids in `restKeys` order, built on the first query that needs it. Writes
   * do not splice them in and out one by one (a search and an O(n) move per document: an import
   * into an event someone had listed paid about 100 µs a guest at 100,000 guests); they note the
   * ids that came and went, and the next query that reads the group merges them in one pass.
   */
  private readonly sortedGroups = new Map<string, SortedGroup>();
  /** Substring indexes: lower-case trigram -> ids whose value contains it. */
  private readonly grams?: Map<string, Set<string>>;

  constructor(
    readonly spec: IndexSpec,
    private readonly docs: Map<string, Body>,
  ) {
    this.paths = Object.keys(spec.keys);
    this.firstPath = this.paths[0];
    this.firstSegments = this.firstPath.split('.');
    this.restKeys = [...this.paths.slice(1).map((p) => [p, spec.keys[p] === -1 ? -1 : 1] as SortKey), ['_id', 1] as SortKey];
    if (spec.substring) this.grams = new Map();
  }

  /**
   * For a search of `literal` anywhere in the value (any case): the ids that can match, from
   * the rarest of its trigrams; undefined when this index cannot tell (not a substring index,
   * or a text shorter than a trigram).
   */
  substringCandidates(literal: string): Set<string> | undefined {
    if (!this.grams) return undefined;
    const grams = trigrams(literal);
    if (grams.size === 0) return undefined;
    let best: Set<string> | undefined;
    for (const gram of grams) {
      const ids = this.grams.get(gram);
      if (!ids) return new Set();
      if (!best || ids.size < best.size) best = ids;
    }
    return best;
  }

  private indexGrams(id: string, doc: Body, add: boolean): void {
    if (!this.grams) return;
    const value = valueAt(doc, this.firstPath);
    if (typeof value !== 'string') return;
    for (const gram of trigrams(value)) {
      let ids = this.grams.get(gram);
      if (add) {
        if (!ids) this.grams.set(gram, (ids = new Set()));
        ids.add(id);
      } else if (ids) {
        ids.delete(id);
        if (ids.size === 0) this.grams.delete(gram);
      }
    }
  }

  /** Where a document with these sort values sits (or would sit) in `ids`, searching from `lo`. */
  private position(ids: readonly string[], target: unknown[], lo: number): number {
    let hi = ids.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareSortValues(sortValues(this.docs.get(ids[mid]!), this.restKeys), target, this.restKeys) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * The group's ids with the writes since it was last read: those that went or moved taken out
   * (one pass), those that came or moved put in their places (the newcomers sorted, each place
   * found by a binary search after the previous one, and the array copied once).
   */
  private merged(group: SortedGroup): string[] {
    const { added, removed } = group;
    // An id that moved was removed first, so `removed` names every id to take out.
    const kept = removed.size > 0 ? group.ids.filter((id) => !removed.has(id)) : group.ids;
    const incoming = [...added]
      .filter((id) => this.docs.has(id))
      .map((id) => ({ id, values: sortValues(this.docs.get(id), this.restKeys) }))
      .sort((a, b) => compareSortValues(a.values, b.values, this.restKeys));
    const ids = new Array<string>(kept.length + incoming.length);
    let from = 0;
    let to = 0;
    for (const { id, values } of incoming) {
      const at = this.position(kept, values, from);
      while (from < at) ids[to++] = kept[from++]!;
      ids[to++] = id;
    }
    while (from < kept.length) ids[to++] = kept[from++]!;
    added.clear();
    removed.clear();
    return ids;
  }

  /** Whether two versions of a document have the same values at every indexed path. */
  sameKeys(a: Body, b: Body): boolean {
    return this.paths.every((path) => {
      const x = valueAt(a, path);
      const y = valueAt(b, path);
      return x === y || (typeof x === 'object' && JSON.stringify(x) === JSON.stringify(y));
    });
  }

  /**
   * The ids whose first key is `value`, in `restKeys` order: lets a query that pins the first
   * key and sorts by the rest read in order and stop at its limit, as a database index scan does.
   */
  sortedIds(value: unknown): string[] {
    const key = valueKey(value);
    const group = this.sortedGroups.get(key);
    if (!group) {
      const entries = [...this.byFirstValue.ids(key)].map((id) => ({ id, values: sortValues(this.docs.get(id), this.restKeys) }));
      entries.sort((a, b) => compareSortValues(a.values, b.values, this.restKeys));
      const ids = entries.map((e) => e.id);
      this.sortedGroups.set(key, { ids, added: new Set(), removed: new Set() });
      return ids;
    }
    if (group.added.size > 0 || group.removed.size > 0) group.ids = this.merged(group);
    return group.ids;
  }

  /** Whether another document already holds this document's unique key. */
  conflicts(id: string, doc: Body): boolean {
    if (!this.spec.unique) return false;
    const owner = this.byKey.get(this.uniqueKey(doc));
    return owner !== undefined && owner !== id;
  }

  add(id: string, doc: Body): void {
    this.indexGrams(id, doc, true);
    for (const key of this.firstValueKeys(doc)) {
      this.byFirstValue.add(key, id);
      this.sortedGroups.get(key)?.added.add(id);
    }
    if (this.spec.unique) this.byKey.set(this.uniqueKey(doc), id);
  }

  remove(id: string, doc: Body): void {
    this.indexGrams(id, doc, false);
    for (const key of this.firstValueKeys(doc)) {
      this.byFirstValue.remove(key, id);
      const group = this.sortedGroups.get(key);
      // Taken out of its old place at the next read; if it comes back (a changed name), it is put in its new one.
      group?.added.delete(id);
      group?.removed.add(id);
    }
    if (this.spec.unique) {
      const key = this.uniqueKey(doc);
      if (this.byKey.get(key) === id) this.byKey.delete(key);
    }
  }

  count(values: unknown[]): number {
    let n = 0;
    for (const key of new Set(values.map(valueKey))) n += this.byFirstValue.size(key);
    return n;
  }

  *ids(values: unknown[]): Generator<string> {
    for (const key of new Set(values.map(valueKey))) yield* this.byFirstValue.ids(key);
  }

  private uniqueKey(doc: Body): string {
    return JSON.stringify(this.paths.map((path) => valueAt(doc, path) ?? null));
  }

  /** The first key's value keys; a top-level field that is not an array (most) has just its own. */
  private firstValueKeys(doc: Body): Iterable<string> {
    if (this.firstSegments.length === 1) {
      const value = doc[this.firstPath];
      if (!Array.isArray(value)) return [valueKey(value)];
    }
    const values: unknown[] = [];
    collectValues(doc, this.firstSegments, 0, values);
    return new Set(values.map(valueKey));
  }
}

/** Every value a dotted path reaches, fanning out over arrays (elements and the array itself). */
function collectValues(value: unknown, segments: string[], i: number, out: unknown[]): void {
  if (Array.isArray(value)) {
    if (i === segments.length) out.push(value);
    for (const element of value) collectValues(element, segments, i, out);
    if (i < segments.length && /^\d+$/.test(segments[i])) collectValues(value[Number(segments[i])], segments, i + 1, out);
    return;
  }
  if (i === segments.length) out.push(value);
  else if (isPlainObject(value)) collectValues(value[segments[i]], segments, i + 1, out);
  else out.push(undefined);
}

/**
 * The documents that can match: through `_id` or the smallest index whose first key the
 * filter (or a clause of its top-level `$and`) pins to scalar values; else all of them.
 * mingo still tests every candidate, so an index only has to give a superset.
 */
function candidates(state: CollectionState, filter: Filter): Iterable<Body> {
  const ids = pinnedValues(filter, '_id');
  if (ids) return lookupIds(state, new Set(ids.filter((id): id is string => typeof id === 'string')));
  let best: { index: SecondaryIndex; values: unknown[]; size: number } | undefined;
  for (const index of state.indexes.values()) {
    const values = pinnedValues(filter, index.firstPath);
    if (!values) continue;
    const size = index.count(values);
    if (!best || size < best.size) best = { index, values, size };
  }
  const contains = substringCandidates(state, filter);
  if (contains && (!best || contains.size < best.size)) return lookupIds(state, contains);
  if (!best) return state.docs.values();
  // One value's ids are distinct already; several values (an $in) may share ids.
  const found = best.index.ids(best.values);
  return lookupIds(state, best.values.length === 1 ? found : new Set(found));
}

/** The smallest candidate set any substring index gives for a literal `$regex` in the filter. */
function substringCandidates(state: CollectionState, filter: Filter): Set<string> | undefined {
  let best: Set<string> | undefined;
  for (const index of state.indexes.values()) {
    if (!index.spec.substring) continue;
    const literal = regexLiteral(filter, index.firstPath);
    const ids = literal === undefined ? undefined : index.substringCandidates(literal);
    if (ids && (!best || ids.size < best.size)) best = ids;
  }
  return best;
}

/** The text a `$regex` at `path` matches literally (only escaped metacharacters), if it is one. */
function regexLiteral(filter: Filter, path: string): string | undefined {
  const clauses = [filter, ...(Array.isArray(filter.$and) ? filter.$and.filter(isPlainObject) : [])];
  for (const clause of clauses) {
    const condition = (clause as Filter)[path];
    if (!isPlainObject(condition) || typeof condition.$regex !== 'string') continue;
    const pattern = condition.$regex;
    if (!/^(?:[^\\.*+?^${}()|[\]]|\\[.*+?^${}()|[\]\\/-])*$/.test(pattern)) continue;
    return pattern.replace(/\\(.)/g, '$1');
  }
  return undefined;
}

/** Lower-case trigrams of a text (what a substring index stores and looks up). */
function trigrams(text: string): Set<string> {
  const lower = text.toLowerCase();
  const grams = new Set<string>();
  for (let i = 0; i + 3 <= lower.length; i++) grams.add(lower.slice(i, i + 3));
  return grams;
}

function lookupIds(state: CollectionState, ids: Iterable<string>): Body[] {
  const found: Body[] = [];
  for (const id of ids) {
    const doc = state.docs.get(id);
    if (doc) found.push(doc);
  }
  return found;
}

/** The scalar values a filter requires at `path` (equality, `$eq` or `$in`), if it does. */
function pinnedValues(filter: Filter, path: string): unknown[] | undefined {
  const own = equalityValues(filter[path]);
  if (own) return own;
  if (!Array.isArray(filter.$and)) return undefined;
  for (const clause of filter.$and) {
    const values = isPlainObject(clause) ? equalityValues(clause[path]) : undefined;
    if (values) return values;
  }
  return undefined;
}

function equalityValues(condition: unknown): unknown[] | undefined {
  if (condition === undefined) return undefined;
  if (isScalar(condition)) return [condition];
  if (!isPlainObject(condition) || !Object.keys(condition).every((k) => k.startsWith('$'))) return undefined;
  if ('$eq' in condition && isScalar(condition.$eq)) return [condition.$eq];
  if (Array.isArray(condition.$in) && condition.$in.every(isScalar)) return condition.$in;
  return undefined;
}

function isScalar(value: unknown): value is string | number | boolean | null {
  return value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

function sameIndex(a: IndexSpec, b: IndexSpec): boolean {
  return (
    JSON.stringify(Object.entries(a.keys)) === JSON.stringify(Object.entries(b.keys)) &&
    !!a.unique === !!b.unique &&
    !!a.substring === !!b.substring
  );
}

/** The best `capacity` entries seen so far, kept in sort order (a page plus one to tell whether more follow). */
class TopRanked {
  readonly entries: Array<{ values: unknown[]; doc: Body }> = [];

  constructor(
    private readonly capacity: number,
    private readonly keys: SortKey[],
  ) {}

  offer(values: unknown[], doc: Body): void {
    const { entries, keys } = this;
    const n = entries.length;
    if (n === this.capacity && compareSortValues(values, entries[n - 1].values, keys) >= 0) return;
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareSortValues(entries[mid].values, values, keys) <= 0) lo = mid + 1;
      else hi = mid;
    }
    entries.splice(lo, 0, { values, doc });
    if (entries.length > this.capacity) entries.pop();
  }
}
