/**
 * `npm run admin -- hold-pending-sends [--dry-run]`: after a restore, before the service starts,
 * fail as `outcome_unknown` every invitation email the restored copy shows unsettled
 * (docs/operations.md, Backups and restores).
 *
 * An invitation requested before the copy was taken and sent after it is pending again in the
 * copy: the copy cannot know the email went out. SendGrid takes no idempotency key, so sending it
 * again may email the guest twice. The service sends at most once (docs/invitations.md): a send
 * whose outcome it does not know fails as `outcome_unknown`, and the organizer (who can check the
 * provider's activity) decides whether to send again. This command does that for the whole copy.
 *
 * It reads the event store, not the read model (which may be behind the copy's events): the
 * invitation events and the guests' InvitationRequested, through a subscription filtered on those
 * types, page by page up to the head it had when the command started. An invitation is pending
 * when it was requested (on the guest or on its own stream) and its stream has neither
 * SendSucceeded nor SendFailed. Each is settled through the invitation decider
 * (HoldAfterRestore), which reads its stream again: SendFailed `outcome_unknown`, which the read
 * model shows as failed and the webhook dispatcher sends as comms.failed, like any other. A request
 * whose SendRequested the copy lacks (the send worker had not taken it from the bus yet) is recorded
 * and failed at once, so the request coming again from the restored bus finds it failed.
 * Idempotent: a second run holds nothing.
 */
import type { StoredEvent } from '../adapters/eventstore/port.js';
import { invitationDecider, invitationStream, type InvitationEvent, type InvitationIds, type InvitationState } from '../domain/invitation.js';
import { newId } from '../shared/ids.js';
import { eventsToHead } from './events-to-head.js';
import { handleCommand, type CommandContext } from './handle-command.js';
import type { Services } from './services.js';

export interface HoldOptions {
  /** List what would be held; change nothing. */
  dryRun?: boolean;
  /** Events read per page (default 500). */
  pageSize?: number;
  /** Called after each page of events and every 100 invitations checked (progress lines). */
  onProgress?: (progress: HoldProgress) => void;
}

export interface HoldProgress {
  phase: 'reading invitation events' | 'holding pending sends';
  /** Reading: the position read through, and the last matching position when the command started. */
  position?: number;
  head?: number;
  invitationEvents: number;
  /** Invitations requested and not settled so far in the events read. */
  pending: number;
  checked: number;
  held: number;
}

export interface HeldInvitation {
  attendeeInvitationId: string;
  clientId: string;
  attendeeId: string;
  eventId: string;
  templateId: string;
  /** What the copy showed: `none` is a request the send worker had not recorded yet. */
  status: 'none' | 'requested' | 'retrying' | 'sending';
  /** Attempts the copy records: 0 means no attempt had started when the copy was taken. */
  attempts: number;
}

export interface HoldResult {
  dryRun: boolean;
  /** Invitation events (and InvitationRequested) read from the event store. */
  invitationEvents: number;
  /** Pending invitations checked against their streams. */
  checked: number;
  /** Invitations failed as outcome_unknown now (with --dry-run: that would be). */
  held: number;
  invitations: HeldInvitation[];
}

const eventTypes = ['InvitationRequested', 'SendRequested', 'SendSucceeded', 'SendFailed'];

type Pending = { ids: InvitationIds; fromGuest: boolean };

export async function holdPendingSends(services: Services, options: HoldOptions = {}): Promise<HoldResult> {
  const dryRun = options.dryRun === true;
  const progress: HoldProgress = { phase: 'reading invitation events', invitationEvents: 0, pending: 0, checked: 0, held: 0 };
  // Only the unsettled ones are kept: an invitation leaves the map when its outcome is read.
  const pending = new Map<string, Pending>();

  // 1. The requests and outcomes, page by page (by type only: EventStoreDB filters types on the server).
  for await (const page of eventsToHead(services.eventStore, { eventTypes }, options.pageSize)) {
    progress.head = page.head;
    for (const event of page.events) {
      progress.invitationEvents++;
      note(pending, event);
    }
    progress.pending = pending.size;
    progress.position = page.position;
    options.onProgress?.({ ...progress });
  }

  // 2. Each pending one, decided on its stream as it is now.
  progress.phase = 'holding pending sends';
  const result: HoldResult = { dryRun, invitationEvents: progress.invitationEvents, checked: 0, held: 0, invitations: [] };
  const now = services.clock.now();
  for (const [invitationId, { ids, fromGuest }] of pending) {
    result.checked = ++progress.checked;
    if (progress.checked % 100 === 0) options.onProgress?.({ ...progress });
    const state = await stateOf(services, invitationId);
    const command = { type: 'HoldAfterRestore' as const, at: now.toISOString(), ...(state.status === 'none' && fromGuest ? { ids } : {}) };
    if (state.status === 'none' && !fromGuest) continue;
    if (invitationDecider.decide(command, state).length === 0) continue;
    if (!dryRun) {
      const context: CommandContext = {
        tenantId: ids.clientId,
        actor: { type: 'system', id: 'hold-pending-sends' },
        correlationId: ids.correlationId ?? newId(),
        now,
      };
      // No personal field decides (the `to` of an attempt stays sealed).
      const decided = await handleCommand(services.eventStore, invitationDecider, invitationStream(invitationId), command, context, { personalData: false });
      if (!decided.events.some((e) => e.type === 'SendFailed')) continue; // settled meanwhile
    }
    const { attendeeInvitationId, clientId, attendeeId, eventId, templateId } = state.status === 'none' ? ids : state.ids;
    result.invitations.push({
      attendeeInvitationId,
      clientId,
      attendeeId,
      eventId,
      templateId,
      status: state.status as HeldInvitation['status'],
      attempts: state.status === 'none' ? 0 : state.attempts,
    });
    result.held = ++progress.held;
  }
  if (pending.size > 0) options.onProgress?.({ ...progress });
  return result;
}

/** One event of the filtered read: a request adds the invitation, an outcome removes it. */
function note(pending: Map<string, Pending>, event: StoredEvent): void {
  const data = event.data as Record<string, unknown>;
  const id = typeof data.attendeeInvitationId === 'string' ? data.attendeeInvitationId : undefined;
  if (!id) return;
  if (event.type === 'InvitationRequested' && event.streamName.startsWith('guest-')) {
    if (pending.has(id)) return;
    const d = data as { guestId: string; eventId: string; templateId: string; guestIdAsSent?: string; templateIdAsSent?: string; correlationId?: string };
    const ids: InvitationIds = {
      attendeeInvitationId: id,
      clientId: event.metadata.tenantId,
      attendeeId: d.guestId,
      eventId: d.eventId,
      templateId: d.templateId,
      ...(d.guestIdAsSent ? { attendeeIdAsSent: d.guestIdAsSent } : {}),
      ...(d.templateIdAsSent ? { templateIdAsSent: d.templateIdAsSent } : {}),
      ...(d.correlationId ? { correlationId: d.correlationId } : {}),
    };
    pending.set(id, { ids, fromGuest: true });
    return;
  }
  if (!event.streamName.startsWith('invitation-')) return;
  if (event.type === 'SendRequested') {
    const { requestedAt: _r, ...ids } = (event as unknown as Extract<InvitationEvent, { type: 'SendRequested' }>).data;
    pending.set(id, { ids, fromGuest: pending.get(id)?.fromGuest ?? false });
  } else {
    pending.delete(id);
  }
}

async function stateOf(services: Services, invitationId: string): Promise<InvitationState> {
  let state = invitationDecider.initialState();
  for (const event of await services.eventStore.readStream(invitationStream(invitationId), { personalData: false })) {
    state = invitationDecider.evolve(state, event as never);
  }
  return state;
}
