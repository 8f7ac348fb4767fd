/**
 * The invitation-to-arrival funnel (GET /comms/v1/api/comms/funnel; docs/analytics.md): what
 * happened to the invitations of an event (or of one template) joined with who came, per guest.
 */
import { DomainError } from '../domain/decider.js';
import type { ProviderEventType } from '../domain/invitation.js';
import { FUNNEL_ARRIVALS, FUNNEL_INVITATIONS, type FunnelArrivalDoc, type FunnelInvitationDoc } from '../projections/funnel.js';
import { getEvent } from './events.js';
import { findTemplateDoc, getTemplate, templates } from './templates.js';
import type { Services } from './services.js';

export interface FunnelQuery {
  eventId?: string;
  templateId?: string;
}

/** Every count is of distinct guests; rates are fractions (0..1) or null when the base is 0. */
export interface FunnelFigures {
  invited: number;
  sent: number;
  failed: number;
  delivered: number;
  opened: number;
  bounced: number;
  dropped: number;
  spamReported: number;
  unsubscribed: number;
  checkedIn: number;
  rates: {
    sent: number | null;
    delivered: number | null;
    opened: number | null;
    bounced: number | null;
    checkedIn: number | null;
    checkedInAfterOpen: number | null;
  };
  /** Median of (first arrival - first send) over guests who arrived after their invitation was sent. */
  medianSendToArrivalSeconds: number | null;
}

export interface Funnel {
  eventId: string;
  templateId?: string;
  totals: FunnelFigures;
  byTemplate: (FunnelFigures & { templateId: string; templateName?: string })[];
}

/** One guest's path through the funnel of a group of invitations. */
interface GuestPath {
  firstSentAt?: string;
  failed: boolean;
  provider: Set<ProviderEventType>;
}

export async function invitationFunnel(services: Services, clientId: string, query: FunnelQuery): Promise<Funnel> {
  let eventId = query.eventId;
  if (query.templateId) {
    const template = await getTemplate(services, clientId, query.templateId);
    if (eventId !== undefined && (await getEvent(services, clientId, eventId)).id !== template.eventId) {
      throw new DomainError('not_found', 'template not found in this event');
    }
    eventId = template.eventId;
  }
  const event = await getEvent(services, clientId, eventId!);
  const invitations = services.readStore.collection<FunnelInvitationDoc>(FUNNEL_INVITATIONS);
  const filter = { clientId, eventId: event.id, ...(query.templateId ? { templateId: query.templateId } : {}) };
  const byTemplate = new Map<string, Map<string, GuestPath>>();
  // A row for every template of the event (or the one asked for), zeros for one not sent yet.
  if (query.templateId) byTemplate.set(query.templateId, new Map());
  else {
    for await (const template of templates(services).stream({ clientId, eventId: event.id }, { readOnly: true })) {
      if (template.clientId === clientId) byTemplate.set(template.templateId ?? template._id, new Map());
    }
  }
  const all = new Map<string, GuestPath>();
  for await (const invitation of invitations.stream(filter, { batchSize: 1000, readOnly: true })) {
    if (invitation.clientId !== clientId) continue;
    let guests = byTemplate.get(invitation.templateId);
    if (!guests) byTemplate.set(invitation.templateId, (guests = new Map()));
    addInvitation(guests, invitation);
    addInvitation(all, invitation);
  }
  const arrivals = new Map<string, string>();
  for await (const arrival of services.readStore.collection<FunnelArrivalDoc>(FUNNEL_ARRIVALS).stream({ clientId, eventId: event.id }, { batchSize: 1000, readOnly: true })) {
    const first = [...Object.values(arrival.entries ?? {}), ...(arrival.importedAt ? [arrival.importedAt] : [])].sort()[0];
    if (first && arrival.clientId === clientId) arrivals.set(arrival.guestId ?? arrival._id, first);
  }
  const rows = [];
  for (const [templateId, guests] of [...byTemplate].sort(([a], [b]) => a.localeCompare(b))) {
    const template = await findTemplateDoc(services, clientId, templateId);
    rows.push({ templateId, ...(template ? { templateName: template.name } : {}), ...figuresOf(guests, arrivals) });
  }
  return { eventId: event.id, ...(query.templateId ? { templateId: query.templateId } : {}), totals: figuresOf(all, arrivals), byTemplate: rows };
}

function addInvitation(guests: Map<string, GuestPath>, invitation: FunnelInvitationDoc): void {
  let path = guests.get(invitation.guestId);
  if (!path) guests.set(invitation.guestId, (path = { failed: false, provider: new Set() }));
  if (invitation.sentAt && (!path.firstSentAt || invitation.sentAt < path.firstSentAt)) path.firstSentAt = invitation.sentAt;
  if (invitation.failedAt) path.failed = true;
  for (const event of Object.keys(invitation.provider ?? {})) {
    path.provider.add(event as ProviderEventType);
    // An open, a spam report or an unsubscribe proves the email arrived, also while its delivered
    // is still on its way (SendGrid's reports arrive in any order) or never comes: the guest was
    // delivered, so no rate based on delivered exceeds 1.
    if (PROVE_DELIVERY.has(event)) path.provider.add('delivered');
  }
}

/** Provider reports only an email that reached the mailbox can have. */
const PROVE_DELIVERY: ReadonlySet<string> = new Set<ProviderEventType>(['opened', 'spam_reported', 'unsubscribed']);

const rate = (part: number, whole: number): number | null => (whole === 0 ? null : Math.round((part / whole) * 10_000) / 10_000);

export function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function figuresOf(guests: Map<string, GuestPath>, arrivals: Map<string, string>): FunnelFigures {
  let sent = 0;
  let failed = 0;
  let checkedIn = 0;
  let checkedInAfterOpen = 0;
  const provider: Record<ProviderEventType, number> = { delivered: 0, opened: 0, bounced: 0, dropped: 0, spam_reported: 0, unsubscribed: 0 };
  const delays: number[] = [];
  for (const [guestId, path] of guests) {
    if (path.firstSentAt) sent += 1;
    else if (path.failed) failed += 1;
    for (const event of path.provider) provider[event] += 1;
    const arrivedAt = arrivals.get(guestId);
    if (!arrivedAt) continue;
    checkedIn += 1;
    if (path.provider.has('opened')) checkedInAfterOpen += 1;
    if (path.firstSentAt && arrivedAt >= path.firstSentAt) delays.push((Date.parse(arrivedAt) - Date.parse(path.firstSentAt)) / 1000);
  }
  const invited = guests.size;
  return {
    invited,
    sent,
    failed,
    delivered: provider.delivered,
    opened: provider.opened,
    bounced: provider.bounced,
    dropped: provider.dropped,
    spamReported: provider.spam_reported,
    unsubscribed: provider.unsubscribed,
    checkedIn,
    rates: {
      sent: rate(sent, invited),
      delivered: rate(provider.delivered, sent),
      opened: rate(provider.opened, provider.delivered),
      bounced: rate(provider.bounced, sent),
      checkedIn: rate(checkedIn, invited),
      checkedInAfterOpen: rate(checkedInAfterOpen, provider.opened),
    },
    medianSendToArrivalSeconds: median(delays),
  };
}
