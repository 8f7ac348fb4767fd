import { DomainError } from '../domain/decider.js';
import {
  detailFields,
  guestDecider,
  guestKey,
  parseTags,
  type GuestCommand,
  type GuestDetails,
  type GuestDetailsChange,
  type ImportedState,
} from '../domain/guest.js';
import { personalGuestFields } from '../domain/personal-data.js';
import { customIdStream, legacyCustomIdStream, reservationDecider, reservationKey, type ReservationCommand, type StreamNameKey } from '../domain/reservation.js';
import { guestIdOf, guestStreamOf, shownGuestId, type GuestDoc } from '../projections/guests.js';
import { guidAsSent } from '../shared/ids.js';
import { storedTextBytes } from '../domain/text-size.js';
import { withEveryField, type WithEveryField } from '../shared/every-field.js';
import { getEvent } from './events.js';
import { findGuestByIdOrCustomId, findOwnGuest } from './guest-lookup.js';
import { findTemplateDoc } from './templates.js';
import { handleCommands, lastPosition, repeatableId, type BatchItem, type CommandContext } from './handle-command.js';
import { readModelsBehind, type Services } from './services.js';
import { ticketSigner, type TicketSigner } from '../tickets/event-keys.js';

/**
 * A guest record as a request gives it (spec: Guest); every field optional. Admission and block
 * are taken when the record creates the guest, and never change an existing one (spec rule 3).
 */
export type GuestInput = GuestDetailsChange &
  ImportedState & {
    id?: string;
    eventId?: string;
    tags?: string;
  };

/** The spec's Guest table, in its order: every answer holds each of these fields. */
export const guestFields = [
  'id',
  'firstName',
  'otherNames',
  'lastName',
  'email',
  'plusOnes',
  'admittedPlusOnes',
  'additionalInfo',
  'barcode',
  'tags',
  'createdBy',
  'admitted',
  'blockedDate',
  'blockedReason',
  'eventId',
  'validFrom',
  'validTo',
  'isGroup',
  'discharged',
  'image',
  'customId',
  'commsTemplateId',
  'correlationId',
] as const;

interface StoredGuestView extends GuestDetails {
  id: string;
  eventId: string;
  plusOnes: number;
  admittedPlusOnes: number;
  isGroup: boolean;
  tags?: string;
  admitted?: string;
  blockedDate?: string;
  blockedReason?: string;
  discharged?: string;
  /** The guest's last change (details, tags, ticket, block, door): a sync's next `changedSince`. */
  updated?: string;
  /** Issue 14: set once the guest's personal data is erased (its personal fields are then null). */
  erased?: boolean;
  erasedAt?: string;
}

/** The spec's Guest object: every field, a text or time not set is null (docs/api.md, Answers). */
export type GuestView = WithEveryField<StoredGuestView, (typeof guestFields)[number]>;

const erasedViewFields = personalGuestFields.filter((field) => (detailFields as readonly string[]).includes(field));

export function toGuestView(doc: GuestDoc): GuestView {
  const view: Record<string, unknown> = { id: shownGuestId(doc), eventId: doc.eventId };
  for (const field of detailFields) if (doc[field] !== undefined) view[field] = doc[field];
  // A count or flag not set is what the door reads it as (0 plus ones, not a group), never null:
  // the spec types them integer and boolean, which a typed client cannot set to null.
  view.plusOnes = doc.plusOnes ?? 0;
  view.isGroup = doc.isGroup ?? false;
  view.admittedPlusOnes = doc.admittedPlusOnes ?? 0;
  for (const field of ['tags', 'admitted', 'blockedDate', 'blockedReason', 'discharged'] as const) {
    if (doc[field] !== undefined) view[field] = doc[field];
  }
  if (doc.updated !== undefined) view.updated = doc.updated;
  // Issue 14: an erased guest keeps its ids, times and counts; its personal fields are null.
  if (doc.erased) {
    for (const field of erasedViewFields) view[field] = null;
    Object.assign(view, { erased: true, ...(doc.erasedAt ? { erasedAt: doc.erasedAt } : {}) });
  }
  return withEveryField(view as unknown as StoredGuestView, guestFields);
}

/**
 * A stored guest document's view as JSON text, made once per document: the embedded read store
 * hands out its stored documents to readers that only read (`readOnly`), and replaces a document
 * on every change instead of changing it, so a document's text stays right for as long as the
 * document lives (the entry goes with it). byinfo writes the same guests again and again.
 */
const viewTexts = new WeakMap<GuestDoc, string>();
export function guestViewJson(doc: GuestDoc): string {
  let text = viewTexts.get(doc);
  if (text === undefined) viewTexts.set(doc, (text = JSON.stringify(toGuestView(doc))));
  return text;
}

export const guests = (services: Services) => services.readStore.collection<GuestDoc>('guests');

const detailsOf = (input: GuestInput): GuestDetailsChange =>
  Object.fromEntries(detailFields.filter((f) => input[f] !== undefined).map((f) => [f, input[f]])) as GuestDetailsChange;

/** The admission and block a record gives; a reason without blockedDate blocks from now. */
function importedOf(input: GuestInput, now: Date): ImportedState | undefined {
  const imported: ImportedState = {
    ...(input.admitted !== undefined ? { admitted: input.admitted } : {}),
    ...(input.admittedPlusOnes !== undefined ? { admittedPlusOnes: input.admittedPlusOnes } : {}),
    ...(input.discharged !== undefined ? { discharged: input.discharged } : {}),
    ...(input.blockedDate !== undefined ? { blockedDate: input.blockedDate } : {}),
    ...(input.blockedReason !== undefined ? { blockedReason: input.blockedReason } : {}),
  };
  return Object.keys(imported).length > 0 ? { ...imported, receivedAt: now.toISOString() } : undefined;
}

/**
 * The most text (UTF-8 bytes, all of a guest's text fields together) a guest may hold. MongoDB
 * stores a document of at most 16 MiB and refuses an update that would make it larger; the guests
 * read model keeps a lower-cased copy of the names, email, customId, additionalInfo and tags, so
 * its document holds up to twice a guest's text, and a guest over the limit would stop the guests
 * projection for good (its batch is retried for ever). 4 MiB keeps a guest's document at 12 MiB
 * at most (twice the text, and a bulk block's reason of up to 4 MiB, which records cannot change),
 * also after a rebuild onto MongoDB of events stored in the embedded store (docs/guests.md, "Size of a guest").
 * A copy can hold more bytes than its text (NFC, then lower case: `İ` is 2 bytes, `i̇` 3; U+1D160
 * is 4 bytes, its NFC 12), so what the copies take beyond their text counts too (KEYED_TEXT_FIELDS).
 */
export const GUEST_TEXT_LIMIT = 4 * 1024 * 1024;

/** Fields whose lower-cased copy (caselessKey: `…Lower`, `tagList`) the guest's document also holds. */
const KEYED_TEXT_FIELDS: ReadonlySet<string> = new Set(['lastName', 'firstName', 'otherNames', 'email', 'customId', 'additionalInfo', 'tags']);

/** Text fields a guest's document keeps, besides the tags. */
const guestTextFields = [...detailFields.filter((f) => f !== 'plusOnes' && f !== 'isGroup'), 'blockedReason'] as const;

/**
 * The guest's text (UTF-8 bytes) once the record is applied, and its largest field: a field the
 * record gives replaces the stored one (null removes it), tags add to the stored ones unless
 * they replace them.
 */
function textAfter(input: GuestInput, existing: GuestDoc | null, replaceTags: boolean): { bytes: number; largest: string } {
  let bytes = 0;
  // The record's largest field names the error (the stored guest's largest when the record gives no text).
  let largest = { field: 'image', bytes: -1, given: false };
  const add = (field: string, value: unknown, given: boolean) => {
    if (typeof value !== 'string') return;
    // With the copy's bytes beyond the text's own: on FerretDB (no 16 MiB check on updates) and the
    // embedded store such a guest was stored, on MongoDB the update was refused for ever.
    const size = storedTextBytes(value, KEYED_TEXT_FIELDS.has(field));
    bytes += size;
    if ((given && !largest.given) || (given === largest.given && size > largest.bytes)) largest = { field, bytes: size, given };
  };
  for (const field of guestTextFields) {
    // Admission and block are taken from a record only when it creates the guest (spec rule 3);
    // a block's reason (bulk block) has a bound of its own.
    if (field === 'blockedReason' && existing) continue;
    const given = input[field];
    add(field, given === undefined ? existing?.[field] : given, given !== undefined);
  }
  const tags = [input.tags, replaceTags && input.tags !== undefined ? undefined : existing?.tags].filter((t) => t !== undefined).join(',');
  add('tags', tags, input.tags !== undefined);
  return { bytes, largest: largest.field };
}

/** Rules one record must keep on its own; `existing` is the guest it updates, if any. */
function recordErrors(input: GuestInput, existing: GuestDoc | null, eventId: string, at: (field: string) => string, replaceTags = false) {
  const errors: { path: string; message: string }[] = [];
  const text = textAfter(input, existing, replaceTags);
  if (text.bytes > GUEST_TEXT_LIMIT) {
    errors.push({
      path: at(text.largest),
      message: `the guest's texts would hold ${text.bytes} bytes (UTF-8) in all, with what their lower-cased copies take beyond the text; a guest holds at most ${GUEST_TEXT_LIMIT} (4 MiB): keep images under 50 kB`,
    });
  }
  // Ids compare exactly (both normalized: a GUID in lowercase); `Gala` and `gala` are two events (docs/identifiers.md).
  if (input.eventId !== undefined && input.eventId !== eventId) {
    errors.push({ path: at('eventId'), message: 'must be the event of the path (or left out)' });
  }
  // A record's null (from "") removes the stored bound, so it is not checked against it.
  const validFrom = input.validFrom === undefined ? existing?.validFrom : input.validFrom;
  const validTo = input.validTo === undefined ? existing?.validTo : input.validTo;
  if (validFrom && validTo && Date.parse(validFrom) > Date.parse(validTo)) {
    errors.push({ path: at(input.validFrom !== undefined ? 'validFrom' : 'validTo'), message: 'validFrom must not be after validTo' });
  }
  if (existing) return errors; // upsert never changes admission and block (spec rule 3)
  if (input.admittedPlusOnes && !input.admitted) errors.push({ path: at('admittedPlusOnes'), message: 'needs admitted: only an admitted guest has admitted plus ones' });
  if ((input.admittedPlusOnes ?? 0) > (input.plusOnes ?? 0)) errors.push({ path: at('admittedPlusOnes'), message: 'must not be more than plusOnes' });
  if (input.discharged && !input.admitted) errors.push({ path: at('discharged'), message: 'needs admitted: only an admitted guest can be checked out' });
  return errors;
}

interface Planned {
  guestId: string;
  /** Where the guest is stored: its guests document's `_id`, which also names its stream. */
  key: string;
  existing: GuestDoc | null;
  input: GuestInput;
  /** The guest's current customId is reserved under its legacy (plaintext) stream name: release it there too. */
  releaseLegacy?: boolean;
  /** A create without id whose customId is an existing guest's: that guest's create again. */
  retriedByCustomId?: boolean;
  /** A new guest's id as the record spells it, when not lowercase (GuestRegistered.guestIdAsSent). */
  guestIdAsSent?: string;
}

/**
 * Create (mode `create`) or upsert (mode `upsert`) a batch of guests of one event.
 * Records match by `id`, then by `customId` within the event. Everything is checked, and
 * every command decided, before anything is appended; the appends go in one batch.
 */
export async function saveGuests(
  services: Services,
  context: CommandContext,
  eventId: string,
  records: GuestInput[],
  options: SaveOptions,
): Promise<GuestView[]> {
  const event = await getEvent(services, context.tenantId, eventId);
  // Only a record with a customId reserves or releases one (and needs the stream-name key).
  const nameKey = records.some((r) => r.customId !== undefined) ? await services.dataKeys?.streamNameKey() : undefined;
  // Legacy (plaintext) reservation names exist only in events created before names were hashed.
  const legacyNames = nameKey !== undefined && !(Date.parse(event.created) >= Date.parse(nameKey.since));
  // A customId another request reserved after this one looked (two CRM syncs, or a create and
  // its retry, at once): plan again on the guests as they are now, so the record names the
  // winner's guest as it would have one request later (docs/guests.md, Concurrent requests).
  for (let attempt = 1; ; attempt++) {
    try {
      return await saveGuestsOnce(services, context, eventId, records, options, nameKey, legacyNames);
    } catch (error) {
      if (!(error instanceof DomainError && error.details?.code === 'already_taken')) throw error;
      if (attempt >= customIdRaceAttempts) {
        throw new DomainError('conflict', 'customId must be unique within the event', { code: 'custom_id_taken' });
      }
      // The winner's guest may not be in the read model yet (on EventStoreDB it is written after its claim).
      await services.readYourWrites(await services.eventStore.headPosition());
      await new Promise((resolve) => setTimeout(resolve, 10 * 2 ** attempt));
    }
  }
}

interface SaveOptions {
  mode: 'create' | 'upsert';
  removeObsoleteTags?: boolean;
  /**
   * false: the caller answers without the guests (PUT …/upsert, 204), so none of their views is
   * made and the answer is an empty list; the read model is still read back for every guest (read
   * your writes), with the same error when one is missing. Default true.
   */
  views?: boolean;
}

/** How often a batch that lost a customId to a concurrent request is planned again. */
const customIdRaceAttempts = 5;

async function saveGuestsOnce(
  services: Services,
  context: CommandContext,
  eventId: string,
  records: GuestInput[],
  options: SaveOptions,
  nameKey: StreamNameKey | undefined,
  legacyNames: boolean,
): Promise<GuestView[]> {
  const plans = await planGuests(services, context, eventId, records, options.mode, legacyNames, options.removeObsoleteTags === true);
  const templatesAsSent = await checkInvitations(services, context.tenantId, eventId, plans, options.mode);
  const items: BatchItem[] = [];
  let signer: TicketSigner | undefined;
  for (const plan of plans) {
    const details = detailsOf(plan.input);
    // A blank email (a CRM's empty cell) is no email: a record that creates the guest leaves it
    // out (answered null); on an existing guest it empties the email, as "" empties any text.
    if (details.email === '' && (!plan.existing || options.mode === 'create')) delete details.email;
    // A blank validFrom or validTo is none: where the record creates the guest there is nothing to remove.
    for (const bound of ['validFrom', 'validTo'] as const) {
      if (details[bound] === null && (!plan.existing || options.mode === 'create')) delete details[bound];
    }
    // Issue 16: a guest left without a barcode, that never had a ticket, gets a signed one.
    const barcode = plan.input.barcode === undefined ? plan.existing?.barcode : plan.input.barcode;
    const needsTicket = !barcode && plan.existing?.ticketSerial === undefined && services.secretsKeyring !== undefined;
    if (needsTicket) signer ??= await ticketSigner(services, context, eventId);
    const ticket = needsTicket ? signer!.issue(plan.guestId, 1) : undefined;
    // A create retried with the same id compares as the first create did (createdBy included).
    if (details.createdBy === undefined && (!plan.existing || options.mode === 'create')) details.createdBy = context.actor.id;
    const tags = plan.input.tags !== undefined ? parseTags(plan.input.tags) : undefined;
    const imported = importedOf(plan.input, context.now);
    // The spellings the webhook shows (docs/identifiers.md): no read of their own (the template's was read once per batch).
    const templateIdAsSent = plan.input.commsTemplateId ? templatesAsSent.get(plan.input.commsTemplateId) : undefined;
    const asSent = { ...(plan.guestIdAsSent ? { guestIdAsSent: plan.guestIdAsSent } : {}), ...(templateIdAsSent ? { templateIdAsSent } : {}) };
    const command: GuestCommand =
      options.mode === 'create'
        ? {
            type: 'RegisterGuest',
            guestId: plan.guestId,
            clientId: context.tenantId,
            eventId,
            // In create mode the blank bounds were dropped above: no null is left.
            details: details as GuestDetails,
            tags: tags ?? [],
            invitationId: repeatableId(context, 'invitation', plan.guestId),
            ...asSent,
            ...(imported ? { imported } : {}),
            ...(ticket ? { ticket } : {}),
          }
        : {
            type: 'MergeGuest',
            guestId: plan.guestId,
            clientId: context.tenantId,
            eventId,
            details,
            ...(tags ? { tags } : {}),
            replaceTags: options.removeObsoleteTags ?? false,
            invitationId: repeatableId(context, 'invitation', plan.guestId),
            ...asSent,
            ...(imported && !plan.existing ? { imported } : {}),
            ...(ticket ? { ticket } : {}),
          };
    const guestItem = items.length;
    // A guest the read model does not know is decided without reading its stream (see assumeNew).
    items.push({ streamName: guestStreamOf({ _id: plan.key }), decider: guestDecider, command, assumeNew: !plan.existing });
    items.push(...customIdReservations(context.tenantId, eventId, plan, guestItem, nameKey));
  }
  const results = await handleCommands(services.eventStore, items, context).catch((error: unknown) => {
    // A customId another request reserved since the plan was made (already_taken) is planned again by the caller.
    // Named by customId with other content: another guest for this customId, or a change (the upsert's job).
    if (error instanceof DomainError && error.details?.code === 'guest_exists' && plans.some((p) => p.retriedByCustomId)) {
      throw new DomainError('conflict', 'customId must be unique within the event', {
        code: 'custom_id_taken',
        errors: [{ path: 'customId', message: 'already used by a guest of this event with other content (to change that guest, use the upsert)' }],
      });
    }
    throw error;
  });
  await services.readYourWrites(lastPosition(results));
  const docs = await Promise.all(plans.map((p) => guests(services).get(p.key, { readOnly: true })));
  const missing = docs.findIndex((d) => d === null);
  if (missing >= 0) throw readModelsBehind(docs.length === 1 ? `guest ${plans[missing]!.guestId}` : `the batch of ${docs.length} guests`);
  return options.views === false ? [] : (docs as GuestDoc[]).map(toGuestView);
}

/**
 * Spec, Guest.commsTemplateId: the template must belong to the caller's client and to the
 * same event (else 404, and nothing of the batch is applied). The send itself is asynchronous
 * and its result arrives through the webhook: a guest without an email address is created and
 * its invitation fails as comms.failed `no_email` (docs/invitations.md), as one whose email is
 * not an address fails as `invalid_email`; the spec makes no field of the Guest required.
 */
async function checkInvitations(services: Services, clientId: string, eventId: string, plans: Planned[], mode: 'create' | 'upsert'): Promise<Map<string, string | undefined>> {
  const usable = new Map<string, boolean>();
  // Each template's id as its creator sent it (the webhook's templateId), read once per template of the batch.
  const asSent = new Map<string, string | undefined>();
  for (const [index, plan] of plans.entries()) {
    const templateId = plan.input.commsTemplateId;
    if (!templateId) continue;
    if (!usable.has(templateId)) {
      const template = await findTemplateDoc(services, clientId, templateId);
      usable.set(templateId, template?.clientId === clientId && template.eventId === eventId);
      asSent.set(templateId, template?.templateIdAsSent);
    }
    // The guest's own template again: checked when it was named (a repeat requests a send only to retry one that lacked an email).
    if (templateId === plan.existing?.commsTemplateId) continue;
    if (!usable.get(templateId)) {
      throw new DomainError('not_found', `template ${templateId} not found in this event`, {
        errors: [{ path: recordPath(plans.length, mode, index, 'commsTemplateId'), message: 'no template with this id in this event' }],
      });
    }
  }
  return asSent;
}

/** Where a record's field is named in an answer's `errors`: `3.email` in a batch (and always on upsert), `email` for a single record. */
function recordPath(records: number, mode: 'create' | 'upsert', index: number, field: string): string {
  return records > 1 || mode === 'upsert' ? `${index}.${field}` : field;
}

/**
 * Reserve a new customId (and release the old one) in the same batch as the guest's change:
 * the reservation is a claim (taken before the guest is written, given back if the batch
 * aborts), the release comes after the guest gave the key up (src/commands/batch-intents.ts).
 */
function customIdReservations(clientId: string, eventId: string, plan: Planned, guestItem: number, nameKey: StreamNameKey | undefined): BatchItem[] {
  const wanted = plan.input.customId;
  const current = plan.existing?.customId;
  if (!changesCustomId(plan)) return [];
  // A hashed stream name stands for the customId: its events leave it out (docs/personal-data.md, Stream names).
  const keyInEvent = !nameKey;
  const reserve: BatchItem = {
    streamName: customIdStream(clientId, eventId, wanted!, nameKey),
    decider: reservationDecider,
    command: { type: 'Reserve', key: wanted!, ownerType: 'guest', ownerId: plan.guestId, keyInEvent } satisfies ReservationCommand,
    stage: 'claim',
    partOf: guestItem,
    undo: { type: 'Release', key: wanted!, ownerId: plan.guestId, keyInEvent } satisfies ReservationCommand,
    // Most customIds are new; one released before has a stream, and the batch is retried reading it.
    assumeNew: true,
  };
  if (current === undefined) return [reserve];
  const release = (streamName: string, keyInEvent: boolean): BatchItem => ({
    streamName,
    decider: reservationDecider,
    command: { type: 'Release', key: current, ownerId: plan.guestId, keyInEvent } satisfies ReservationCommand,
    stage: 'release',
    partOf: guestItem,
  });
  const releases = [release(customIdStream(clientId, eventId, current, nameKey), keyInEvent)];
  // A legacy name holds the customId in plaintext anyway; its events keep the earlier shape.
  if (plan.releaseLegacy) releases.push(release(legacyCustomIdStream(clientId, eventId, current), true));
  return [reserve, ...releases];
}

/** The record gives the guest a customId it does not have yet (a new reservation). */
const changesCustomId = (plan: Omit<Planned, 'key'>): boolean => {
  const wanted = plan.input.customId;
  const current = plan.existing?.customId;
  return wanted !== undefined && (current === undefined || reservationKey(current) !== reservationKey(wanted));
};

/**
 * Who holds a customId under its legacy (plaintext) stream name, from before names were hashed
 * (docs/personal-data.md): such a reservation keeps the customId taken. Only read for events
 * created before this deployment hashed names (and never when names are not hashed: then the
 * legacy name is the name), so an import into a new event pays no extra read per guest.
 */
async function legacyHolder(services: Services, clientId: string, eventId: string, customId: string): Promise<string | undefined> {
  let state = reservationDecider.initialState();
  for (const event of await services.eventStore.readStream(legacyCustomIdStream(clientId, eventId, customId))) {
    state = reservationDecider.evolve(state, event as never);
  }
  return state.ownerId;
}

async function planGuests(
  services: Services,
  context: CommandContext,
  eventId: string,
  records: GuestInput[],
  mode: 'create' | 'upsert',
  legacyNames: boolean,
  replaceTags = false,
): Promise<Planned[]> {
  const errors: { path: string; message: string }[] = [];
  const plans: Planned[] = [];
  const seenIds = new Map<string, number>();
  const seenCustomIds = new Map<string, number>();
  for (const [index, input] of records.entries()) {
    const at = (field: string) => recordPath(records.length, mode, index, field);
    let existing: GuestDoc | null = null;
    // The guest holding the record's customId, when the record named its guest by it (the same query as the holder's below).
    let byCustomId: GuestDoc | null | undefined;
    let retriedByCustomId = false;
    if (input.id) {
      // Guest ids are scoped per client: another client's guest with this id is not seen at all.
      existing = await findOwnGuest(services, context.tenantId, input.id);
      if (existing && existing.eventId !== eventId) {
        throw new DomainError('not_found', `guest ${input.id} not found in this event`, { errors: [{ path: at('id'), message: 'no guest with this id in this event' }] });
      }
    } else if (input.customId) {
      // Spec: customId is "usable instead of id". An upsert record names the guest it changes by
      // it; a create naming a guest's customId is that guest's create again, safe to retry like
      // a create with its id (docs/guests.md, A create retried with the same id).
      existing = byCustomId = await guests(services).findOne({ clientId: context.tenantId, eventId, customIdLower: reservationKey(input.customId) });
      if (existing && mode === 'create') retriedByCustomId = true;
    }
    errors.push(...recordErrors(input, mode === 'create' ? null : existing, eventId, at, replaceTags));
    // Under an Idempotency-Key a record without id gets the same id on a retry: one the first attempt created is found, not created again.
    const guestId = existing ? guestIdOf(existing) : (input.id?.toLowerCase() ?? repeatableId(context, 'guest', String(index)));
    if (seenIds.has(guestId)) errors.push({ path: at(input.id ? 'id' : 'customId'), message: `the same guest as record ${seenIds.get(guestId)}` });
    seenIds.set(guestId, index);
    if (input.customId) {
      const key = reservationKey(input.customId);
      if (seenCustomIds.has(key)) errors.push({ path: at('customId'), message: `repeats record ${seenCustomIds.get(key)}'s customId` });
      seenCustomIds.set(key, index);
      // A record without id was looked up by this customId above: its holder is the guest found then, read once.
      const holder = byCustomId !== undefined ? byCustomId : await guests(services).findOne({ clientId: context.tenantId, eventId, customIdLower: key }, { readOnly: true });
      let taken = holder !== null && guestIdOf(holder) !== guestId;
      if (!taken && legacyNames && changesCustomId({ guestId, existing, input })) {
        const legacy = await legacyHolder(services, context.tenantId, eventId, input.customId);
        taken = legacy !== undefined && legacy !== guestId;
      }
      if (taken) errors.push({ path: at('customId'), message: 'already used by another guest of this event' });
    }
    const releaseLegacy =
      legacyNames && existing?.customId !== undefined && changesCustomId({ guestId, existing, input }) && (await legacyHolder(services, context.tenantId, eventId, existing.customId)) === guestId;
    plans.push({
      guestId,
      key: existing?._id ?? guestKey(context.tenantId, guestId),
      existing,
      input,
      ...(releaseLegacy ? { releaseLegacy } : {}),
      ...(retriedByCustomId ? { retriedByCustomId } : {}),
      ...(!existing && guidAsSent(input.id) ? { guestIdAsSent: input.id } : {}),
    });
  }
  if (errors.length > 0) {
    const duplicate = errors.some((e) => e.message.startsWith('already used'));
    throw new DomainError(
      duplicate ? 'conflict' : 'validation_error',
      duplicate ? 'customId must be unique within the event' : `the ${records.length > 1 || mode === 'upsert' ? 'batch' : 'guest'} is not valid: see errors`,
      { errors, ...(duplicate ? { code: 'custom_id_taken' } : {}) },
    );
  }
  return plans;
}

/** One guest of this client, by id or customId (guest-lookup.ts); another client's guest is not found. */
export async function getGuest(services: Services, clientId: string, idOrCustomId: string, eventId?: string): Promise<GuestView> {
  return toGuestView(await findGuestByIdOrCustomId(services, clientId, idOrCustomId, eventId));
}
