import type { LinkPolicy } from '../comms/link-safety.js';
import { DomainError } from '../domain/decider.js';
import { emailAddressProblem } from '../domain/email-address.js';
import { guestDecider } from '../domain/guest.js';
import { invitationDecider, invitationStream, suppressingEvents, type ProviderReport } from '../domain/invitation.js';
import { derivedId } from '../domain/webhook.js';
import { guestIdOf, guestStreamOf, shownGuestId, type GuestDoc } from '../projections/guests.js';
import { guidAsSent } from '../shared/ids.js';
import type { InvitationDoc } from '../projections/invitations.js';
import { findGuestByIdOrCustomId } from './guest-lookup.js';
import { handleCommand, handleCommands, lastPosition, repeatableId, type BatchItem, type CommandContext } from './handle-command.js';
import type { Services } from './services.js';
import { assertSafeLinks, getTemplate } from './templates.js';
import { addressKey, suppressionOf } from './suppressions.js';

const invitations = (services: Services) => services.readStore.collection<InvitationDoc>('invitations');

/** The invitation as the API shows it. */
export type InvitationView = Omit<InvitationDoc, '_id' | 'clientId' | 'attendeeIdAsSent' | 'templateIdAsSent'> & { attendeeInvitationId: string };

export function toInvitationView(doc: InvitationDoc): InvitationView {
  const { _id, clientId: _c, attendeeIdAsSent, templateIdAsSent, ...rest } = doc;
  // The guest's and template's ids as their creators sent them (docs/identifiers.md).
  return { attendeeInvitationId: _id, ...rest, attendeeId: attendeeIdAsSent ?? rest.attendeeId, templateId: templateIdAsSent ?? rest.templateId };
}

export interface SendRequest {
  templateId: string;
  attendeeIds: string[];
  correlationId?: string;
}

/**
 * POST /comms/v1/api/comms/send: email a template to guests of its event now, each as a
 * new invitation (also a guest who got this template before). All or nothing: every guest
 * must be the client's and of the template's event (404), have an email (400), and not be
 * a recipient the provider reported unreachable (422 previous_send_permanently_failed);
 * the template's links must pass the spam check (422 spam_check_failed).
 */
export async function requestSends(services: Services, linkPolicy: LinkPolicy, context: CommandContext, request: SendRequest) {
  const template = await getTemplate(services, context.tenantId, request.templateId);
  // Spec, Guest.customId: "usable instead of id". The template's event says which guest a customId names.
  const lookups = new Map(
    [...new Set(request.attendeeIds)].map((id) => [id, findGuestOrNull(services, context.tenantId, id, template.eventId)] as const),
  );
  // Each guest as the request names it: `errors` point at attendeeIds.<index in the request>, repeats included.
  const named = await Promise.all(request.attendeeIds.map((id) => lookups.get(id)!));
  const notFound = named.flatMap((guest, i) =>
    guest ? [] : [{ path: `attendeeIds.${i}`, message: 'no guest of the template’s event has this id or customId' }],
  );
  if (notFound.length > 0) {
    const missing = [...new Set(request.attendeeIds.filter((_, i) => named[i] === null))];
    throw new DomainError('not_found', `guest(s) not found in the template's event: ${missing.join(', ')}; nothing was sent: see errors`, { errors: notFound });
  }
  const guests = named as GuestDoc[];
  const withoutEmail = guests.flatMap((g, i) => {
    const invalid = g.email ? emailAddressProblem(g.email) : undefined;
    const problem = !g.email ? 'has no email address' : invalid ? `has an email that ${invalid.replace(/^must be/, 'is not')}` : undefined;
    return problem ? [{ path: `attendeeIds.${i}`, message: `guest ${shownGuestId(g)} ${problem}` }] : [];
  });
  if (withoutEmail.length > 0) throw new DomainError('validation_error', 'every guest needs an email address: see errors', { errors: withoutEmail });
  await assertReachable(services, context.tenantId, guests);
  // One invitation per guest, also when the request names a guest twice, or by both its id and its customId.
  const recipients = [...new Map(guests.map((g) => [guestIdOf(g), g])).values()];
  assertSafeLinks(template.html, linkPolicy);

  // Under an Idempotency-Key a retry names the same invitations, and finds those already requested
  // (the batch may have completed after the first attempt failed): no email goes out twice.
  const planned = recipients.map((guest) => ({ guest, invitationId: repeatableId(context, 'invitation', guestIdOf(guest)) }));
  const items: BatchItem[] = planned.map(({ guest, invitationId }) => ({
    streamName: guestStreamOf(guest),
    decider: guestDecider,
    ...(context.idempotencySeed ? { eventIds: (index: number) => derivedId('invitation-requested', invitationId, String(index)) } : {}),
    command: {
      type: 'RequestInvitation',
      // The lowercase key; the spelling its creator sent (template.id) is what the webhook shows.
      templateId: template.id.toLowerCase(),
      ...(guidAsSent(template.id) ? { templateIdAsSent: template.id } : {}),
      invitationId,
      ...(request.correlationId ? { correlationId: request.correlationId } : {}),
    },
  }));
  const results = await handleCommands(services.eventStore, items, context);
  await services.readYourWrites(lastPosition(results));
  return {
    templateId: template.id,
    invitations: planned.map(({ guest, invitationId }) => ({ attendeeId: shownGuestId(guest), attendeeInvitationId: invitationId, status: 'requested' as const })),
  };
}

/** The caller's guest named by its id or its customId (within `eventId` when given), or null. */
async function findGuestOrNull(services: Services, clientId: string, idOrCustomId: string, eventId?: string): Promise<GuestDoc | null> {
  try {
    return await findGuestByIdOrCustomId(services, clientId, idOrCustomId, eventId);
  } catch (error) {
    if (error instanceof DomainError && error.code === 'not_found') return null;
    throw error;
  }
}

/** Spec: 422 previous_send_permanently_failed, "recipient cannot be emailed (bounced, dropped, spam-reported or unsubscribed)". */
async function assertReachable(services: Services, clientId: string, guests: GuestDoc[]): Promise<void> {
  const emails = [...new Set(guests.map((g) => g.email!))];
  const reports = new Map(await Promise.all(emails.map(async (email) => [email, await suppressionOf(services, clientId, email)] as const)));
  const errors = guests.flatMap((guest, i) => {
    const report = reports.get(guest.email!);
    return report ? [{ path: `attendeeIds.${i}`, message: `${guest.email} was reported ${report.reason} on ${report.at}` }] : [];
  });
  if (errors.length === 0) return;
  throw new DomainError('unprocessable', 'some recipients cannot be emailed: a previous send failed permanently; see errors', {
    code: 'previous_send_permanently_failed',
    errors,
  });
}

export async function getInvitation(services: Services, clientId: string, invitationId: string): Promise<InvitationView> {
  const doc = await invitations(services).get(invitationId.toLowerCase());
  if (!doc || doc.clientId !== clientId) throw new DomainError('not_found', 'invitation not found');
  return toInvitationView(doc);
}

export interface InvitationQuery {
  eventId?: string;
  attendeeId?: string;
  templateId?: string;
  status?: InvitationDoc['status'];
  limit: number;
  cursor?: string;
}

/** The client's invitations, newest first, filtered by event, guest, template or status. */
export async function listInvitations(services: Services, clientId: string, query: InvitationQuery) {
  const { limit, cursor, ...filters } = query;
  if (filters.attendeeId !== undefined) {
    // A guest id or a customId (spec: usable instead of id); one that names no guest of the caller matches nothing.
    const guest = await findGuestOrNull(services, clientId, filters.attendeeId, filters.eventId);
    if (!guest) return { items: [] };
    filters.attendeeId = guestIdOf(guest);
  }
  const filter = { clientId, ...Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== undefined)) };
  const page = await invitations(services).find(filter, { sort: { requestedAt: -1 }, limit, ...(cursor ? { cursor } : {}) });
  return { items: page.items.map(toInvitationView), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) };
}

/**
 * Records the provider's reports on their invitations (comms.delivered, comms.bounced, ...).
 * Reports about unknown invitations (another service's mail, or a forged id) are counted
 * and ignored.
 */
/**
 * The client of an invitation, or undefined when this service never requested it. The read model
 * may not have it yet (it lags the event store; a rebuild refills it), and a report answered as
 * unknown is never posted again, so the invitation's stream decides when the read model lacks it.
 */
async function invitationClient(services: Services, attendeeInvitationId: string): Promise<string | undefined> {
  const doc = await invitations(services).get(attendeeInvitationId);
  if (doc) return doc.clientId;
  let state = invitationDecider.initialState();
  for (const event of await services.eventStore.readStream(invitationStream(attendeeInvitationId), { personalData: false })) {
    state = invitationDecider.evolve(state, event as never);
  }
  return state.status === 'none' ? undefined : state.ids.clientId;
}

export async function recordProviderReports(services: Services, reports: ProviderReport[]): Promise<{ recorded: number; ignored: number }> {
  let recorded = 0;
  let ignored = 0;
  for (const report of reports) {
    const clientId = await invitationClient(services, report.attendeeInvitationId);
    if (!clientId) {
      ignored += 1;
      continue;
    }
    const { attendeeInvitationId, ...fields } = report;
    // A report that suppresses the address names it by its keyed hash too, which outlives the guest's erasure (docs/personal-data.md).
    const suppresses = suppressingEvents.includes(report.event) && report.suppresses !== false && report.email !== '';
    const emailKey = suppresses ? { emailKey: await addressKey(services, clientId, report.email) } : {};
    const context: CommandContext = {
      tenantId: clientId,
      actor: { type: 'system', id: 'provider-events' },
      correlationId: attendeeInvitationId,
      now: services.clock.now(),
    };
    const result = await handleCommand(
      services.eventStore,
      invitationDecider,
      invitationStream(attendeeInvitationId),
      { type: 'RecordProviderEvent', ...fields, ...emailKey },
      context,
      { eventIds: (index) => derivedId('provider-event', report.providerEventId, String(index)) },
    );
    recorded += result.events.length;
  }
  return { recorded, ignored };
}
