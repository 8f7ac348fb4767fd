import { findTeamMember } from './team-members.js';
import type { Services } from './services.js';
import { exactKey } from '../shared/ids.js';

/**
 * The user name a removed team member's scans show (docs/personal-data.md, "Team members and
 * account users"): its id stays, so the audit trail still says which team member scanned whom.
 */
export const removedScannerName = '[erased]';

type Scanner = { id: string; username: string };

const isScanner = (value: unknown): value is Scanner =>
  typeof value === 'object' && value !== null && typeof (value as Scanner).id === 'string' && typeof (value as Scanner).username === 'string';

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
};

function collect(value: unknown, ids: Set<string>): void {
  if (Array.isArray(value)) {
    for (const item of value) collect(item, ids);
  } else if (isPlainObject(value)) {
    for (const [key, field] of Object.entries(value)) {
      if (key === 'scannedBy' && isScanner(field)) ids.add(field.id);
      else collect(field, ids);
    }
  }
}

function replaced<T>(value: T, removed: ReadonlySet<string>): T {
  if (Array.isArray(value)) return value.map((item: unknown) => replaced(item, removed)) as T;
  if (!isPlainObject(value)) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, field]) =>
      key === 'scannedBy' && isScanner(field)
        ? [key, removed.has(field.id) ? { ...field, username: removedScannerName } : field]
        : [key, replaced(field, removed)],
    ),
  ) as T;
}

/**
 * `value` (an answer: scans, history events) with the user name of every `scannedBy` that is a
 * team member the client removed (and did not register again) replaced by removedScannerName. The events
 * hold the user name unsealed and a projections rebuild writes it back into the `scans` and
 * `team_stats` documents, so answers check each time; a removed id registered again (a new
 * password) shows its scans' names again. Nothing is copied when no scanner was removed.
 */
export async function withoutRemovedScanners<T>(services: Services, clientId: string, value: T): Promise<T> {
  const ids = new Set<string>();
  collect(value, ids);
  const removed = new Set<string>();
  for (const id of ids) if (await isRemoved(services, clientId, id)) removed.add(id);
  return removed.size === 0 ? value : replaced(value, removed);
}

/** Whether `id` is a team member of the client that was removed and not registered again. */
export async function isRemoved(services: Services, clientId: string, id: string): Promise<boolean> {
  if (id === clientId) return false;
  const removal = await services.readStore.collection('team_member_removals').get(exactKey(clientId, id), { readOnly: true });
  return removal !== null && (await findTeamMember(services, clientId, id)) === null;
}

/**
 * At a team member's removal: its user name leaves the `team_stats` rows and the `scans` it made
 * (each keeps the id and its counts). The events keep the name unsealed, so a projections rebuild
 * writes it back into these documents; the answers replace it all the same (withoutRemovedScanners).
 * The scans are looked for in the events its statistics name (the `scans` index starts with eventId).
 */
export async function forgetScannerName(services: Services, clientId: string, teamMemberId: string): Promise<void> {
  const stats = services.readStore.collection<{ _id: string; eventId: string; username?: string }>('team_stats');
  const rows = [];
  for await (const row of stats.stream({ clientId, teamMemberId })) rows.push(row);
  const scans = services.readStore.collection<{ _id: string; scannedBy: Scanner }>('scans');
  for (const eventId of new Set(rows.map((row) => row.eventId))) {
    const ids: string[] = [];
    for await (const scan of scans.stream({ eventId, clientId, 'scannedBy.id': teamMemberId })) if (scan.scannedBy.username !== removedScannerName) ids.push(scan._id);
    for (const id of ids) await scans.updateOne(id, { $set: { 'scannedBy.username': removedScannerName } });
  }
  for (const row of rows) if (row.username !== removedScannerName) await stats.updateOne(row._id, { $set: { username: removedScannerName } });
}
