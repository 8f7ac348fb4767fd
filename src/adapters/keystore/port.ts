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
  /** Replaces the guest's key with a tombstone (idempotent). */
  erase(guestId: string, at: string): Promise<void>;
  /** Rows wrapped under another master key than `currentMasterKeyId` (rotation). */
  wrappedUnder(notMasterKeyId: string, limit: number): Promise<StoredDataKey[]>;
  /** Replaces a key's wrapping (rotation), only while the row still holds a key. */
  rewrap(guestId: string, wrapped: string, masterKeyId: string): Promise<void>;
  /** Makes deleted bytes unrecoverable from the files (embedded: WAL checkpoint; secure_delete is on). */
  purgeDeleted(): Promise<void>;
  close(): Promise<void>;
}
