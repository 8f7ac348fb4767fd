import { randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { KeyStore, StoredDataKey } from '../adapters/keystore/port.js';
import type { StreamNameKey } from '../domain/reservation.js';
import { decrypt, sealGcm, type Keyring } from '../shared/encryption.js';

const KEY_BYTES = 32;
const IV_BYTES = 12;

/**
 * The customId stream-name key (src/domain/reservation.ts): one random key per deployment, a
 * row of the key store like a guest's data key (so it is wrapped under the master keys and
 * re-wrapped on rotation, never replaced by it). `#` never occurs in a guest's key id (its
 * parts are percent-encoded). The `n1` is the name key's id, written into every name.
 */
export const STREAM_NAME_KEY_ID = 'n1';
const streamNameKeyRow = (id: string) => `#customid-stream-names:${id}`;

/**
 * What a key row is, for messages: the store holds guests' keys (`<client>:<guest>`) and also
 * the keys of unmatched scans (`scan:`), batch intents (`batch:`), team member registrations
 * (`teammember:`) and the customId stream-name key.
 */
export function keyRowLabel(rowId: string): string {
  if (rowId.startsWith('#customid-stream-names:')) return `the customId stream-name key (${rowId})`;
  if (rowId.startsWith('scan:')) return `the data key of unmatched door scan ${rowId}`;
  if (rowId.startsWith('batch:')) return `the data key of batch intent ${rowId}`;
  if (rowId.startsWith('teammember:')) return `the data key of team member registration ${rowId}`;
  return `the data key of guest ${rowId}`;
}

/**
 * The guests' data keys: created on first use (a batch at once), kept wrapped under the
 * master keyring in the key store, unwrapped into a bounded in-memory LRU. `null` means the
 * guest has no key (erased, or never given one when `create` is false).
 *
 * The cache entries live at most `ttlMs`: a guest erased through another process is
 * unreadable here at the latest that long after (this process forgets at once).
 */
export class DataKeys {
  private readonly cache: LRUCache<string, Buffer | false>;

  constructor(
    readonly store: KeyStore,
    private readonly master: Keyring,
    options: { max?: number; ttlMs?: number } = {},
  ) {
    this.cache = new LRUCache({ max: options.max ?? 50_000, ttl: options.ttlMs ?? 60_000 });
  }

  /**
   * The keys of these guests; with `create`, guests without a row get a new key (erased ones
   * stay without). `likelyNew` names guests whose stream is being created: their row is not
   * looked up first, the insert finds out (an import of new guests then costs no read).
   *
   * New keys are staged when the store can (KeyStore.stage: written with the first append that
   * uses them; the caller must then seal with them and append, and handle DataKeyConflictError
   * with `forget` and another try), else inserted at once. `insertNow` inserts them at once
   * anyway (a key no event will carry: the stream-name key).
   */
  async keysFor(
    guestIds: Iterable<string>,
    create: boolean,
    likelyNew: ReadonlySet<string> = new Set(),
    options: { insertNow?: boolean } = {},
  ): Promise<Map<string, Buffer | null>> {
    const result = new Map<string, Buffer | null>();
    const missing: string[] = [];
    // New guests (`likelyNew`) are created without a look-up; the rest not cached are looked up.
    let toLookUp: string[] | undefined;
    for (const id of guestIds instanceof Set ? (guestIds as Set<string>) : new Set(guestIds)) {
      const cached = this.cache.get(id);
      if (cached !== undefined) result.set(id, cached === false ? null : cached);
      else {
        missing.push(id);
        if (!create || !likelyNew.has(id)) (toLookUp ??= []).push(id);
      }
    }
    if (missing.length === 0) return result;
    const rows = toLookUp ? await this.store.get(toLookUp) : [];
    let toCreate = missing;
    if (!create) toCreate = [];
    else if (rows.length > 0) {
      const found = new Set(rows.map((r) => r.guestId));
      toCreate = missing.filter((id) => !found.has(id));
    }
    if (toCreate.length > 0) {
      const at = new Date().toISOString();
      // One draw of randomness for the whole batch (an import creates 200 keys at once): each key's
      // 32 bytes, then the 12 of the IV that wraps it.
      const random = randomBytes((KEY_BYTES + IV_BYTES) * toCreate.length);
      const fresh: Buffer[] = [];
      const made = toCreate.map((guestId, i) => {
        const from = (KEY_BYTES + IV_BYTES) * i;
        const key = random.subarray(from, from + KEY_BYTES);
        fresh.push(key);
        return this.wrap(guestId, key, at, random.subarray(from + KEY_BYTES, from + KEY_BYTES + IV_BYTES));
      });
      const inserted = this.store.stage && !options.insertNow ? this.store.stage(made) : await this.store.insert(made);
      let lost: string[] | undefined;
      for (let i = 0; i < toCreate.length; i++) {
        const guestId = toCreate[i]!;
        if (!inserted.has(guestId)) {
          (lost ??= []).push(guestId);
          continue;
        }
        this.cache.set(guestId, fresh[i]!);
        result.set(guestId, fresh[i]!);
      }
      // Another process inserted first, or the row was there (a tombstone, a key of an earlier
      // try): the stored row wins.
      if (lost) rows.push(...(await this.store.get(lost)));
    }
    for (const row of rows) {
      const key = row.wrapped ? this.unwrap(row) : false;
      this.cache.set(row.guestId, key);
      result.set(row.guestId, key === false ? null : key);
    }
    for (const id of missing) if (!result.has(id)) result.set(id, null);
    return result;
  }

  private streamNameKeyLoad?: Promise<StreamNameKey & { since: string }>;

  /**
   * The key that names customId reservation streams, and `since`: when this deployment made it
   * (the first start of a version that hashes the names). Created on first use (the service
   * makes it on start), never erased; kept once read.
   */
  streamNameKey(): Promise<StreamNameKey & { since: string }> {
    const rowId = streamNameKeyRow(STREAM_NAME_KEY_ID);
    this.streamNameKeyLoad ??= this.keysFor([rowId], true, undefined, { insertNow: true }).then(async (keys) => {
      const key = keys.get(rowId);
      const [row] = await this.store.get([rowId]);
      if (!key || !row) throw new Error('the customId stream-name key is erased in the key store; restore the key store from a backup');
      return { id: STREAM_NAME_KEY_ID, key, since: row.createdAt };
    });
    // A failed read (the key store unreachable) is tried again by the next caller.
    this.streamNameKeyLoad.catch(() => (this.streamNameKeyLoad = undefined));
    return this.streamNameKeyLoad;
  }

  /** Drops cached keys (a staged key lost to a stored one: DataKeyConflictError); the next use reads the store. */
  forget(guestIds: Iterable<string>): void {
    for (const id of guestIds) this.cache.delete(id);
  }

  private readonly erasureListeners: ((guestId: string) => void)[] = [];

  /** `listener` hears each guest erased through this process (caches of opened data forget it). */
  onErase(listener: (guestId: string) => void): void {
    this.erasureListeners.push(listener);
  }

  /**
   * The guest's key was deleted through another thread of this process: forgotten here at once
   * (instead of when the cache entry expires), and the listeners hear it as they hear `erase`.
   */
  erasedElsewhere(guestId: string): void {
    if (this.cache.get(guestId) === false) return;
    this.cache.set(guestId, false);
    for (const listener of this.erasureListeners) listener(guestId);
  }

  /** Deletes the guest's key for good (a tombstone keeps any later write from making a new one). */
  async erase(guestId: string, at: string): Promise<void> {
    this.cache.set(guestId, false);
    for (const listener of this.erasureListeners) listener(guestId);
    await this.store.erase(guestId, at);
    await this.store.purgeDeleted();
  }

  /** Master key ids that stored data keys are wrapped under and PII_MASTER_KEYS lacks, with how many keys each. */
  missingMasterKeys(): Promise<{ masterKeyId: string; count: number }[]> {
    return this.store.countWrappedOutside([...this.master.keys.keys()]);
  }

  /**
   * Master key ids of the keyring under which a stored data key does not open: the keyring holds
   * another key under that id (a development key file made anew beside a restored copy gets the
   * same date-based id; a mistyped PII_MASTER_KEYS). One key per id is tried.
   */
  async unopenedMasterKeys(): Promise<string[]> {
    const wrong: string[] = [];
    for (const masterKeyId of this.master.keys.keys()) {
      const row = await this.store.oneWrappedUnder(masterKeyId);
      if (!row) continue;
      try {
        this.unwrap(row);
      } catch {
        wrong.push(masterKeyId);
      }
    }
    return wrong;
  }

  /** How many data keys are wrapped under another master key than the current one (what a rewrap has to do). */
  async countNotUnderCurrent(): Promise<number> {
    const others = await this.store.countWrappedOutside([this.master.currentKeyId]);
    return others.reduce((sum, m) => sum + m.count, 0);
  }

  /** Re-wraps keys wrapped under older master keys with the current one; returns how many. */
  async rotate(batchSize = 500, onProgress?: (progress: { rewrapped: number }) => void): Promise<number> {
    let done = 0;
    for (;;) {
      const rows = await this.store.wrappedUnder(this.master.currentKeyId, batchSize);
      if (rows.length === 0) return done;
      for (const row of rows) {
        const rewrapped = this.wrap(row.guestId, this.unwrap(row), row.createdAt, randomBytes(IV_BYTES));
        await this.store.rewrap(row.guestId, rewrapped.wrapped!, rewrapped.masterKeyId!);
      }
      done += rows.length;
      onProgress?.({ rewrapped: done });
    }
  }

  /** AES-256-GCM under the current master key, the guest id as additional data: the layout of src/shared/encryption.ts. */
  private wrap(guestId: string, key: Buffer, createdAt: string, iv: Buffer): StoredDataKey {
    const masterKeyId = this.master.currentKeyId;
    // The wrapped text is the key in base64url (what src/shared/encryption.ts's decrypt returns).
    const aad = Buffer.from(`personal-data-key:${guestId}`, 'utf8');
    return { guestId, wrapped: sealGcm(this.master.keys.get(masterKeyId)!, iv, aad, key.toString('base64url')), masterKeyId, createdAt };
  }

  private unwrap(row: StoredDataKey): Buffer {
    if (!this.master.keys.has(row.masterKeyId!)) {
      throw new Error(`${keyRowLabel(row.guestId)} is wrapped under master key "${row.masterKeyId}", which is not in PII_MASTER_KEYS; add it back (docs/personal-data.md, Rotation)`);
    }
    let opened: string;
    try {
      opened = decrypt(this.master, { ciphertext: row.wrapped!, keyId: row.masterKeyId! }, `personal-data-key:${row.guestId}`);
    } catch (error) {
      // GCM's own message ("Unsupported state or unable to authenticate data") names nothing.
      throw new Error(
        `the data key of ${row.guestId} does not open with master key "${row.masterKeyId}": PII_MASTER_KEYS holds another key under that id ` +
          `(another deployment's, or a changed value), or the key row was altered; set the key this data was written with (docs/personal-data.md, Keys)`,
        { cause: error },
      );
    }
    return Buffer.from(opened, 'base64url');
  }
}
