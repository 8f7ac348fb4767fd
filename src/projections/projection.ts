import type { EventFilter, StoredEvent } from '../adapters/eventstore/port.js';
import type { IndexSpec, WriteOp } from '../adapters/readstore/port.js';

/**
 * A read model: a pure mapping from stored events to writes on its collections.
 * It must be replayable: the runner may hand it an event again after a crash,
 * and the read store then skips writes it already applied (WriteOp.position).
 */
export interface Projection {
  name: string;
  /**
   * The version of what `apply` writes (absent: 1). Raise it whenever a change makes read models
   * built before it wrong for the code after it (a field counted another way, a key stored in
   * another form): the projections role rebuilds a projection whose read models another version
   * built before it projects again (src/projections/versions.ts; docs/operations.md, "Upgrades").
   */
  version?: number;
  filter: EventFilter;
  collections: { name: string; indexes: IndexSpec[] }[];
  apply(event: StoredEvent): WriteOp[];
}

/** The read-store checkpoint of a projection: where its read models have applied the events up to. */
export const checkpointName = (projection: { name: string }): string => `projection:${projection.name}`;
