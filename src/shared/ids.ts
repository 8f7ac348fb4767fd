import { randomUUID } from 'node:crypto';

/** The one id generator: RFC 4122 v4 UUIDs, lowercase. */
export const newId = (): string => randomUUID();

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Any RFC 4122 textual UUID, case-insensitive (DESIGN.md section 5). */
export const isUuid = (value: string): boolean => uuidPattern.test(value);

/**
 * Caller-chosen ids are plain strings (docs/identifiers.md): a GUID is compared in lowercase
 * (RFC 4122 GUIDs are case-insensitive), any other string exactly as given.
 */
export const normalizeId = (id: string): string => (isUuid(id) ? id.toLowerCase() : id);

/**
 * The storage key of a caller-chosen id: ids are scoped per client, so the key names the client
 * too. Both parts are percent-encoded (`:` is encoded by encodeURIComponent), so the key is safe
 * in stream names, read-model keys and URLs, and no two (client, id) pairs share a key.
 */
export const scopedKey = (clientId: string, id: string): string => `${encodeURIComponent(clientId)}:${encodeURIComponent(normalizeId(id))}`;
