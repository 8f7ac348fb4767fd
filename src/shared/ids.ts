import { randomUUID } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

/** Ids nobody should be able to date: RFC 4122 v4 UUIDs (122 random bits), lowercase. */
export const newId = (): string => randomUUID();

/**
 * Ids of what is written in volume (guests, invitations, stored events): RFC 9562 v7 UUIDs,
 * lowercase. They start with the time in milliseconds (then a counter and 62 random bits), so
 * ids made one after another sort one after another, and each B-tree they key (the event
 * table's id and stream indexes, the read store's documents, the data-key table) grows at its
 * right edge instead of dirtying a random page per row: the event store writes an import of
 * 100,000 guests about 3x faster (docs/benchmarks.md, "Ids"). A v7 id tells when it was made,
 * to the millisecond: it is used only where the record's creation time is no secret from whoever
 * sees the id (a guest's createdAt is in the guest itself). Any RFC 4122 UUID is accepted as an id.
 */
export const newSortableId = (): string => uuidv7();

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Any RFC 4122 textual UUID, case-insensitive (docs/identifiers.md). */
export const isUuid = (value: string): boolean => uuidPattern.test(value);

/**
 * A value that may name a GUID-keyed record (a guest id or its customId, a client id): a GUID is
 * compared in lowercase (RFC 4122 GUIDs are case-insensitive), any other string as given. Not for
 * plain ids (event, team member): those are kept exactly as sent (exactKey, docs/identifiers.md).
 */
export const normalizeId = (id: string): string => (isUuid(id) ? id.toLowerCase() : id);

/**
 * The spelling of a caller's GUID (guest id, template id) to keep beside its lowercase key: the
 * GUID as sent when it has an upper-case letter, else undefined (the key already spells it). Keys
 * and matching stay lowercase (RFC 4122: case-insensitive); answers show this spelling
 * (docs/identifiers.md, "A GUID is answered as the caller first sent it").
 */
export const guidAsSent = (id: string | undefined): string | undefined => (id !== undefined && isUuid(id) && id !== id.toLowerCase() ? id : undefined);

/**
 * The storage key of a caller-chosen id: ids are scoped per client, so the key names the client
 * too. Both parts are percent-encoded (`:` is encoded by encodeURIComponent), so the key is safe
 * in stream names, read-model keys and URLs, and no two (client, id) pairs share a key.
 */
export const scopedKey = (clientId: string, id: string): string => `${encodeURIComponent(clientId)}:${encodeURIComponent(normalizeId(id))}`;

/**
 * The storage key of a caller's plain id (event id, team member id; spec: "All identifiers are
 * strings", these are not marked GUID): as scopedKey, but the id kept exactly as sent, a
 * GUID-shaped one in upper case too, so `ABC…` and `abc…` are two events. Ids stored before this
 * rule were lowercased when GUID-shaped; requests still find them (storedEventId,
 * storedTeamMemberId), and their keys, being lowercase, are the same under either function.
 */
export const exactKey = (clientId: string, id: string): string => `${encodeURIComponent(clientId)}:${encodeURIComponent(id)}`;
