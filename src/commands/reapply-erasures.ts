/**
 * `npm run admin -- reapply-erasures [--from <file>]`: after a restore, erase again every guest
 * whose erasure the restored copy undid (docs/operations.md, Backups and restores).
 *
 * Two sources of erased guests:
 *  - the event store's GuestErased events (read through a subscription filtered on that type,
 *    page by page up to the head it had when the command started). They find the guests whose
 *    data key came back because the key store alone was restored from an older copy (production:
 *    the MongoDB key store restored, EventStoreDB not);
 *  - `--from <file>`: the erasure records kept outside the backups, for a restore that took the
 *    GuestErased events back as well (embedded: keys and events share `events.sqlite`). One guest
 *    a line: the JSON log lines the service writes on each erasure (`msg` "guest personal data
 *    erased": the rest of a log is skipped, so a whole log file can be given), a JSON object with
 *    `guestId` (and `clientId`), or text: `<guestId>`, `<clientId> <guestId>` or `<clientId>:<guestId>`.
 *
 * A guest is erased again (through `eraseAll`, the erase routes' own code: GuestErased when its
 * stream lacks one, key -> tombstone, read models, outbox emails, webhook delivery log, exports)
 * unless its stream already records the erasure and every data key it may have is a tombstone.
 * Idempotent: a second run finds nothing to do.
 */
import fs from 'node:fs';
import readline from 'node:readline';
import type { StoredEvent } from '../adapters/eventstore/port.js';
import { guestKey, guestKeyOfStream, guestStreamOfKey } from '../domain/guest.js';
import type { GuestDoc } from '../projections/guests.js';
import { isUuid, newId } from '../shared/ids.js';
import { eventsToHead } from './events-to-head.js';
import { guests } from './guests.js';
import type { CommandContext } from './handle-command.js';
import { dataKeyIdsOf, eraseAll, erasureLogMessage, MAX_ERASE_BATCH, type PersonalDataSettings } from './personal-data.js';
import type { Services } from './services.js';

export interface ReapplyOptions {
  /** A file of erasure records (see the module comment). */
  from?: string;
  /** GuestErased events read per page (default 500). */
  pageSize?: number;
  /** Called after each page of events and each batch of re-erasures (progress lines). */
  onProgress?: (progress: ReapplyProgress) => void;
}

export interface ReapplyProgress {
  phase: 'reading erasure events' | 'reading the erasure list' | 'checking and re-erasing';
  /** Reading events: the position read through, and the last GuestErased position when the command started. */
  position?: number;
  head?: number;
  erasureEvents: number;
  candidates: number;
  /** Guests checked so far (key store and stream). */
  checked: number;
  reErased: number;
}

export interface ReapplyResult {
  /** GuestErased events read from the event store. */
  erasureEvents: number;
  /** Erased guests checked (events and list, each guest once). */
  checked: number;
  /** Guests erased again: their key (or their erasure) had come back. */
  reErased: number;
  /** Guests already erased everywhere (stream and key store): nothing done. */
  alreadyErased: number;
  /** The erased guests, by clientId and guestId. */
  guests: { clientId: string; guestId: string; eventId: string; source: 'events' | 'list' }[];
  /** The list file's figures, when given. */
  list?: {
    lines: number;
    /** Lines of other log messages, blank lines and `#` comments. */
    skipped: number;
    /** Guests the restored copy does not hold (created after it): nothing to erase. */
    notFound: string[];
    /** Bare guest ids several clients have: give `<clientId> <guestId>`. Nothing was erased for them. */
    ambiguous: string[];
    /** Lines that are neither a guest id nor an erasure record. */
    invalid: { line: number; text: string }[];
  };
}

/** One guest to check: its read-model/stream key, ids, and where it was named. */
interface Candidate {
  key: string;
  clientId: string;
  guestId: string;
  eventId?: string;
  source: 'events' | 'list';
}

export async function reapplyErasures(
  services: Services,
  settings: PersonalDataSettings,
  options: ReapplyOptions = {},
): Promise<ReapplyResult> {
  if (!services.dataKeys) {
    throw new Error(
      'personal data is not encrypted here (PII_ENCRYPTION=off): there are no data keys that a restore could bring back. ' +
        "Erased guests' personal data is in the restored events in plaintext; see docs/personal-data.md",
    );
  }
  if (options.from && !fs.existsSync(options.from)) {
    throw new Error(`no erasure list at ${options.from}: give the file of erasure log lines (or guest ids) kept since the backup`);
  }
  const progress: ReapplyProgress = { phase: 'reading erasure events', erasureEvents: 0, candidates: 0, checked: 0, reErased: 0 };
  const candidates = new Map<string, Candidate>();
  const add = (candidate: Candidate) => {
    if (!candidates.has(candidate.key)) candidates.set(candidate.key, candidate);
    progress.candidates = candidates.size;
  };

  // 1. Every GuestErased event, page by page.
  for await (const page of eventsToHead(services.eventStore, { eventTypes: ['GuestErased'], streamPrefixes: ['guest-'] }, options.pageSize)) {
    progress.head = page.head;
    for (const event of page.events as StoredEvent<'GuestErased', { guestId: string; eventId: string }>[]) {
      progress.erasureEvents++;
      add({ key: guestKeyOfStream(event.streamName), clientId: event.metadata.tenantId, guestId: event.data.guestId, eventId: event.data.eventId, source: 'events' });
    }
    progress.position = page.position;
    options.onProgress?.({ ...progress });
  }
  const erasureEvents = progress.erasureEvents;

  // 2. The list kept outside the backups.
  let list: ReapplyResult['list'];
  if (options.from) {
    progress.phase = 'reading the erasure list';
    list = { lines: 0, skipped: 0, notFound: [], ambiguous: [], invalid: [] };
    for await (const entry of erasureList(options.from)) {
      list.lines++;
      if (entry.kind === 'skip') list.skipped++;
      else if (entry.kind === 'invalid') list.invalid.push({ line: list.lines, text: entry.text.slice(0, 200) });
      else {
        const found = await locate(services, entry.clientId, entry.guestId);
        if (found === 'not_found') list.notFound.push(entry.clientId ? `${entry.clientId} ${entry.guestId}` : entry.guestId);
        else if (found === 'ambiguous') list.ambiguous.push(entry.guestId);
        else add({ ...found, ...(entry.eventId ? { eventId: entry.eventId } : {}), source: candidates.get(found.key)?.source ?? 'list' });
      }
      if (list.lines % 1000 === 0) options.onProgress?.({ ...progress });
    }
    options.onProgress?.({ ...progress });
  }

  // 3. Erase again whoever is not erased everywhere, a batch of one client at a time.
  progress.phase = 'checking and re-erasing';
  const result: ReapplyResult = { erasureEvents, checked: candidates.size, reErased: 0, alreadyErased: 0, guests: [], ...(list ? { list } : {}) };
  const pending = new Map<string, GuestDoc[]>();
  const flush = async (clientId: string) => {
    const docs = pending.get(clientId) ?? [];
    pending.delete(clientId);
    if (docs.length === 0) return;
    const context: CommandContext = {
      tenantId: clientId,
      actor: { type: 'system', id: 'reapply-erasures' },
      correlationId: newId(),
      now: services.clock.now(),
    };
    await eraseAll(services, settings, context, docs, 'erased again after a restore (reapply-erasures)');
    progress.reErased += docs.length;
    result.reErased += docs.length;
    options.onProgress?.({ ...progress });
  };
  for (const candidate of candidates.values()) {
    if (++progress.checked % 1000 === 0) options.onProgress?.({ ...progress });
    const doc = await guestDocOf(services, candidate);
    if (!doc) {
      // Named by the list, and its stream is not in this event store: the copy predates the guest.
      result.list?.notFound.push(`${candidate.clientId} ${candidate.guestId}`);
      continue;
    }
    if (await erasedEverywhere(services, doc)) {
      result.alreadyErased++;
      continue;
    }
    result.guests.push({ clientId: doc.clientId, guestId: candidate.guestId, eventId: doc.eventId, source: candidate.source });
    const docs = pending.get(doc.clientId) ?? [];
    docs.push(doc);
    pending.set(doc.clientId, docs);
    if (docs.length >= MAX_ERASE_BATCH) await flush(doc.clientId);
  }
  for (const clientId of [...pending.keys()]) await flush(clientId);
  return result;
}

/** The guest's read-model document, or one made from its stream when the read model lacks it (not projected yet); undefined without a stream. */
async function guestDocOf(services: Services, candidate: Candidate): Promise<GuestDoc | undefined> {
  const stored = await guests(services).get(candidate.key);
  if (stored) return stored;
  const [first] = await services.eventStore.readStream(guestStreamOfKey(candidate.key), { maxCount: 1, personalData: false });
  if (!first) return undefined;
  const eventId = candidate.eventId ?? String((first.data as { eventId?: unknown }).eventId ?? '');
  return { _id: candidate.key, guestId: candidate.guestId, clientId: candidate.clientId, eventId, tagList: [], admittedPlusOnes: 0 } as unknown as GuestDoc;
}

/** Its stream records the erasure and each data key it may have is a tombstone. */
async function erasedEverywhere(services: Services, doc: GuestDoc): Promise<boolean> {
  const events = await services.eventStore.readStream(guestStreamOfKey(doc._id), { personalData: false });
  if (!events.some((e) => e.type === 'GuestErased')) return false;
  const keyIds = dataKeyIdsOf(doc);
  const rows = await services.dataKeys!.store.get(keyIds);
  return keyIds.every((id) => rows.some((row) => row.guestId === id && row.wrapped === undefined));
}

/** A list entry's guest: its key when the guest is in this copy (read model or event store). */
async function locate(
  services: Services,
  clientId: string | undefined,
  guestId: string,
): Promise<{ key: string; clientId: string; guestId: string } | 'not_found' | 'ambiguous'> {
  if (clientId) {
    for (const key of [guestKey(clientId, guestId), guestId.toLowerCase()]) {
      const doc = await guests(services).get(key);
      if (doc && doc.clientId === clientId) return { key, clientId, guestId };
      if (!doc && (await services.eventStore.readStream(guestStreamOfKey(key), { maxCount: 1, personalData: false })).some((e) => e.metadata.tenantId === clientId)) {
        return { key, clientId, guestId };
      }
    }
    return 'not_found';
  }
  const found = new Map<string, GuestDoc>();
  for await (const doc of guests(services).stream({ guestId }, { readOnly: true })) found.set(doc._id, doc);
  const legacy = await guests(services).get(guestId.toLowerCase());
  if (legacy) found.set(legacy._id, legacy);
  if (found.size === 0) return 'not_found';
  if (found.size > 1) return 'ambiguous';
  const [doc] = [...found.values()];
  return { key: doc!._id, clientId: doc!.clientId, guestId };
}

type ListEntry = { kind: 'guest'; clientId?: string; guestId: string; eventId?: string } | { kind: 'skip' } | { kind: 'invalid'; text: string };

/** The entries of an erasure list file, one a line (see the module comment). */
async function* erasureList(file: string): AsyncGenerator<ListEntry> {
  const input = fs.createReadStream(file, { encoding: 'utf8' });
  const lines = readline.createInterface({ input, crlfDelay: Infinity });
  try {
    for await (const raw of lines) yield parseLine(raw.trim());
  } finally {
    lines.close();
    input.destroy();
  }
}

export function parseLine(line: string): ListEntry {
  if (line === '' || line.startsWith('#')) return { kind: 'skip' };
  if (line.startsWith('{')) {
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return { kind: 'invalid', text: line };
    }
    // A log line of another message (a whole service log may be given): not an erasure.
    if (record.msg !== undefined && record.msg !== erasureLogMessage) return { kind: 'skip' };
    if (typeof record.guestId !== 'string' || !isUuid(record.guestId)) return { kind: 'invalid', text: line };
    return {
      kind: 'guest',
      guestId: record.guestId,
      ...(typeof record.clientId === 'string' && record.clientId ? { clientId: record.clientId } : {}),
      ...(typeof record.eventId === 'string' && record.eventId ? { eventId: record.eventId } : {}),
    };
  }
  const parts = line.split(/\s+/);
  if (parts.length === 1 && isUuid(parts[0]!)) return { kind: 'guest', guestId: parts[0]! };
  if (parts.length === 2 && isUuid(parts[1]!)) return { kind: 'guest', clientId: parts[0]!, guestId: parts[1]! };
  const colon = line.lastIndexOf(':');
  if (parts.length === 1 && colon > 0) {
    try {
      const clientId = decodeURIComponent(line.slice(0, colon));
      const guestId = decodeURIComponent(line.slice(colon + 1));
      if (isUuid(guestId)) return { kind: 'guest', clientId, guestId };
    } catch {
      // not URI-encoded: invalid below
    }
  }
  return { kind: 'invalid', text: line };
}
