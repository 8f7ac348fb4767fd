import type { EventFilter, StoredEvent } from '../adapters/eventstore/port.js';
import type { IndexSpec, WriteOp } from '../adapters/readstore/port.js';

/**
 * A read model: a pure mapping from stored events to writes on its collections.
 * It must be replayable: the runner may hand it an event again after a crash,
 * and the read store then skips writes it already applied (WriteOp.position).
 */
export interface Projection {
  name: string;
  filter: EventFilter;
  collections: { name: string; indexes: IndexSpec[] }[];
  apply(event: StoredEvent): WriteOp[];
}
