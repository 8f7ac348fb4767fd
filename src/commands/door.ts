import { createHash } from 'node:crypto';
import { ConcurrencyError } from '../adapters/eventstore/port.js';
import { DomainError } from '../domain/decider.js';
import {
  doorStream,
  guestDecider,
  guestStreamOfKey,
  deviceClockSkewMs,
  scanNonceKey,
  type DoorEvent,
  type GuestState,
  type RejectionReason,
  type ScanInfo,
  type ScanOutcome,
} from '../domain/guest.js';
import type { AccountDoc } from '../projections/accounts.js';
import { guestIdOf, guestStreamOf, type GuestDoc } from '../projections/guests.js';
import { newSortableId } from '../shared/ids.js';
import { getEvent } from './events.js';
import { customIdMatch, findGuestByIdOrCustomId, findOwnGuest } from './guest-lookup.js';
import { guests, toGuestView, type GuestView } from './guests.js';
import { findTeamMember } from './team-members.js';
import { handleCommand, handleCommands, lastPosition, type BatchItem, type CommandContext } from './handle-command.js';
import { readModelsBehind, type Services } from './services.js';
import { checkTicket } from '../tickets/event-keys.js';
import { looksLikeTicket, withoutScannerPadding } from '../tickets/ticket-code.js';

/** How long after a check-in it can be undone (README "Door operations"). */
export const undoWindowMs = 5 * 60_000;
/**
 * Every scan appends to the guest's stream (a rejection too), and each round of a conflict lets
 * one writer through: a group's code shown at k turnstiles at once needs up to k rounds. A scan is
 * answered, never sent back as a 409 to retry (without a nonce, the app's retry is another scan).
 */
const scanAttempts = 32;

/** Which guest a scan names: exactly one of these. */
export interface GuestLookup {
  guestId?: string;
  barcode?: string;
  customId?: string;
}

export interface ScanRequest extends GuestLookup {
  plusOnes?: number;
  force?: boolean;
  nonce?: string;
  at?: string;
  gate?: string;
  device?: string;
}

/** What the scanner shows. */
export interface ScanResponse {
  result: 'admitted' | 'rejected' | 'discharged';
  reason?: RejectionReason;
  blockedReason?: string;
  scanId: string;
  at: string;
  guest?: GuestView;
  plusOnesAdmitted: number;
  plusOnesLeft: number;
  /** True when this answer repeats an earlier scan with the same nonce. */
  replayed: boolean;
}

/**
 * A nonce becomes the scan id (and event id), so a repeated offline scan is one scan. The id also
 * hashes what the scan is about (`subject`: the guest's key when it matched one, else what it
 * looked up) and whose scan it is (scanNonceKey: direction, scanner, device): event ids are
 * unique in the whole store, so two devices that both number their scans from 1 would otherwise
 * make one id of two scans (the second answered as the first and never recorded). A nonce names
 * one scan of one guest or lookup, in one direction, by one scanner on one device.
 */
function scanIdFor(context: CommandContext, eventId: string, nonce?: string, subject?: string): string {
  if (!nonce) return newSortableId();
  const about = subject === undefined ? '' : `\u0000${subject}`;
  const hex = createHash('sha256').update(`scan\u0000${context.tenantId}\u0000${eventId}\u0000${nonce}${about}`).digest('hex');
  // RFC 9562 version 8 (custom) UUID from the hash.
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

async function scannedBy(services: Services, context: CommandContext): Promise<ScanInfo['scannedBy']> {
  const id = context.actor.id;
  if (context.actor.type === 'team_member') {
    const member = await findTeamMember(services, context.tenantId, id);
    return { id, username: member?.userName ?? id };
  }
  const account = await services.readStore.collection<AccountDoc>('accounts').get(id, { readOnly: true });
  return { id, username: account?.userName ?? id };
}

/**
 * `force` overrides a block or validity window: the client may, and a team member whose
 * client set `canForce` on them; anyone else is refused (403) before the scan is recorded.
 */
async function checkMayForce(services: Services, context: CommandContext): Promise<void> {
  if (context.actor.type !== 'team_member') return;
  const member = await findTeamMember(services, context.tenantId, context.actor.id);
  if (member?.canForce !== true) {
    throw new DomainError('forbidden', 'this team member may not force a scan; the client can allow it with canForce on the team member', {
      code: 'force_not_allowed',
    });
  }
}

async function scanInfo(services: Services, context: CommandContext, eventId: string, request: ScanRequest): Promise<ScanInfo> {
  if (request.at && Date.parse(request.at) > context.now.getTime() + deviceClockSkewMs) {
    throw new DomainError('validation_error', 'the scan time `at` is in the future', {
      errors: [{ path: 'at', message: 'must not be more than 5 minutes ahead of the server clock' }],
    });
  }
  return {
    scanId: scanIdFor(context, eventId, request.nonce),
    at: request.at ?? context.now.toISOString(),
    scannedBy: await scannedBy(services, context),
    ...(request.gate !== undefined ? { gate: request.gate } : {}),
    ...(request.device !== undefined ? { device: request.device } : {}),
    ...(request.nonce !== undefined ? { nonce: request.nonce } : {}),
  };
}

/**
 * The guests of this event that a lookup names (0, 1, or several for a shared barcode). An erased
 * guest names no one at the door (its barcode and customId are gone with its personal data; its id
 * and its ticket admit no one, as the offline sync's `none` says), so a scan of it is answered as
 * any rejected scan, without the guest.
 */
async function findGuests(services: Services, clientId: string, eventId: string, lookup: GuestLookup): Promise<GuestDoc[]> {
  if (lookup.guestId) {
    const doc = await findOwnGuest(services, clientId, lookup.guestId);
    return doc && doc.eventId === eventId && !doc.erased ? [doc] : [];
  }
  const filter =
    lookup.barcode !== undefined
      ? { barcode: lookup.barcode, clientId, eventId }
      : { customIdLower: customIdMatch(lookup.customId!), clientId, eventId };
  // Read-only: callers read the documents' ids and fields (toGuestView copies what it shows).
  const found = (await guests(services).find(filter, { limit: 10, readOnly: true })).items;
  // A barcode is any string and matches exactly first; a scanner in keyboard mode adds CR, LF or Tab
  // around what it read, so a value that matched nothing is tried again without them.
  const trimmed = lookup.barcode !== undefined && found.length === 0 ? withoutScannerPadding(lookup.barcode) : undefined;
  if (trimmed === undefined || trimmed === '') return found;
  if (trimmed !== lookup.barcode) {
    const bare = (await guests(services).find({ barcode: trimmed, clientId, eventId }, { limit: 10, readOnly: true })).items;
    if (bare.length > 0) return bare;
  }
  // A barcode stored with white space around it (a padded spreadsheet cell) is matched by what it
  // holds: `PAD-1` scanned or typed finds the guest whose barcode is ` PAD-1 `.
  return (await guests(services).find({ barcodeTrimmed: trimmed, clientId, eventId }, { limit: 10, readOnly: true })).items;
}

/**
 * The guests a request names. Spec, Guest.customId: "usable instead of id": a `guestId` that is
 * no guest id of this event is tried as a customId of it, as `ids` of block and `{id}` of the
 * guest routes are (docs/identifiers.md). A signed ticket's guest id is looked up by id only.
 */
async function findNamedGuests(services: Services, clientId: string, eventId: string, lookup: GuestLookup): Promise<GuestDoc[]> {
  const found = await findGuests(services, clientId, eventId, lookup);
  if (found.length > 0 || lookup.guestId === undefined) return found;
  return findGuests(services, clientId, eventId, { customId: lookup.guestId });
}

function plusOnesLeft(state: GuestState): number {
  const allowed = state.details.plusOnes ?? 0;
  return state.inside ? Math.max(0, allowed - state.admittedPlusOnes) : allowed;
}

/** Record a scan that matched no single guest, once per scan id (a repeated nonce appends nothing). */
async function rejectUnmatched(
  services: Services,
  context: CommandContext,
  eventId: string,
  scan: ScanInfo,
  reason: DoorEvent['data']['reason'],
  lookup: GuestLookup,
  candidates: string[],
): Promise<ScanResponse> {
  const event: DoorEvent = {
    type: 'UnmatchedScanRejected',
    data: { ...scan, eventId, reason, lookup, ...(candidates.length > 0 ? { candidates } : {}) },
  };
  const streamName = `${doorStream(context.tenantId, eventId)}-scan-${scan.scanId}`;
  // A retry with the nonce gets the first answer (its time, `replayed`), as a matched scan's does.
  // Only scans with a nonce that matched no guest read their (one-event) stream first.
  const first = async (): Promise<ScanResponse | undefined> => {
    const [stored] = scan.nonce === undefined ? [] : await services.eventStore.readStream(streamName, { maxCount: 1, personalData: false });
    if (!stored) return undefined;
    const data = stored.data as unknown as DoorEvent['data'];
    return { result: 'rejected', reason: data.reason, scanId: data.scanId, at: data.at, plusOnesAdmitted: 0, plusOnesLeft: 0, replayed: true };
  };
  const replay = await first();
  if (replay) return replay;
  // One stream per scan, written with no_stream: a repeated scan id appends nothing, durably on
  // every store (EventStoreDB deduplicates `any` appends only in memory). The `door-` prefix
  // keeps them in the guests projection.
  const result = await services.eventStore.append(
    streamName,
    [{ id: scan.scanId, type: event.type, data: event.data as unknown as Record<string, unknown>, metadata: {
      tenantId: context.tenantId,
      actor: context.actor,
      correlationId: context.correlationId,
      occurredAt: context.now.toISOString(),
      ...(context.requestId ? { requestId: context.requestId } : {}),
    } }],
    'no_stream',
  ).catch(async (error: unknown) => {
    // The same nonce at the same moment from a retrying app: the other request wrote it first.
    if (!(error instanceof ConcurrencyError)) throw error;
    const written = await first();
    if (!written) throw error;
    return written;
  });
  if ('replayed' in result) return result;
  await services.readYourWrites(result.position);
  return { result: 'rejected', reason, scanId: scan.scanId, at: scan.at, plusOnesAdmitted: 0, plusOnesLeft: 0, replayed: false };
}

async function respond(services: Services, guestKey: string, state: GuestState, outcome: ScanOutcome, replayed: boolean): Promise<ScanResponse> {
  const doc = await guests(services).get(guestKey, { readOnly: true });
  return {
    result: outcome.result,
    ...(outcome.reason ? { reason: outcome.reason } : {}),
    // The reason is sealed in the events and the scan's fold leaves it out: the read model's is the one shown.
    ...(outcome.reason === 'blocked' && (state.blockedReason ?? doc?.blockedReason) ? { blockedReason: state.blockedReason ?? doc?.blockedReason } : {}),
    scanId: outcome.scanId,
    at: outcome.at,
    ...(doc ? { guest: toGuestView(doc) } : {}),
    plusOnesAdmitted: outcome.plusOnesAdmitted,
    plusOnesLeft: plusOnesLeft(state),
    replayed,
  };
}

/** A door scan: check a guest (and plus ones) in, or check them out. */
export async function scan(
  services: Services,
  context: CommandContext,
  eventId: string,
  request: ScanRequest,
  direction: 'in' | 'out',
): Promise<ScanResponse> {
  const checkinEvent = await getEvent(services, context.tenantId, eventId);
  // `force` overrides what bars a check-in; a check-out has nothing to override, so it is ignored there.
  if (request.force && direction === 'in') await checkMayForce(services, context);
  const info = await scanInfo(services, context, eventId, request);
  // Issue 16: a signed ticket names its guest; its signature is checked against the event's keys
  // (in memory). A code that only looks like one may still be a customer's own barcode. A retired
  // key is judged at the scan time (an offline scan before the event's end, sent after it, counts).
  const ticket =
    request.barcode !== undefined && looksLikeTicket(request.barcode)
      ? await checkTicket(services, context.tenantId, checkinEvent, request.barcode, new Date(info.at))
      : undefined;
  const nonceKey = scanNonceKey(direction, info);
  const found = ticket?.valid
    ? await findGuests(services, context.tenantId, eventId, { guestId: ticket.guestId })
    : await findNamedGuests(services, context.tenantId, eventId, request);
  if (found.length !== 1) {
    // A genuine ticket that names no guest of the event: its guest was erased, and its ticket with it.
    const reason =
      found.length > 1 ? 'ambiguous' : ticket?.valid ? 'revoked' : ticket ? 'invalid_signature' : 'not_found';
    const lookup = lookupOf(request);
    // The nonce's scan id hashes what was looked up, as a matched scan's hashes the guest: another
    // device's unmatched scan with the same nonce is a scan of its own, not a retry of this one.
    const unmatched = request.nonce === undefined ? info : { ...info, scanId: scanIdFor(context, eventId, request.nonce, `lookup\u0000${JSON.stringify(lookup)}\u0000${nonceKey}`) };
    return rejectUnmatched(services, context, eventId, unmatched, reason, lookup, found.map(guestIdOf));
  }
  const guestKey = found[0]!._id;
  const guestScan = request.nonce === undefined ? info : { ...info, scanId: scanIdFor(context, eventId, request.nonce, `${guestKey}\u0000${nonceKey}`) };
  const command =
    direction === 'in'
      ? {
          type: 'CheckIn' as const,
          scan: guestScan,
          force: request.force ?? false,
          recordedAt: context.now.toISOString(),
          ...(request.plusOnes !== undefined ? { plusOnes: request.plusOnes } : {}),
          ...(ticket?.valid ? { ticketSerial: ticket.serial } : {}),
          ...(found[0]!.blockedReason !== undefined ? { blockedReason: found[0]!.blockedReason } : {}),
        }
      : { type: 'CheckOut' as const, scan: guestScan };
  const result = await handleCommand(services.eventStore, guestDecider, guestStreamOfKey(guestKey), command, context, {
    eventIds: () => guestScan.scanId,
    maxAttempts: scanAttempts,
    // A scan decides on plus-ones, blocks, validity and whether the guest is inside; the answer's
    // guest comes from the read model: the guest's personal fields are not opened for it.
    personalData: false,
  });
  await services.readYourWrites(result.position);
  const outcome = nonceKey ? result.state.nonces[nonceKey] : undefined;
  if (result.events.length === 0 && outcome) return respond(services, guestKey, result.state, outcome, true);
  const event = result.events[0]!;
  const data = event.data as { scanId: string; at: string; plusOnesAdmitted?: number; reason?: RejectionReason };
  const fresh: ScanOutcome = {
    scanId: data.scanId,
    at: data.at,
    result: event.type === 'GuestAdmitted' ? 'admitted' : event.type === 'GuestDischarged' ? 'discharged' : 'rejected',
    ...(data.reason ? { reason: data.reason } : {}),
    plusOnesAdmitted: data.plusOnesAdmitted ?? 0,
  };
  return respond(services, guestKey, result.state, fresh, false);
}

const lookupOf = (request: GuestLookup): GuestLookup =>
  request.guestId ? { guestId: request.guestId } : request.barcode !== undefined ? { barcode: request.barcode } : { customId: request.customId! };

/**
 * Undo a check-in within the undo window, named by scan id or nonce, or by the guest (guestId or
 * customId: that guest's last check-in); the annulment is itself an event.
 */
export async function undoCheckIn(
  services: Services,
  context: CommandContext,
  eventId: string,
  request: { scanId?: string; nonce?: string; guestId?: string; customId?: string },
): Promise<{ annulled: string; guest: GuestView }> {
  await getEvent(services, context.tenantId, eventId);
  if (request.guestId !== undefined || request.customId !== undefined) return undoLatest(services, context, eventId, request);
  const scanDoc = request.scanId !== undefined ? await scans(services).get(request.scanId) : await admissionByNonce(services, context, eventId, request.nonce!);
  const guest = scanDoc?.guestId && scanDoc.clientId === context.tenantId ? await findOwnGuest(services, context.tenantId, scanDoc.guestId) : null;
  if (!guest || guest.erased || scanDoc!.eventId !== eventId) {
    throw new DomainError('not_found', 'no check-in with this scan id or nonce', { code: 'check_in_not_found' });
  }
  const scanId = scanDoc!._id;
  const result = await handleCommand(services.eventStore, guestDecider, guestStreamOf(guest), {
    type: 'AnnulCheckIn',
    scanId,
    now: context.now.toISOString(),
    undoWindowMs,
    annulledBy: context.actor.id,
  }, context);
  await services.readYourWrites(result.position);
  const doc = await guests(services).get(guest._id);
  if (!doc) throw readModelsBehind(`the undo of scan ${scanId}`);
  return { annulled: scanId, guest: toGuestView(doc) };
}

type ScanRef = { _id: string; guestId?: string; eventId: string; clientId: string };
const scans = (services: Services) => services.readStore.collection<ScanRef>('scans');

/**
 * The admission a nonce names. Its scan id hashes the guest (scanIdFor), so it is found by the
 * nonce: two guests admitted with one nonce (two devices numbering alike) are told apart only by scan id.
 */
async function admissionByNonce(services: Services, context: CommandContext, eventId: string, nonce: string): Promise<ScanRef | null> {
  const found = (await scans(services).find({ nonce, eventId, clientId: context.tenantId, result: 'admitted' }, { limit: 2, readOnly: true })).items;
  if (found.length > 1) {
    throw new DomainError('conflict', 'several check-ins carry this nonce (scanned by devices that number alike): undo by scanId', {
      code: 'ambiguous_nonce',
      errors: [{ path: 'nonce', message: 'names more than one check-in: send the scanId instead' }],
    });
  }
  return found[0] ?? null;
}

async function undoLatest(
  services: Services,
  context: CommandContext,
  eventId: string,
  lookup: GuestLookup,
): Promise<{ annulled: string; guest: GuestView }> {
  const [found] = await findNamedGuests(services, context.tenantId, eventId, lookup);
  if (!found) throw new DomainError('not_found', 'no guest of this event has this id or customId');
  const result = await handleCommand(services.eventStore, guestDecider, guestStreamOf(found), {
    type: 'AnnulCheckIn',
    latest: true,
    now: context.now.toISOString(),
    undoWindowMs,
    annulledBy: context.actor.id,
  }, context);
  await services.readYourWrites(result.position);
  const doc = await guests(services).get(found._id);
  if (!doc) throw readModelsBehind('the undo');
  const annulled = result.events.find((e) => e.type === 'GuestAdmissionAnnulled') as { data: { scanId: string } } | undefined;
  return { annulled: annulled!.data.scanId, guest: toGuestView(doc) };
}

/** Block or unblock guests named by id, customId or barcode; all are checked before any is changed. */
export async function setBlocked(
  services: Services,
  context: CommandContext,
  eventId: string,
  request: { ids?: string[]; customIds?: string[]; barcodes?: string[]; reason?: string },
  blocked: boolean,
): Promise<GuestView[]> {
  await getEvent(services, context.tenantId, eventId);
  const errors: { path: string; message: string }[] = [];
  const targets = new Set<string>(); // the guests' storage keys (document ids)
  // Spec, Guest.customId: "usable instead of id": an id that is no guest's id of this event is tried as a customId.
  for (const [i, id] of (request.ids ?? []).entries()) {
    const doc = await findGuestByIdOrCustomId(services, context.tenantId, id, eventId).catch((error: unknown) => {
      if (error instanceof DomainError && error.code === 'not_found') return null;
      throw error;
    });
    if (!doc) errors.push({ path: `ids.${i}`, message: 'no guest of this event has this id or customId' });
    else targets.add(doc._id);
  }
  for (const [i, customId] of (request.customIds ?? []).entries()) {
    const [doc] = await findGuests(services, context.tenantId, eventId, { customId });
    if (!doc) errors.push({ path: `customIds.${i}`, message: 'no guest of this event has this customId' });
    else targets.add(doc._id);
  }
  for (const [i, barcode] of (request.barcodes ?? []).entries()) {
    const docs = await findGuests(services, context.tenantId, eventId, { barcode });
    if (docs.length === 0) errors.push({ path: `barcodes.${i}`, message: 'no guest of this event has this barcode' });
    for (const doc of docs) targets.add(doc._id);
  }
  // Spec, Errors: 404 for a guest not found or not owned by the caller; `errors` names each one.
  if (errors.length > 0) throw new DomainError('not_found', 'some guests were not found; nothing was changed: see errors', { errors });
  const at = context.now.toISOString();
  const items: BatchItem[] = [...targets].map((key) => ({
    streamName: guestStreamOfKey(key),
    decider: guestDecider,
    command: blocked ? { type: 'Block', reason: request.reason ?? '', at } : { type: 'Unblock', at },
  }));
  const results = await handleCommands(services.eventStore, items, context);
  await services.readYourWrites(lastPosition(results));
  const docs = await Promise.all([...targets].map((id) => guests(services).get(id)));
  if (docs.some((d) => d === null)) throw readModelsBehind(`the change of ${docs.length} guests`);
  return (docs as GuestDoc[]).map(toGuestView);
}
