import { randomUUID } from 'node:crypto';

/** The one id generator: RFC 4122 v4 UUIDs, lowercase. */
export const newId = (): string => randomUUID();

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Any RFC 4122 textual UUID, case-insensitive (DESIGN.md section 5). */
export const isUuid = (value: string): boolean => uuidPattern.test(value);
