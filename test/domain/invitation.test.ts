import { describe, expect, it } from 'vitest';
import { invitationDecider, type InvitationEvent, type InvitationIds } from '../../src/domain/invitation.js';
import { templateDecider } from '../../src/domain/template.js';
import { deciderSpec } from '../support/decider-spec.js';

const given = deciderSpec(invitationDecider);
const ids: InvitationIds = { attendeeInvitationId: 'i1', clientId: 'c1', attendeeId: 'g1', eventId: 'e1', templateId: 't1', correlationId: 'crm-1' };
const t0 = '2026-11-22T10:00:00.000Z';
const later = (ms: number) => new Date(Date.parse(t0) + ms).toISOString();

const requested: InvitationEvent = { type: 'SendRequested', data: { ...ids, requestedAt: t0 } };
const started = (attempt = 1, at = t0): InvitationEvent => ({
  type: 'SendStarted',
  data: { attendeeInvitationId: 'i1', attempt, to: 'a@example.com', at, leaseUntil: new Date(Date.parse(at) + 60_000).toISOString() },
});
const succeeded: InvitationEvent = {
  type: 'SendSucceeded',
  data: { ...ids, attempt: 1, to: 'a@example.com', provider: 'sendgrid', providerMessageId: 'm1', sentAt: t0, attachedPdf: false },
};
const start = (at = t0, idempotentProvider = false) => ({ type: 'StartAttempt' as const, to: 'a@example.com', at, leaseMs: 60_000, idempotentProvider });

describe('invitation decider: one email per invitation', () => {
  it('records a send request once; a repeated request records nothing', () => {
    given([]).when({ type: 'RequestSend', ids, at: t0 }).then([{ type: 'SendRequested', data: { ...ids } }]);
    given([requested]).when({ type: 'RequestSend', ids, at: t0 }).then([]);
  });

  it('starts the first attempt of a requested invitation, with a lease', () =>
    given([requested]).when(start()).then([{ type: 'SendStarted', data: { attempt: 1, leaseUntil: later(60_000) } }]));

  it('skips (comms.skipped) an invitation already sent: it is never sent twice', () =>
    given([requested, started(), succeeded]).when(start(later(5_000))).then([{ type: 'SendSkipped', data: { ...ids, reason: 'already_sent' } }]));

  it('leaves an attempt alone while its lease runs: another worker is sending it', () =>
    given([requested, started()]).when(start(later(30_000))).then([]));

  it('fails an attempt cut short (lease over, no outcome) as outcome_unknown rather than risk a second email', () =>
    given([requested, started()])
      .when(start(later(61_000)))
      .then([{ type: 'SendFailed', data: { ...ids, code: 'outcome_unknown', permanent: false, attempts: 1 } }]));

  it('repeats an attempt cut short when the provider dedupes by message key (the outbox)', () =>
    given([requested, started()]).when(start(later(61_000), true)).then([{ type: 'SendStarted', data: { attempt: 2 } }]));

  it('records the success of the running attempt only', () => {
    const sent = { type: 'RecordSent' as const, provider: 'sendgrid', providerMessageId: 'm1', at: t0, attachedPdf: false };
    given([requested, started()]).when({ ...sent, attempt: 1 }).then([{ type: 'SendSucceeded', data: { ...ids, attempt: 1, providerMessageId: 'm1' } }]);
    given([requested, started()]).when({ ...sent, attempt: 2 }).then([]);
  });

  it('schedules a retry for a transient failure, and retries only when it is due', () => {
    const failed = { type: 'RecordAttemptFailed' as const, attempt: 1, code: 'provider_unavailable' as const, error: '503', permanent: false, at: t0 };
    given([requested, started()]).when({ ...failed, retryAt: later(2_000) }).then([{ type: 'SendAttemptFailed', data: { retryAt: later(2_000) } }]);
    const retrying: InvitationEvent = { type: 'SendAttemptFailed', data: { attendeeInvitationId: 'i1', attempt: 1, code: 'provider_unavailable', error: '503', retryAt: later(2_000) } };
    given([requested, started(), retrying]).when(start(later(1_000))).then([]);
    given([requested, started(), retrying]).when(start(later(2_000))).then([{ type: 'SendStarted', data: { attempt: 2 } }]);
  });

  it('fails for good on a permanent failure or when no retry is left', () => {
    const failed = { type: 'RecordAttemptFailed' as const, attempt: 1, code: 'provider_rejected' as const, error: 'bad address', at: t0 };
    given([requested, started()])
      .when({ ...failed, permanent: true, retryAt: later(2_000) })
      .then([{ type: 'SendFailed', data: { code: 'provider_rejected', error: 'provider_rejected: bad address', permanent: true } }]);
    given([requested, started()]).when({ ...failed, permanent: false }).then([{ type: 'SendFailed', data: { permanent: false } }]);
  });

  it('refuses before any attempt (no email, suppressed recipient) only while nothing was sent', () => {
    const refuse = { type: 'Refuse' as const, code: 'no_email' as const, error: 'the guest has no email address', at: t0 };
    given([requested]).when(refuse).then([{ type: 'SendFailed', data: { code: 'no_email', attempts: 0 } }]);
    given([requested, started(), succeeded]).when(refuse).then([]);
  });

  it('records each provider report once, by the provider’s event id', () => {
    const report = { type: 'RecordProviderEvent' as const, event: 'delivered' as const, providerEventId: 'ev1', email: 'a@example.com', at: t0 };
    given([requested, started(), succeeded]).when(report).then([{ type: 'ProviderEventReceived', data: { ...ids, event: 'delivered' } }]);
    const seen: InvitationEvent = { type: 'ProviderEventReceived', data: { ...ids, event: 'delivered', providerEventId: 'ev1', email: 'a@example.com', at: t0 } };
    given([requested, started(), succeeded, seen]).when(report).then([]);
    given([]).when(report).thenFails('not_found');
  });
});

describe('template decider (spec: Comms rule 1)', () => {
  const details = { eventId: 'e1', name: 'Invite', html: '<p>Hi</p>', attachPdf: false };
  const create = (clientId: string) => ({ type: 'CreateTemplate' as const, templateId: 't1', clientId, details, at: t0 });
  const created = { type: 'TemplateCreated' as const, data: { templateId: 't1', clientId: 'c1', created: t0, ...details } };
  const spec = deciderSpec(templateDecider);

  it('creates a template once; a create with the same id records nothing', () => {
    spec([]).when(create('c1')).then([{ type: 'TemplateCreated', data: { templateId: 't1', clientId: 'c1', created: t0 } }]);
    expect(templateDecider.decide(create('c1'), templateDecider.evolve(templateDecider.initialState(), created))).toEqual([]);
  });

  it('reports another client’s template id as not found', () => spec([created]).when(create('c2')).thenFails('not_found'));
});

describe('invitation decider: an attempt that never reported', () => {
  it('may be refused once its lease is over, so it does not stay sending for ever', () => {
    const refuse = (at: string) => ({ type: 'Refuse' as const, code: 'previous_send_permanently_failed' as const, error: 'bounced', at });
    given([requested, started()]).when(refuse(later(30_000))).then([]);
    given([requested, started()]).when(refuse(later(61_000))).then([{ type: 'SendFailed', data: { code: 'previous_send_permanently_failed' } }]);
  });
});

describe('invitation decider: the lease heartbeat (issue 12, item 4)', () => {
  const renewed = (at: string): InvitationEvent => ({ type: 'SendLeaseRenewed', data: { attendeeInvitationId: 'i1', attempt: 1, leaseUntil: later(Date.parse(at) - Date.parse(t0) + 10_000) } });

  it('extends the lease of the attempt in progress', () =>
    given([requested, started()]).when({ type: 'RenewLease', attempt: 1, at: later(50_000), leaseMs: 10_000 }).then([
      { type: 'SendLeaseRenewed', data: { attempt: 1, leaseUntil: later(60_000) } },
    ]));

  it('renews nothing for an attempt already finished or taken over', () => {
    given([requested, started(), succeeded]).when({ type: 'RenewLease', attempt: 1, at: later(1_000), leaseMs: 10_000 }).then([]);
    given([requested, started(1), started(2, later(70_000))]).when({ type: 'RenewLease', attempt: 1, at: later(71_000), leaseMs: 10_000 }).then([]);
  });

  it('keeps another worker out while renewed, and lets it in once the renewals stop', () => {
    const history = [requested, started(), renewed(later(55_000))];
    given(history).when(start(later(61_000), true)).then([]);
    given(history).when(start(later(65_000), true)).then([{ type: 'SendStarted', data: { attempt: 2 } }]);
  });
});

describe('invitation decider: a send held after a restore (admin hold-pending-sends)', () => {
  const hold = (at = later(1_000), withIds?: InvitationIds) => ({ type: 'HoldAfterRestore' as const, at, ...(withIds ? { ids: withIds } : {}) });
  const heldFailure = { type: 'SendFailed' as const, data: { ...ids, code: 'outcome_unknown', permanent: false, error: expect.stringMatching(/^outcome_unknown: the send was pending when the backup was taken.*POST \/comms\/v1\/api\/comms\/send/) } };
  const retrying: InvitationEvent = { type: 'SendAttemptFailed', data: { attendeeInvitationId: 'i1', attempt: 1, code: 'provider_unavailable', error: '503', retryAt: later(2_000) } };

  it('fails a requested, retrying or sending invitation as outcome_unknown, even while its lease runs', () => {
    given([requested]).when(hold()).then([{ ...heldFailure, data: { ...heldFailure.data, attempts: 0 } }]);
    given([requested, started(), retrying]).when(hold()).then([{ ...heldFailure, data: { ...heldFailure.data, attempts: 1 } }]);
    given([requested, started()]).when(hold(later(1_000))).then([{ ...heldFailure, data: { ...heldFailure.data, attempts: 1 } }]);
  });

  it('records and fails at once a request the copy has on the guest only, so a redelivered request finds it failed', () => {
    given([]).when(hold(later(1_000), ids)).then([{ type: 'SendRequested', data: { ...ids } }, heldFailure]);
    const events = invitationDecider.decide(hold(later(1_000), ids), invitationDecider.initialState());
    const state = events.reduce(invitationDecider.evolve, invitationDecider.initialState());
    expect(state.status).toBe('failed');
    expect(invitationDecider.decide(start(later(2_000)), state)).toEqual([]);
  });

  it('leaves a settled invitation alone: sent, failed, or held already (idempotent)', () => {
    given([requested, started(), succeeded]).when(hold()).then([]);
    const events = invitationDecider.decide(hold(), [requested].reduce(invitationDecider.evolve, invitationDecider.initialState()));
    given([requested, ...events]).when(hold(later(5_000), ids)).then([]);
  });

  it('reports an invitation without a stream and without ids as not found', () => given([]).when(hold()).thenFails('not_found'));
});
