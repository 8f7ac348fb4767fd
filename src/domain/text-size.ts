import { DomainError } from './decider.js';
import { caselessKey } from '../shared/text-key.js';

/**
 * The most text (UTF-8 bytes, its text fields together) one event, comms template, account or
 * team member may hold. MongoDB stores a document of at most 16 MiB and refuses an update that
 * would make it larger, and a projection whose update is refused retries that batch for ever (every
 * later event of that projection unseen); a request body (`BODY_LIMIT`, 16 MB by default) could
 * carry more. 4 MiB, counting what a lower-cased copy the read model keeps takes (`userNameLower`,
 * `emailLower`), keeps each document under 9 MiB, as the guest's rule does (docs/read-models.md,
 * "On MongoDB": bounded arrays; docs/api.md, Strings).
 */
export const RECORD_TEXT_LIMIT = 4 * 1024 * 1024;

export interface TextField {
  field: string;
  value: unknown;
  /** The request gives this field (a stored one counts too, but is not the field an error names). */
  given: boolean;
  /** The read model also keeps a copy in NFC, lower case (caselessKey): what it takes beyond the text counts. */
  keyed?: boolean;
}

/** The bytes a text takes in its document: UTF-8, and what its lower-cased copy takes beyond it. */
export function storedTextBytes(value: string, keyed = false): number {
  const size = Buffer.byteLength(value, 'utf8');
  // ASCII keeps its length in NFC and lower case: only other text is keyed to measure (the import's hot path).
  return keyed && !ASCII_ONLY.test(value) ? size + Math.max(0, Buffer.byteLength(caselessKey(value), 'utf8') - size) : size;
}

const ASCII_ONLY = /^[\x00-\x7f]*$/;

/**
 * A 400 `validation_error` naming the largest field the request gives (else the largest stored)
 * when the record's texts, as it would be after the request, hold more than `RECORD_TEXT_LIMIT`.
 */
export function assertTextSize(what: string, fields: TextField[]): void {
  let bytes = 0;
  let largest = { field: fields[0]?.field ?? '', bytes: -1, given: false };
  for (const { field, value, given, keyed } of fields) {
    if (typeof value !== 'string') continue;
    const size = storedTextBytes(value, keyed);
    bytes += size;
    if ((given && !largest.given) || (given === largest.given && size > largest.bytes)) largest = { field, bytes: size, given };
  }
  if (bytes <= RECORD_TEXT_LIMIT) return;
  const copies = fields.some((f) => f.keyed) ? ', with what their lower-cased copies take beyond the text' : '';
  const message =
    `the ${what}'s texts would hold ${bytes} bytes (UTF-8) in all${copies}; ` +
    `${/^[aeiou]/.test(what) ? 'an' : 'a'} ${what} holds at most ${RECORD_TEXT_LIMIT} (4 MiB): keep large data elsewhere and send a reference to it`;
  throw new DomainError('validation_error', message, { errors: [{ path: largest.field, message }] });
}
