/**
 * Which version of each projection's code built its read models (`Projection.version`).
 *
 * A projection whose code changed what it writes (a field counted another way, a key stored in
 * another form) leaves read models built before the change wrong for the code after it, and
 * nothing would say so: an analyst's funnel would simply miss what the new rule counts. So the
 * read store records, per projection, the version that built its documents
 * (`service_identity/projection-version:<name>`), and the projections role rebuilds, before it
 * projects, every projection built by another version than its own (older after an upgrade,
 * newer after a rollback: the read model must be what the running code reads).
 *
 * Read stores from before versions were recorded hold none: they count as version 1.
 * A projection with no checkpoint has built nothing yet; it is recorded at its current version.
 */
import type { ReadStore } from '../adapters/readstore/port.js';
import { checkpointName, type Projection } from './projection.js';
import { identityCollection } from './store-identity.js';

export interface ProjectionVersionDoc {
  _id: string;
  projection: string;
  version: number;
  recordedAt: string;
}

/** A projection whose read models another version of its code built. */
export interface OutdatedProjection {
  name: string;
  /** The version that built them (1 when none was recorded). */
  built: number;
  /** This code's. */
  current: number;
}

export const versionOf = (projection: Projection): number => projection.version ?? 1;
const docId = (name: string): string => `projection-version:${name}`;

/** The projections with read models built by another version than this code's. */
export async function outdatedProjections(readStore: ReadStore, projections: Projection[]): Promise<OutdatedProjection[]> {
  const versions = readStore.collection<ProjectionVersionDoc>(identityCollection);
  const outdated: OutdatedProjection[] = [];
  for (const projection of projections) {
    const checkpoint = await readStore.getCheckpoint(checkpointName(projection));
    if (checkpoint === null || checkpoint < 0) continue;
    const built = (await versions.get(docId(projection.name)))?.version ?? 1;
    if (built !== versionOf(projection)) outdated.push({ name: projection.name, built, current: versionOf(projection) });
  }
  return outdated;
}

/** Records that these projections' read models are (being) built by this code. */
export async function recordVersions(readStore: ReadStore, projections: Projection[], at = new Date()): Promise<void> {
  const versions = readStore.collection<ProjectionVersionDoc>(identityCollection);
  for (const projection of projections) {
    const id = docId(projection.name);
    if ((await versions.get(id))?.version === versionOf(projection)) continue;
    await versions.replaceOne(id, { projection: projection.name, version: versionOf(projection), recordedAt: at.toISOString() });
  }
}

/** Each projection's recorded version, for `projections status` (undefined: none recorded). */
export async function recordedVersion(readStore: ReadStore, name: string): Promise<number | undefined> {
  return (await readStore.collection<ProjectionVersionDoc>(identityCollection).get(docId(name)))?.version;
}
