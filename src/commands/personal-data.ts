import fs from 'node:fs';
import path from 'node:path';
import type { StoredEvent } from '../adapters/eventstore/port.js';
import type { Doc } from '../adapters/readstore/port.js';
import { DomainError } from '../domain/decider.js';
import { guestDecider, type GuestCommand, type GuestEvent, type GuestState } from '../domain/guest.js';
import { addressForms, addressKeyText } from '../domain/email-address.js';
import { invitationStream } from '../domain/invitation.js';
import { dataKeyId, personalGuestFields, unmatchedScanKeyId } from '../domain/personal-data.js';
import { customIdStream, erasedCustomIdKey, legacyCustomIdStream, reservationDecider, reservationKey, type ReservationCommand } from '../domain/reservation.js';
import type { InvitationDoc } from '../projections/invitations.js';
import { shownCommsData } from '../domain/webhook.js';
import { toInvitationView } from './invitations.js';
import { guestIdOf, shownGuestId, guestStreamOf, personalDocFields, type GuestDoc, type ScanDoc } from '../projections/guests.js';
import type { CommsEventDoc, DeliveryDoc } from '../projections/webhooks.js';
import { getEvent } from './events.js';
import { findGuestByIdOrCustomId, findGuestToErase } from './guest-lookup.js';
import { wholeGuestHistory } from './guest-history.js';
import { guests, toGuestView } from './guests.js';
import { handleCommands, type BatchItem, type CommandContext } from './handle-command.js';
import type { Services } from './services.js';
import { caselessKey } from '../shared/text-key.js';
import { isUuid, normalizeId } from '../shared/ids.js';
import { keepSuppressionsWithoutAddresses, suppressionOf } from './suppressions.js';
import { rewriteIdempotentReplies } from './idempotent-replies.js';
import { withoutRemovedScanners } from './removed-scanners.js';

/** Where files that may hold a guest's personal data live (docs/personal-data.md). */
export interface PersonalDataSettings {
  exportDir: string;
  /** The embedded mailer's folder; absent when another mailer sends. */
  outboxDir?: string;
}

export interface ErasureResult {
  id: string;
  eventId: string;
  erased: true;
  erasedAt: string;
  erasedBy: string;
  reason: string;
}

/** The batch route's limit (like every batch of guests). */
export const MAX_ERASE_BATCH = 200;
/** Shorter values (initials, "Al") are not searched for in free text: they would match everywhere. */
const MIN_NEEDLE = 3;
const ERASED_TEXT = '[erased]';

/**
 * Issue 14, item 2: erase one guest's personal data. Records GuestErased (who, whom, why),
 * releases its customId, deletes its data key (from then on its events open without personal
 * fields, also on a rebuild), and removes what read models, export files and outbox emails
 * hold. Idempotent: erasing an erased guest repeats the clean-up and answers the first erasure.
 */
export async function eraseGuest(
  services: Services,
  settings: PersonalDataSettings,
  context: CommandContext,
  idOrCustomId: string,
  request: { reason: string; eventId?: string },
): Promise<ErasureResult> {
  const doc = await findGuestToErase(services, context.tenantId, idOrCustomId, request.eventId);
  return (await eraseAll(services, settings, context, [doc], request.reason))[0]!;
}

/** Up to 200 guests of one event by id or customId, or every guest of the event (`all`); all are found before any is erased. */
export async function eraseGuests(
  services: Services,
  settings: PersonalDataSettings,
  context: CommandContext,
  eventId: string,
  request: { ids?: string[]; all?: boolean; reason: string },
): Promise<{ erased: number; guests: ErasureResult[] }> {
  await getEvent(services, context.tenantId, eventId);
  const docs: GuestDoc[] = [];
  if (request.all) {
    for await (const doc of guests(services).stream({ clientId: context.tenantId, eventId }, { readOnly: true })) docs.push(doc);
  } else {
    const errors: { path: string; message: string }[] = [];
    for (const [i, id] of (request.ids ?? []).entries()) {
      try {
        docs.push(await findGuestToErase(services, context.tenantId, id, eventId));
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        errors.push({ path: `ids.${i}`, message: 'no guest of this event has this id or customId' });
      }
    }
    if (errors.length > 0) throw new DomainError('not_found', 'some guests were not found: see errors (nothing was erased)', { errors });
  }
  const unique = [...new Map(docs.map((d) => [d._id, d])).values()];
  const results = await eraseAll(services, settings, context, unique, request.reason);
  return { erased: results.length, guests: results };
}

/**
 * Erases each guest (event, key), then cleans read models and files once for all of them. The
 * guests must belong to `context.tenantId`. Also what `admin reapply-erasures` runs after a
 * restore (src/commands/reapply-erasures.ts).
 */
export async function eraseAll(
  services: Services,
  settings: PersonalDataSettings,
  context: CommandContext,
  docs: GuestDoc[],
  reason: string,
): Promise<ErasureResult[]> {
  const results: ErasureResult[] = [];
  const all: PersonalValues = { needles: [], emails: [], customIds: [], invitationIds: [] };
  let position = -1;
  for (const doc of docs) {
    const erased = await eraseOne(services, context, doc, reason);
    results.push(erased.result);
    position = Math.max(position, erased.position);
    all.needles.push(...erased.values.needles);
    all.emails.push(...erased.values.emails);
    all.invitationIds.push(...erased.values.invitationIds);
  }
  await services.readYourWrites(position);
  for (const doc of docs) await scrubGuestReadModels(services, doc, all);
  await scrubSharedReadModels(services, context.tenantId, docs, all, context.now.toISOString());
  for (const eventId of new Set(docs.map((d) => d.eventId))) await removeExports(services, settings, context.tenantId, eventId);
  if (settings.outboxDir) await removeOutboxEmails(settings.outboxDir, all.invitationIds);
  await services.readStore.purgeDeleted?.();
  return results;
}

/** How often an erasure reads the guest again after an update changed its customId meanwhile (guest_changed). */
const eraseAttempts = 5;

async function eraseOne(services: Services, context: CommandContext, doc: GuestDoc, reason: string) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await eraseOnce(services, context, doc, reason);
    } catch (error) {
      // An update changed the guest's customId after this erasure read it: nothing of the erasure was applied; read it again.
      if (error instanceof DomainError && error.details?.code === 'guest_changed' && attempt < eraseAttempts) continue;
      throw error;
    }
  }
}

async function eraseOnce(services: Services, context: CommandContext, doc: GuestDoc, reason: string) {
  const guestId = guestIdOf(doc);
  // Every value the guest ever had, read while the key still opens them: each is searched for below.
  const events = await services.eventStore.readStream(guestStreamOf(doc));
  const invitationEvents = await invitationEventsOf(services, events);
  const values = personalValues([doc, ...events.map((e) => e.data), ...invitationEvents.map((e) => e.data)]);
  values.invitationIds = await invitationIdsOf(services, doc, events);

  // The customId's reservations are released in the same batch, after the erasure (release stage):
  // once the guest is erased a retry cannot find it by its customId, so a crash between the two
  // must not leave the reservation held (on EventStoreDB the batch's intent is completed after a
  // crash). Released under its hashed name and, for a reservation made before names were hashed,
  // its legacy one.
  const nameKey = values.customIds.length > 0 ? await services.dataKeys?.streamNameKey() : undefined;
  // The customId the guest has now (one of values.customIds, so nameKey was read) finds it again for a retried erasure (findGuestToErase).
  // The customId as the stream has it (the read model may lag behind an update).
  let current: GuestState = guestDecider.initialState();
  for (const event of events) current = guestDecider.evolve(current, event as unknown as GuestEvent);
  const customId = current.exists ? current.details.customId : doc.customId;
  const customIdKey = customId ? erasedCustomIdKey(context.tenantId, customId, nameKey) : undefined;
  // `releasing`: the guest decides the erasure only while its customId is one released here (src/domain/guest.ts).
  const releasing = [...new Set(values.customIds.map(reservationKey))];
  const command: GuestCommand = { type: 'Erase', erasedBy: context.actor.id, reason, at: context.now.toISOString(), ...(customIdKey ? { customIdKey } : {}), releasing };
  const releases: BatchItem[] = values.customIds.flatMap((customId) => {
    const hashed = customIdStream(context.tenantId, doc.eventId, customId, nameKey);
    const legacy = legacyCustomIdStream(context.tenantId, doc.eventId, customId);
    return [...new Set([hashed, legacy])].map((name) => ({
      streamName: name,
      decider: reservationDecider,
      // Under a hashed name the event leaves the customId out (docs/personal-data.md, Stream names).
      command: { type: 'Release', key: reservationKey(customId), ownerId: guestId, keyInEvent: name === legacy } satisfies ReservationCommand,
      stage: 'release' as const,
      partOf: 0,
    }));
  });
  const [written] = await handleCommands(services.eventStore, [{ streamName: guestStreamOf(doc), decider: guestDecider, command }, ...releases], context);
  const erased = (written!.state as GuestState).erased!;
  // The guest's key is per client; a guest stored before ids were scoped also has one named by the bare GUID.
  // (Storing GuestErased already deleted the scoped one: keyEndRules.)
  for (const keyId of dataKeyIdsOf(doc)) await services.dataKeys?.erase(keyId, erased.at);
  // The erasure record kept outside any backup (docs/operations.md, Backups and restores): ids only, no personal data.
  services.logger.info({ clientId: context.tenantId, guestId, eventId: doc.eventId, erasedBy: erased.by, erasedAt: erased.at }, erasureLogMessage);
  const result: ErasureResult = { id: guestId, eventId: doc.eventId, erased: true, erasedAt: erased.at, erasedBy: erased.by, reason: erased.reason };
  return { result, values, position: written!.position };
}

/**
 * The message of the log line every erasure writes (clientId, guestId, eventId, erasedBy,
 * erasedAt; no personal data): `admin reapply-erasures --from` takes these lines.
 */
export const erasureLogMessage = 'guest personal data erased';

/** The data keys that may seal this guest's personal data (docs/personal-data.md). */
export function dataKeyIdsOf(doc: GuestDoc): string[] {
  const scoped = dataKeyId(doc.clientId, guestIdOf(doc))!;
  return doc._id === guestIdOf(doc) ? [scoped, doc._id] : [scoped];
}

function ticketCodeOf(guestEvents: StoredEvent[]): string | null {
  let state = guestDecider.initialState();
  for (const event of guestEvents) state = guestDecider.evolve(state, event as unknown as GuestEvent);
  return state.ticket?.code ?? null;
}

const requestedInvitationIds = (guestEvents: StoredEvent[]): string[] =>
  guestEvents.filter((e) => e.type === 'InvitationRequested').map((e) => (e.data as { attendeeInvitationId: string }).attendeeInvitationId);

async function invitationEventsOf(services: Services, guestEvents: StoredEvent[]): Promise<StoredEvent[]> {
  const ids = requestedInvitationIds(guestEvents);
  return (await Promise.all(ids.map((id) => services.eventStore.readStream(invitationStream(id))))).flat();
}

/** The ids of the guest's own invitation emails: its InvitationRequested events and the invitations read model. */
async function invitationIdsOf(services: Services, doc: GuestDoc, guestEvents: StoredEvent[]): Promise<string[]> {
  const ids = new Set(requestedInvitationIds(guestEvents));
  const invitations = services.readStore.collection<InvitationDoc>('invitations');
  for await (const invitation of invitations.stream({ clientId: doc.clientId, attendeeId: guestIdOf(doc) }, { readOnly: true })) ids.add(invitation._id);
  return [...ids];
}

interface PersonalValues {
  /** Lower-case strings to search for in free text. */
  needles: string[];
  emails: string[];
  customIds: string[];
  /** The guest's own invitation emails: the embedded mailer names its files by them (`<id>.eml`). */
  invitationIds: string[];
}

function personalValues(sources: unknown[]): PersonalValues {
  const needles = new Set<string>();
  const emails = new Set<string>();
  const customIds = new Set<string>();
  const add = (value: unknown) => {
    if (typeof value === 'string' && value.trim().length >= MIN_NEEDLE) needles.add(caselessKey(value.trim()));
  };
  for (const source of sources) {
    const data = source as Record<string, unknown>;
    for (const holder of [data, data.changes as Record<string, unknown> | undefined]) {
      if (!holder) continue;
      for (const field of personalGuestFields) add(holder[field]);
      if (typeof holder.email === 'string' && holder.email) emails.add(holder.email);
      // An internationalized domain is also quoted in its other form (a provider's error names the ASCII one it was sent to).
      if (typeof holder.email === 'string') addressForms(holder.email).forEach(add);
      if (typeof holder.customId === 'string' && holder.customId) customIds.add(holder.customId);
    }
    for (const field of ['to', 'email'] as const) {
      if (typeof data[field] === 'string') {
        add(data[field]);
        addressForms(data[field]).forEach(add);
        emails.add(data[field]);
      }
    }
  }
  return { needles: [...needles], emails: [...emails], customIds: [...customIds], invitationIds: [] };
}

/** Whether a text holds one of the guest's values (`needles` are caselessKeys: in any case and either Unicode form). */
const holdsValue = (text: string, needles: string[]): boolean => {
  const key = caselessKey(text);
  return needles.some((n) => key.includes(n));
};

/** Whether a scan's lookup (barcode, customId, guestId: what the door sent) holds one of the guest's values. */
const lookedUp = (lookup: ScanDoc['lookup'], needles: string[]): boolean =>
  Object.values(lookup ?? {}).some((value) => typeof value === 'string' && holdsValue(value, needles));

/**
 * Ids and times are never a person's data, but a short value (a customId `2026`, a barcode `100`)
 * is inside many of them: they stay, so that erasure keeps the documents' keys, their event and
 * the times that counts, funnels and the audit trail are made of (docs/personal-data.md).
 */
const KEPT_ID_FIELDS = new Set([
  '_id',
  'clientId',
  'eventId',
  'templateId',
  'guestId',
  'attendeeId',
  'attendeeInvitationId',
  'scanId',
  'teamMemberId',
  'sourceEventId',
  'configurationId',
  // Made by machines, not from the guest: the ticket (its signed code and key id, random text a short value can be inside),
  // the provider's message id, a keyed hash of the address.
  'ticketCode',
  'ticketKeyId',
  'providerMessageId',
  'emailKey',
]);
/** The delivery log also keeps each attempt's `url`: the client's own endpoint, which a short value (its port) can be inside. */
const DELIVERY_LOG_KEPT = new Set([...KEPT_ID_FIELDS, 'url']);
const PERSONAL_FIELDS = new Set<string>(personalGuestFields);
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

const kept = (key: string, item: unknown, needles: string[], keep: ReadonlySet<string>): boolean =>
  keep.has(key) ||
  (typeof item === 'string' && !PERSONAL_FIELDS.has(key) && INSTANT.test(item)) ||
  // A GUID anywhere (`createdBy`, the caller's User id by default; a scan's `scannedBy.id`, a team member's id) is an id a short
  // customId can be inside by chance: it stays, unless one of the guest's values holds it whole (a CRM's GUID customId, in any case).
  (typeof item === 'string' && isUuid(item) && !needles.some((needle) => needle.includes(caselessKey(item))));

/** Replaces every string that contains a personal value with `[erased]` (ids and times excepted); returns the document when it changed. */
function scrubbed<T>(value: T, needles: string[], keep: ReadonlySet<string> = KEPT_ID_FIELDS): { value: T; changed: boolean } {
  if (typeof value === 'string') {
    return holdsValue(value, needles) ? { value: ERASED_TEXT as T, changed: true } : { value, changed: false };
  }
  if (Array.isArray(value)) {
    let changed = false;
    const items = value.map((item) => {
      const r = scrubbed(item, needles, keep);
      changed ||= r.changed;
      return r.value;
    });
    return { value: items as T, changed };
  }
  if (value && typeof value === 'object') {
    let changed = false;
    const copy: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      if (kept(key, item, needles, keep)) {
        copy[key] = item;
        continue;
      }
      const r = scrubbed(item, needles, keep);
      changed ||= r.changed;
      copy[key] = r.value;
    }
    return { value: copy as T, changed };
  }
  return { value, changed: false };
}

/** Replaces the matching documents of a collection with their scrubbed copies. */
async function scrubCollection(services: Services, name: string, filter: Record<string, unknown>, needles: string[], keep: ReadonlySet<string> = KEPT_ID_FIELDS): Promise<void> {
  if (needles.length === 0) return;
  const collection = services.readStore.collection<Doc>(name);
  const changes: Doc[] = [];
  for await (const found of collection.stream(filter, { readOnly: true })) {
    const { value, changed } = scrubbed(found, needles, keep);
    if (changed) changes.push(value);
  }
  for (const { _id, ...rest } of changes) await collection.replaceOne(_id, rest);
}

/**
 * The guest document is scrubbed by its projection (GuestErased); here the other read models
 * that name the guest: its invitations, their funnel and comms events.
 */
async function scrubGuestReadModels(services: Services, doc: GuestDoc, values: PersonalValues): Promise<void> {
  const { readStore } = services;
  const guestId = guestIdOf(doc);
  const { clientId } = doc;
  await scrubCollection(services, 'invitations', { clientId, attendeeId: guestId }, values.needles);
  await scrubCollection(services, 'funnel_invitations', { clientId, guestId }, values.needles);
  await scrubCollection(services, 'comms_events', { clientId, 'data.attendeeId': guestId }, values.needles);
  // Invitations lose their recipient even when it was shorter than a searched value.
  const invitations = readStore.collection<InvitationDoc>('invitations');
  const withRecipient: string[] = [];
  for await (const invitation of invitations.stream({ clientId, attendeeId: guestId, to: { $exists: true } })) withRecipient.push(invitation._id);
  for (const id of withRecipient) await invitations.updateOne(id, { $unset: { to: '' } });
  // A guest document the projection has not reached yet (the read-your-writes wait is bounded) is scrubbed here too.
  const current = await guests(services).get(doc._id);
  if (current && !current.erased) {
    const personal = new Set<string>([...personalDocFields, 'blockedReason']);
    const { _id, ...rest } = scrubbed(current, values.needles).value;
    const kept = Object.fromEntries(Object.entries(rest).filter(([key]) => !personal.has(key)));
    await guests(services).replaceOne(_id, { ...kept, erased: true } as Omit<GuestDoc, '_id'>);
  }
  // What the projection keeps (tags, a block reason, a correlationId a CRM filled with the email) loses the guest's values too.
  await scrubCollection(services, 'guests', { _id: doc._id }, values.needles);
  await scrubScanBlockReasons(services, clientId, guestId);
}

/**
 * Each scan of a blocked guest repeats the block reason door staff saw, which may name the guest
 * ("Ann Smith: banned"). It is sealed with the guest's key in the events, so a rebuild writes the
 * scans without it: it goes here too, whatever it says.
 */
async function scrubScanBlockReasons(services: Services, clientId: string, guestId: string): Promise<void> {
  const scans = services.readStore.collection<ScanDoc>('scans');
  const withReason: string[] = [];
  for await (const scan of scans.stream({ clientId, guestId, blockedReason: { $exists: true } }, { readOnly: true })) withReason.push(scan._id);
  for (const scanId of withReason) await scans.updateOne(scanId, { $unset: { blockedReason: '' } });
}

/**
 * Read models of the client that are not per guest: door scans that looked a value up, the
 * suppression list entries of the guests' addresses, the webhook delivery log and stored
 * idempotent replies (which may repeat a created guest).
 */
async function scrubSharedReadModels(services: Services, clientId: string, docs: GuestDoc[], values: PersonalValues, at: string): Promise<void> {
  for (const eventId of new Set(docs.map((d) => d.eventId))) await eraseUnmatchedScans(services, clientId, eventId, values.needles, at);
  await scrubCollection(services, 'webhook_deliveries', { clientId }, values.needles, DELIVERY_LOG_KEPT);
  await scrubIdempotentReplies(services, clientId, new Set(docs.map((d) => normalizeId(guestIdOf(d)))), values.needles);
  // The addresses stay suppressed, by their keyed hash only: another guest of the client may have one (docs/personal-data.md).
  await keepSuppressionsWithoutAddresses(services, clientId, values.emails);
}

/**
 * The stored replies of idempotent requests (kept 24 h, src/http/middleware/idempotency.ts) that
 * answered one of these guests: in each, the guest's object (its `id`, `guestId` or `attendeeId`
 * is an erased guest's: a create's answer, a door scan's `guest`, an element of a bulk answer)
 * has its personal values `[erased]`; the rest of the reply is kept, so a retry still answers
 * valid JSON (an error's answer, 4xx/5xx, is scrubbed whole, still as JSON). A reply that merely
 * holds the same text (another guest with the same last name)
 * is not touched: before, every reply of the client holding any of the values became the bare
 * text `[erased]`, and a retry of another guest's create was answered that. A reply that is not
 * JSON and holds a value is deleted (its key is released).
 */
async function scrubIdempotentReplies(services: Services, clientId: string, guestIds: Set<string>, needles: string[]): Promise<void> {
  if (needles.length === 0) return;
  const isErasedGuest = (value: Record<string, unknown>) =>
    ['id', 'guestId', 'attendeeId'].some((field) => typeof value[field] === 'string' && guestIds.has(normalizeId(value[field] as string)));
  const scrubGuests = (value: unknown): { value: unknown; changed: boolean } => {
    if (Array.isArray(value)) {
      let changed = false;
      const items = value.map((item) => {
        const r = scrubGuests(item);
        changed ||= r.changed;
        return r.value;
      });
      return { value: items, changed };
    }
    if (value && typeof value === 'object') {
      if (isErasedGuest(value as Record<string, unknown>)) return scrubbed(value, needles);
      let changed = false;
      const copy: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(value)) {
        const r = scrubGuests(item);
        changed ||= r.changed;
        copy[key] = r.value;
      }
      return { value: copy, changed };
    }
    return { value, changed: false };
  };
  await rewriteIdempotentReplies(services, clientId, ({ status, text, answer }) => {
    if (!holdsValue(text, needles)) return undefined;
    if (answer === undefined) return 'drop';
    // An error's answer (a 409 quoting a taken customId) is words, not another guest's data: scrubbed whole.
    const { value, changed } = status >= 400 ? scrubbed(answer, needles) : scrubGuests(answer);
    return changed ? { answer: value } : undefined;
  });
}

/**
 * Door scans that matched no single guest (UnmatchedScanRejected) but looked up one of the
 * guest's values, e.g. its barcode scanned before the guest had it: the scan's own data key is
 * deleted, so its event opens without the lookup from now on (also on a rebuild), and the
 * scans row loses its lookup, as a rebuild would write it. Scans written unsealed (before this
 * release, or with PII_ENCRYPTION=off) lose it in the read model only (docs/personal-data.md).
 */
async function eraseUnmatchedScans(services: Services, clientId: string, eventId: string, needles: string[], at: string): Promise<void> {
  if (needles.length === 0) return;
  const scans = services.readStore.collection<ScanDoc>('scans');
  const matched: string[] = [];
  for await (const scan of scans.stream({ clientId, eventId, lookup: { $exists: true } }, { readOnly: true })) {
    // Every value the scan looked up counts, its `guestId` too: a door may send a customId there.
    if (scan.guestId === undefined && lookedUp(scan.lookup, needles)) matched.push(scan._id);
  }
  for (const scanId of matched) {
    const keyId = unmatchedScanKeyId(clientId, scanId);
    if (keyId) await services.dataKeys?.erase(keyId, at);
    await scans.updateOne(scanId, { $unset: { lookup: '' } });
  }
}

/** Export files hold the event's guest list: every export of the event is deleted (record and file; the client makes a new one). */
async function removeExports(services: Services, settings: PersonalDataSettings, clientId: string, eventId: string): Promise<void> {
  const exports = services.readStore.collection<Doc & { file: string }>('exports');
  const found: (Doc & { file: string })[] = [];
  for await (const record of exports.stream({ clientId, eventId })) found.push(record);
  for (const record of found) {
    await fs.promises.rm(path.join(settings.exportDir, record.file), { force: true });
    await exports.deleteOne(record._id);
  }
}

/**
 * The guest's own outbox emails, by file name: the embedded mailer writes invitation `<id>` to
 * `<id>.eml` (src/adapters/mailer/outbox.ts), and a temp file `.<id>.eml.<pid>.<uuid>.tmp` while
 * it writes. Matching by content would also delete other guests' emails that hold the same
 * address or name (another client's guest with the same email), so it is not done.
 */
async function removeOutboxEmails(outboxDir: string, invitationIds: string[]): Promise<void> {
  if (invitationIds.length === 0) return;
  const wanted = new Set(invitationIds.map((id) => `${id}.eml`));
  const names = await fs.promises.readdir(outboxDir).catch(() => [] as string[]);
  for (const name of names) {
    const temp = /^\.(.+\.eml)\.[^/]+\.tmp$/.exec(name);
    if (wanted.has(name) || (temp && wanted.has(temp[1]!))) await fs.promises.rm(path.join(outboxDir, name), { force: true });
  }
}

/**
 * What a door could have looked the guest up by, as caselessKeys: its id and every barcode and
 * customId it has had (read from its events, which open while its key exists).
 */
function lookupValuesOf(guestId: string, guestEvents: StoredEvent[]): Set<string> {
  const values = new Set<string>([guestId.toLowerCase()]);
  for (const event of guestEvents) {
    const data = event.data as Record<string, unknown>;
    for (const holder of [data, data.changes as Record<string, unknown> | undefined]) {
      for (const field of ['barcode', 'customId'] as const) {
        const value = holder?.[field];
        if (typeof value === 'string' && value.trim() !== '') values.add(caselessKey(value.trim()));
      }
    }
  }
  return values;
}

/**
 * Door scans of the guest's event that matched no guest but looked up one of its values (its
 * barcode scanned before it had it, its customId sent as guestId): the value equal, in any case and either Unicode form.
 * A lookup that only contains one of the values is someone else's code, and is not shown.
 */
async function unmatchedScansOf(services: Services, clientId: string, eventId: string, values: Set<string>): Promise<ScanDoc[]> {
  const found: ScanDoc[] = [];
  for await (const scan of services.readStore.collection<ScanDoc>('scans').stream({ clientId, eventId, lookup: { $exists: true } }, { sort: { at: 1 } })) {
    if (scan.guestId !== undefined || scan.clientId !== clientId) continue;
    if (Object.values(scan.lookup ?? {}).some((value) => typeof value === 'string' && values.has(caselessKey(value.trim())))) found.push(scan);
  }
  return found;
}

/**
 * The comms events about the guest's emails (the webhook bodies: comms.sent, comms.delivered, ...)
 * and, for each, its delivery to the account's webhook (where, when, with what answer), or null
 * when none was made (no webhook configured then).
 */
async function commsEventsOf(services: Services, clientId: string, guestId: string) {
  const events: CommsEventDoc[] = [];
  for await (const event of services.readStore.collection<CommsEventDoc>('comms_events').stream({ clientId, 'data.attendeeId': guestId }, { sort: { position: 1 } })) {
    if (event.clientId === clientId) events.push(event);
  }
  const deliveries = services.readStore.collection<DeliveryDoc>('webhook_deliveries');
  return Promise.all(
    events.map(async (event) => {
      const { _id, type, createdAt } = event;
      // The ids as the caller sent them, as the webhook showed them (docs/identifiers.md).
      const data = shownCommsData(event);
      const found = await deliveries.get(_id);
      if (!found || found.clientId !== clientId) return { id: _id, type, createdAt, data, delivery: null };
      const { _id: _d, clientId: _c, ...delivery } = found;
      return { id: _id, type, createdAt, data, delivery };
    }),
  );
}

/**
 * The suppression-list entries of the guest's addresses (any it has or had, and its invitations'
 * recipients): the service keeps that the address bounced, was dropped or reported spam, and
 * when. An entry is about the address, whichever of the client's invitations it came from.
 */
async function suppressionsOf(services: Services, clientId: string, emails: string[]) {
  const found = new Map<string, { email: string; reason: string; at: string }>();
  for (const email of emails) {
    // One entry per address: the guest's ada@bücher.de and the recipient ada@xn--bcher-kva.de are one.
    const address = addressKeyText(email);
    const entry = found.has(address) ? undefined : await suppressionOf(services, clientId, email);
    if (entry) found.set(address, { email, reason: entry.reason, at: entry.at });
  }
  return [...found.values()];
}

/**
 * Issue 14, item 4: everything held about one guest, as one document: the guest as the API
 * shows it, its decrypted history (guest and invitation streams), its invitation emails with
 * their outcomes and the comms events about them with their webhook deliveries, its scans, and
 * the door scans that looked one of its values up without finding it.
 */
export async function personalDataOf(services: Services, clientId: string, idOrCustomId: string, eventId?: string) {
  const doc = await findGuestByIdOrCustomId(services, clientId, idOrCustomId, eventId);
  const guestId = guestIdOf(doc);
  const guestEvents = await services.eventStore.readStream(guestStreamOf(doc));
  const history = await wholeGuestHistory(services, clientId, guestId, doc.eventId);
  const invitations: InvitationDoc[] = [];
  for await (const invitation of services.readStore.collection<InvitationDoc>('invitations').stream({ clientId, attendeeId: guestId })) invitations.push(invitation);
  const scans: ScanDoc[] = [];
  for await (const scan of services.readStore.collection<ScanDoc>('scans').stream({ clientId, guestId }, { sort: { at: 1 } })) scans.push(scan);
  const unmatchedScans = await unmatchedScansOf(services, clientId, doc.eventId, lookupValuesOf(guestId, guestEvents));
  const scanView = ({ _id, clientId: _c, ...scan }: ScanDoc) => ({ scanId: _id, ...scan });
  const emails = personalValues([doc, ...guestEvents.map((e) => e.data), ...invitations]).emails;
  return {
    guestId: shownGuestId(doc),
    eventId: doc.eventId,
    generatedAt: services.clock.now().toISOString(),
    guest: toGuestView(doc),
    invitations: invitations.map(toInvitationView),
    commsEvents: await commsEventsOf(services, clientId, guestId),
    scans: await withoutRemovedScanners(services, clientId, scans.map(scanView)),
    unmatchedScans: await withoutRemovedScanners(services, clientId, unmatchedScans.map(scanView)),
    suppressions: await suppressionsOf(services, clientId, emails),
    // Issue 16: the guest's valid signed ticket code, or null when it has none.
    ticketCode: ticketCodeOf(guestEvents),
    history,
  };
}
