/**
 * Key store port (issue 14, crypto-shredding): one data key per guest, kept wrapped (encrypted)
 * under a master key, and deletable. Deleting a guest's key leaves a tombstone, so no later
 * write can create a new key for an erased guest. Adapters: embedded (SQLite file) and MongoDB.
 */

/** A guest's data key as stored: `wrapped` is the key encrypted under master key `masterKeyId`. */
export interface StoredDataKey {
  guestId: string;
  /** Absent on a tombstone: the guest was erased. */
  wrapped?: string;
  masterKeyId?: string;
  createdAt: string;
  erasedAt?: string;
}

export interface KeyStore {
  readonly kind: string;
  /** The rows of these guests (keys and tombstones); guests without a row are left out. */
  get(guestIds: string[]): Promise<StoredDataKey[]>;
  /** Inserts keys for guests that have no row yet (one transaction); an existing row wins. Returns the guests whose key was inserted. */
  insert(keys: StoredDataKey[]): Promise<Set<string>>;
  /**
   * Optional (the embedded store in the event store's own file): keeps new keys in memory, and
   * writes each in the transaction of the first append that stores an event sealed with it, so
   * a key row exists exactly when an event uses it. Returns the keys staged (a key already
   * staged or stored for the guest wins; `get` answers staged keys too). An append whose staged
   * key lost to a row stored meanwhile (another process's key, a tombstone) fails with
   * DataKeyConflictError and writes nothing. Staged keys no append took within a minute are
   * inserted like `insert` does.
   */
  stage?(keys: StoredDataKey[]): Set<string>;
  /** Replaces the guest's key with a tombstone (idempotent). */
  erase(guestId: string, at: string): Promise<void>;
  /** Rows wrapped under another master key than `currentMasterKeyId` (rotation). */
  wrappedUnder(notMasterKeyId: string, limit: number): Promise<StoredDataKey[]>;
  /** One row holding a key wrapped under this master key id, if any (the start's check that the key under that id is the one they were wrapped with). */
  oneWrappedUnder(masterKeyId: string): Promise<StoredDataKey | undefined>;
  /** How many keys are wrapped under each master key id that is none of `masterKeyIds` (the start's check that the keyring opens them). */
  countWrappedOutside(masterKeyIds: string[]): Promise<{ masterKeyId: string; count: number }[]>;
  /** Replaces a key's wrapping (rotation), only while the row still holds a key. */
  rewrap(guestId: string, wrapped: string, masterKeyId: string): Promise<void>;
  /** Makes deleted bytes unrecoverable from the files (embedded: WAL checkpoint; secure_delete is on). */
  purgeDeleted(): Promise<void>;
  close(): Promise<void>;
}

/**
 * An append carried a staged key (KeyStore.stage) for a guest whose row is already stored with
 * another key or a tombstone: the append wrote nothing. Seal again with the stored key and retry.
 */
export class DataKeyConflictError extends Error {
  override readonly name = 'DataKeyConflictError';
  constructor(readonly keyIds: string[]) {
    super(`the data key of ${keyIds.join(', ')} was stored by another writer first; seal the events again with the stored key`);
  }
}
