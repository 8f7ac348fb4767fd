import { DomainError } from '../domain/decider.js';
import { guestDecider, type GuestState } from '../domain/guest.js';
import { guestIdOf, guestStreamOf, type GuestDoc } from '../projections/guests.js';
import { readTicketKeys, rotateTicketKey, ticketKeyViews, ticketSigner, type TicketKeyView } from '../tickets/event-keys.js';
import { getEvent } from './events.js';
import { findGuestByIdOrCustomId } from './guest-lookup.js';
import { guests } from './guests.js';
import { handleCommand, type CommandContext } from './handle-command.js';
import type { Services } from './services.js';

/** Issue 16: an event's ticket keys (public halves only) and a guest's ticket. Docs: docs/tickets.md. */

export interface TicketKeysView {
  eventId: string;
  keys: TicketKeyView[];
}

export async function getTicketKeys(services: Services, clientId: string, eventId: string): Promise<TicketKeysView> {
  const event = await getEvent(services, clientId, eventId);
  return { eventId: event.id, keys: ticketKeyViews(await readTicketKeys(services.eventStore, clientId, event.id), event) };
}

export async function rotateTicketKeys(services: Services, context: CommandContext, eventId: string): Promise<TicketKeysView> {
  const event = await getEvent(services, context.tenantId, eventId);
  return { eventId: event.id, keys: ticketKeyViews(await rotateTicketKey(services, context, event.id), event) };
}

export interface TicketView {
  guestId: string;
  eventId: string;
  /** What the guest shows at the door; what {{qrCode}} draws. */
  code: string;
  /** `barcode`: the guest's own barcode; `signed`: a ticket the service issued and signed. */
  kind: 'barcode' | 'signed';
  keyId?: string;
  serial?: number;
  issuedAt?: string;
}

function ticketView(doc: GuestDoc): TicketView {
  // An empty barcode is no code: such a guest was issued a signed ticket.
  if (doc.barcode) return { guestId: guestIdOf(doc), eventId: doc.eventId, code: doc.barcode, kind: 'barcode' };
  // An erased guest shows no code: its ticket admits no one (docs/personal-data.md, Erasure), and
  // no new one can be issued (its reissue answers guest_erased), so the message offers none.
  if (doc.erased) {
    throw new DomainError('not_found', "the guest's personal data was erased: it has no ticket, and none can be issued", { code: 'no_ticket' });
  }
  if (doc.ticketCode === undefined) {
    throw new DomainError('not_found', 'the guest has no barcode and no valid ticket; reissue one with POST .../ticket/reissue', { code: 'no_ticket' });
  }
  return {
    guestId: guestIdOf(doc),
    eventId: doc.eventId,
    code: doc.ticketCode,
    kind: 'signed',
    ...(doc.ticketKeyId ? { keyId: doc.ticketKeyId } : {}),
    ...(doc.ticketSerial !== undefined ? { serial: doc.ticketSerial } : {}),
    ...(doc.ticketIssuedAt ? { issuedAt: doc.ticketIssuedAt } : {}),
  };
}

export async function getTicket(services: Services, clientId: string, idOrCustomId: string, eventId?: string): Promise<TicketView> {
  return ticketView(await findGuestByIdOrCustomId(services, clientId, idOrCustomId, eventId));
}

async function guestState(services: Services, doc: GuestDoc): Promise<GuestState> {
  let state = guestDecider.initialState();
  for (const event of await services.eventStore.readStream(guestStreamOf(doc))) state = guestDecider.evolve(state, event as never);
  return state;
}

/**
 * A new signed ticket for the guest: the valid one (if any) is revoked, so scanning it answers
 * `revoked`. A guest with its own barcode that never had a signed ticket is refused (409): its
 * code is the barcode, changed by updating the guest.
 */
export async function reissueTicket(
  services: Services,
  context: CommandContext,
  idOrCustomId: string,
  eventId?: string,
): Promise<TicketView> {
  const doc = await findGuestByIdOrCustomId(services, context.tenantId, idOrCustomId, eventId);
  const state = await guestState(services, doc);
  if (state.details.barcode !== undefined && state.ticketSerial === undefined) {
    throw new DomainError('conflict', 'the guest has its own barcode and no signed ticket; change the barcode by updating the guest', {
      code: 'guest_has_barcode',
    });
  }
  const signer = await ticketSigner(services, context, doc.eventId);
  const ticket = signer.issue(guestIdOf(doc), (state.ticketSerial ?? 0) + 1);
  const result = await handleCommand(services.eventStore, guestDecider, guestStreamOf(doc), {
    type: 'ReissueTicket',
    ticket,
    at: context.now.toISOString(),
    by: context.actor.id,
  }, context);
  await services.readYourWrites(result.position);
  const fresh = await guests(services).get(doc._id);
  return { guestId: guestIdOf(doc), eventId: doc.eventId, code: ticket.code, kind: 'signed', keyId: ticket.keyId, serial: ticket.serial, issuedAt: fresh?.ticketIssuedAt ?? ticket.at };
}

/** The guest's signed ticket stops admitting (reason `revoked`); no new one is issued. */
export async function revokeTicket(services: Services, context: CommandContext, idOrCustomId: string, eventId?: string): Promise<void> {
  const doc = await findGuestByIdOrCustomId(services, context.tenantId, idOrCustomId, eventId);
  const result = await handleCommand(services.eventStore, guestDecider, guestStreamOf(doc), {
    type: 'RevokeTicket',
    at: context.now.toISOString(),
    by: context.actor.id,
  }, context);
  await services.readYourWrites(result.position);
}

/** One guest's code for an offline scanner's sync (GET /checkin/v1/api/event/{id}/tickets). */
export interface TicketSyncItem {
  guestId: string;
  /** `signed`: only the ticket with this `serial` admits; `barcode`: the guest's own barcode; `none`: no code admits (revoked). */
  kind: 'signed' | 'barcode' | 'none';
  code?: string;
  keyId?: string;
  serial?: number;
  /** `signed` only: the guest's own barcode, which admits too (a barcode given after the ticket was issued). */
  barcode?: string;
  /** The last change of the guest (ticket, block, check-in, details): pass the newest one as `changedSince` next time. */
  updated: string;
}

function syncItem(doc: GuestDoc): TicketSyncItem {
  const base = { guestId: guestIdOf(doc), updated: doc.updated };
  // An erased guest: `none`, so an offline scanner refuses its ticket as the door does.
  if (doc.erased) return { ...base, kind: 'none' };
  if (doc.ticketCode !== undefined) {
    // Both codes admit at the door, and the invitation draws the barcode: an offline scanner needs both.
    return {
      ...base,
      kind: 'signed',
      code: doc.ticketCode,
      ...(doc.ticketKeyId ? { keyId: doc.ticketKeyId } : {}),
      ...(doc.ticketSerial !== undefined ? { serial: doc.ticketSerial } : {}),
      ...(doc.barcode ? { barcode: doc.barcode } : {}),
    };
  }
  if (doc.barcode) return { ...base, kind: 'barcode', code: doc.barcode };
  return { ...base, kind: 'none' };
}

/**
 * Every guest's current code, oldest change first: what an offline scanner needs to refuse a
 * ticket revoked or reissued since its last sync (a valid signature cannot tell). With
 * `changedSince`, only guests changed after it (revoked and reissued tickets included).
 */
export async function listTickets(
  services: Services,
  clientId: string,
  eventId: string,
  query: { limit: number; cursor?: string; changedSince?: string },
): Promise<{ items: TicketSyncItem[]; nextCursor?: string }> {
  const event = await getEvent(services, clientId, eventId);
  const filter = { clientId, eventId: event.id, ...(query.changedSince ? { updated: { $gt: query.changedSince } } : {}) };
  const page = await guests(services).find(filter, {
    sort: { updated: 1 },
    limit: query.limit,
    readOnly: true,
    ...(query.cursor ? { cursor: query.cursor } : {}),
  });
  return { items: page.items.map(syncItem), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) };
}
