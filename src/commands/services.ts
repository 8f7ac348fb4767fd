import type { EventStore } from '../adapters/eventstore/port.js';
import type { ReadStore } from '../adapters/readstore/port.js';
import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';
import type { DataKeys } from '../personal-data/data-keys.js';
import type { Keyring } from '../shared/encryption.js';
import { DomainError } from '../domain/decider.js';

/** What command handlers and queries need; built once by the composition root. */
export interface Services {
  eventStore: EventStore;
  readStore: ReadStore;
  clock: Clock;
  logger: Logger;
  /**
   * The same events as stored, personal fields still sealed (without the codec that opens them):
   * what may leave the service, as the relay copies it to the bus. Absent: `eventStore` (no codec).
   */
  storedEvents?: EventStore;
  /** The guests' data keys (issue 14); absent when personal data is not encrypted (PII_ENCRYPTION=off). */
  dataKeys?: DataKeys;
  /** Resolves once the read models include `position` (bounded wait; never rejects: a caller that reads its answer from them checks, readModelsBehind). */
  readYourWrites(position: number): Promise<void>;
  /**
   * Encrypts secrets at rest beyond webhook secrets: the events' ticket signing keys (issue 16).
   * The same keyring as webhook secrets; without it the service issues no signed tickets.
   */
  secretsKeyring?: Keyring;
}

/**
 * A change was recorded, but the read model its answer is read from does not hold it after the
 * bounded wait (a projection far behind, or stopped: the service log says which). Answered 503
 * `read_models_behind`, never an answer without the resource (an empty 200, a 404 for what was
 * just created): the caller reads it back later rather than sending the change again.
 */
export function readModelsBehind(what: string): DomainError {
  return new DomainError(
    'unavailable',
    `${what} was recorded, but the read models did not show it in time (a projection is behind or stopped: see the service log); ` +
      'read it back shortly rather than sending this request again',
    { code: 'read_models_behind', retryAfterSeconds: 1 },
  );
}
