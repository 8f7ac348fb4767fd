import type { EventStore } from '../adapters/eventstore/port.js';
import type { ReadStore } from '../adapters/readstore/port.js';
import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';
import type { DataKeys } from '../personal-data/data-keys.js';
import type { Keyring } from '../shared/encryption.js';

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
  /** Resolves once the read models include `position` (bounded wait; never rejects). */
  readYourWrites(position: number): Promise<void>;
  /**
   * Encrypts secrets at rest beyond webhook secrets: the events' ticket signing keys (issue 16).
   * The same keyring as webhook secrets; without it the service issues no signed tickets.
   */
  secretsKeyring?: Keyring;
}
