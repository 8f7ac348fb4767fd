import { describe, expect, it } from 'vitest';
import { DomainError, type Decider } from '../../src/domain/decider.js';
import {
  commsEventOf,
  deliveryDecider,
  derivedId,
  verdictOf,
  webhookBody,
  webhookDecider,
  webhookIdFor,
  type AttemptOutcome,
  type DeliveryCommand,
  type DeliveryEvent,
  type WebhookEvent,
} from '../../src/domain/webhook.js';

/** Given these past events, when this command: the events decided (or the error thrown). */
function given<S, C, E extends { type: string; data: unknown }>(decider: Decider<S, C, E>, history: E[]) {
  const state = history.reduce(decider.evolve, decider.initialState());
  return { when: (command: C) => decider.decide(command, state) };
}

const clientId = 'c1';
const secret = { encryptedSecret: 'ct1', keyId: 'k1' };
const configured: WebhookEvent = { type: 'WebhookConfigured', data: { clientId, url: 'https://a.example/h', ...secret } };

describe('webhook decider (spec: Comms rules 2-4)', () => {
  it('configures a webhook with the fresh secret when none exists', () => {
    expect(given(webhookDecider, []).when({ type: 'ConfigureWebhook', clientId, url: 'https://a.example/h', secret })).toEqual([configured]);
  });

  it('changes only the URL when one exists (no rotation), and nothing for the same URL', () => {
    const other = { encryptedSecret: 'ct2', keyId: 'k1' };
    expect(given(webhookDecider, [configured]).when({ type: 'ConfigureWebhook', clientId, url: 'https://b.example/h', secret: other })).toEqual([
      { type: 'WebhookUrlChanged', data: { clientId, url: 'https://b.example/h', previousUrl: 'https://a.example/h' } },
    ]);
    expect(given(webhookDecider, [configured]).when({ type: 'ConfigureWebhook', clientId, url: 'https://a.example/h', secret: other })).toEqual([]);
  });

  it('rotates, deletes and requests a test only when configured; otherwise not_found', () => {
    const rotated = { encryptedSecret: 'ct3', keyId: 'k2' };
    expect(given(webhookDecider, [configured]).when({ type: 'RotateWebhookSecret', clientId, secret: rotated })).toEqual([
      { type: 'WebhookSecretRotated', data: { clientId, ...rotated } },
    ]);
    expect(given(webhookDecider, [configured]).when({ type: 'RequestWebhookTest', clientId, correlationId: 'x' })).toEqual([
      { type: 'WebhookTestRequested', data: { clientId, correlationId: 'x' } },
    ]);
    const deleted: WebhookEvent = { type: 'WebhookDeleted', data: { clientId, url: 'https://a.example/h' } };
    expect(given(webhookDecider, [configured]).when({ type: 'DeleteWebhook', clientId })).toEqual([deleted]);
    for (const command of [
      { type: 'RotateWebhookSecret', clientId, secret },
      { type: 'DeleteWebhook', clientId },
      { type: 'RequestWebhookTest', clientId },
    ] as const) {
      expect(() => given(webhookDecider, []).when(command)).toThrow(DomainError);
      expect(() => given(webhookDecider, [configured, deleted]).when(command)).toThrow('no webhook');
    }
  });

  it('signs with the newest secret: state follows rotation', () => {
    const state = [configured, { type: 'WebhookSecretRotated', data: { clientId, encryptedSecret: 'ct9', keyId: 'k2' } } as WebhookEvent].reduce(
      webhookDecider.evolve,
      webhookDecider.initialState(),
    );
    expect(state).toEqual({ status: 'configured', url: 'https://a.example/h', encryptedSecret: 'ct9', keyId: 'k2' });
  });
});

describe('comms events and the webhook body (spec: Events, Body shape)', () => {
  const meta = { tenantId: clientId, occurredAt: '2026-11-21T10:00:00.000Z' };

  it('maps a test request to comms.test with a webhook id derived from the source event', () => {
    const event = commsEventOf({ id: 'e1', type: 'WebhookTestRequested', data: { clientId }, metadata: meta })!;
    expect(event.id).toBe(webhookIdFor('e1'));
    expect(event.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(JSON.parse(webhookBody(event))).toEqual({
      id: event.id,
      type: 'comms.test',
      createdAt: meta.occurredAt,
      data: {
        attendeeId: '00000000-0000-0000-0000-000000000000',
        templateId: '00000000-0000-0000-0000-000000000000',
        attendeeInvitationId: '00000000-0000-0000-0000-000000000000',
        status: 'test',
        error: null,
      },
    });
  });

  it('maps the invitation outcomes, with error only for failed and dropped', () => {
    const ids = { attendeeId: 'a', templateId: 't', attendeeInvitationId: 'i', correlationId: 'corr' };
    const of = (type: string, data: Record<string, unknown> = {}) => commsEventOf({ id: 'e', type, data: { ...ids, ...data }, metadata: meta });
    expect(of('SendSucceeded')).toMatchObject({ type: 'comms.sent', data: { ...ids, status: 'sent', error: null } });
    expect(of('SendFailed', { error: 'smtp 550' })).toMatchObject({ type: 'comms.failed', data: { status: 'failed', error: 'smtp 550' } });
    expect(of('SendSkipped')).toMatchObject({ type: 'comms.skipped', data: { status: 'skipped', error: null } });
    for (const provider of ['delivered', 'opened', 'bounced', 'spam_reported', 'unsubscribed']) {
      expect(of('ProviderEventReceived', { event: provider, error: 'x' })).toMatchObject({ type: `comms.${provider}`, data: { status: provider, error: null } });
    }
    expect(of('ProviderEventReceived', { event: 'dropped', reason: 'suppressed' })).toMatchObject({ data: { status: 'dropped', error: 'suppressed' } });
    expect(of('ProviderEventReceived', { event: 'processed' })).toBeUndefined();
    expect(of('SendRequested')).toBeUndefined();
  });
});

describe('delivery decider (spec: Delivery behaviour)', () => {
  const deliveryId = 'd1';
  const scheduled: DeliveryEvent = {
    type: 'WebhookDeliveryScheduled',
    data: { deliveryId, clientId, eventType: 'comms.test', body: '{}', sourceEventId: 'e1', sourceStream: 'webhook-c1', sourceRevision: 3 },
  };
  const delays = [1000, 2000];
  const attempt = (n: number, outcome: AttemptOutcome, jitter = 0): DeliveryCommand => ({
    type: 'RecordAttempt',
    deliveryId,
    attempt: n,
    at: '2026-01-01T00:00:00.000Z',
    url: 'https://a.example/h',
    durationMs: 12,
    outcome,
    retryDelaysMs: delays,
    jitter,
  });
  const failedAttempt = (n: number): DeliveryEvent[] => [
    { type: 'WebhookDeliveryAttempted', data: { deliveryId, attempt: n, attemptedAt: 'x', url: 'u', durationMs: 1, statusCode: 500 } },
    { type: 'WebhookDeliveryRetryScheduled', data: { deliveryId, nextAttemptAt: 'x' } },
  ];

  it('leases an attempt to one worker: refused while the lease or its renewal runs, open once it ran out or was handed back', () => {
    const at = (ms: number) => new Date(Date.parse('2026-01-01T00:00:00.000Z') + ms).toISOString();
    const take = (ms: number): DeliveryCommand => ({ type: 'StartAttempt', deliveryId, at: at(ms), leaseMs: 10_000 });
    const [started] = given(deliveryDecider, [scheduled]).when(take(0));
    expect(started).toEqual({ type: 'WebhookDeliveryAttemptStarted', data: { deliveryId, attempt: 1, leaseUntil: at(10_000) } });
    expect(given(deliveryDecider, [scheduled, started!]).when(take(5_000))).toEqual([]);
    const [renewed] = given(deliveryDecider, [scheduled, started!]).when({ type: 'RenewAttemptLease', deliveryId, attempt: 1, at: at(8_000), leaseMs: 10_000 });
    expect(given(deliveryDecider, [scheduled, started!, renewed!]).when(take(12_000))).toEqual([]);
    expect(given(deliveryDecider, [scheduled, started!, renewed!]).when(take(18_000))).toHaveLength(1);
    const [released] = given(deliveryDecider, [scheduled, started!]).when({ type: 'ReleaseAttemptLease', deliveryId, attempt: 1 });
    expect(given(deliveryDecider, [scheduled, started!, released!]).when(take(1_000))).toHaveLength(1);
  });

  it('schedules once: a repeated schedule decides nothing', () => {
    const { type: _t, data } = scheduled;
    const { deliveryId: _d, ...source } = data as typeof scheduled.data;
    expect(given(deliveryDecider, []).when({ type: 'ScheduleDelivery', deliveryId, source })).toEqual([scheduled]);
    expect(given(deliveryDecider, [scheduled]).when({ type: 'ScheduleDelivery', deliveryId, source })).toEqual([]);
  });

  it('classifies answers: 2xx delivered; 408, 429, 5xx and connection errors retry; other answers are final', () => {
    const response = (statusCode: number) => verdictOf({ kind: 'response', statusCode });
    expect([200, 202, 204, 299].map(response)).toEqual(Array(4).fill('delivered'));
    expect([408, 429, 500, 502, 503, 504].map(response)).toEqual(Array(6).fill('retry'));
    expect([301, 400, 401, 403, 404, 410, 422].map(response)).toEqual(Array(7).fill('final'));
    // A 401 to a signature made with a secret rotated during the attempt is retried with the new one.
    expect(verdictOf({ kind: 'response', statusCode: 401, secretRotated: true })).toBe('retry');
    expect(verdictOf({ kind: 'response', statusCode: 403, secretRotated: true })).toBe('final');
    // Any failure from a URL changed during the attempt is retried at the new URL.
    expect(verdictOf({ kind: 'response', statusCode: 410, urlChanged: true })).toBe('retry');
    expect(verdictOf({ kind: 'response', statusCode: 200, urlChanged: true })).toBe('delivered');
    expect(verdictOf({ kind: 'error', error: 'ECONNREFUSED', retryable: true })).toBe('retry');
    expect(verdictOf({ kind: 'error', error: 'refused address', retryable: false })).toBe('final');
  });

  it('records the attempt and retries after the scheduled delay plus at most 20 % jitter', () => {
    const [attempted, retry] = given(deliveryDecider, [scheduled]).when(attempt(1, { kind: 'response', statusCode: 503 }, 0.5));
    expect(attempted).toEqual({
      type: 'WebhookDeliveryAttempted',
      data: { deliveryId, attempt: 1, attemptedAt: '2026-01-01T00:00:00.000Z', url: 'https://a.example/h', durationMs: 12, statusCode: 503 },
    });
    expect(retry).toEqual({ type: 'WebhookDeliveryRetryScheduled', data: { deliveryId, nextAttemptAt: '2026-01-01T00:00:01.100Z' } });
    const [, second] = given(deliveryDecider, [scheduled, ...failedAttempt(1)]).when(attempt(2, { kind: 'error', error: 'timeout', retryable: true }));
    expect(second).toEqual({ type: 'WebhookDeliveryRetryScheduled', data: { deliveryId, nextAttemptAt: '2026-01-01T00:00:02.000Z' } });
  });

  it('gives up after the last attempt (delays + 1), and a redelivery starts a new budget', () => {
    const history = [scheduled, ...failedAttempt(1), ...failedAttempt(2)];
    expect(given(deliveryDecider, history).when(attempt(3, { kind: 'response', statusCode: 500 }))[1]).toEqual({
      type: 'WebhookDeliveryExhausted',
      data: { deliveryId, attempts: 3, reason: 'the receiver answered 500' },
    });
    const dead: DeliveryEvent[] = [
      ...history,
      { type: 'WebhookDeliveryAttempted', data: { deliveryId, attempt: 3, attemptedAt: 'x', url: 'u', durationMs: 1, statusCode: 500 } },
      { type: 'WebhookDeliveryExhausted', data: { deliveryId, attempts: 3, reason: 'r' } },
    ];
    expect(given(deliveryDecider, dead).when({ type: 'MarkDeadLettered', deliveryId, topic: 't' })).toEqual([
      { type: 'WebhookDeliveryDeadLettered', data: { deliveryId, topic: 't' } },
    ]);
    expect(given(deliveryDecider, dead).when(attempt(4, { kind: 'response', statusCode: 200 }))).toEqual([]);
    const redelivered = [...dead, { type: 'WebhookRedeliveryRequested', data: { deliveryId, clientId } } as DeliveryEvent];
    expect(given(deliveryDecider, redelivered).when(attempt(4, { kind: 'response', statusCode: 500 }))[1]!.type).toBe('WebhookDeliveryRetryScheduled');
    expect(given(deliveryDecider, redelivered).when(attempt(4, { kind: 'response', statusCode: 200 }))[1]).toEqual({
      type: 'WebhookDelivered',
      data: { deliveryId, deliveredAt: '2026-01-01T00:00:00.000Z' },
    });
  });

  it('ignores a stale or repeated attempt report', () => {
    expect(given(deliveryDecider, [scheduled, ...failedAttempt(1)]).when(attempt(1, { kind: 'response', statusCode: 200 }))).toEqual([]);
    expect(given(deliveryDecider, [scheduled]).when(attempt(3, { kind: 'response', statusCode: 200 }))).toEqual([]);
  });

  it('stops at a final answer', () => {
    expect(given(deliveryDecider, [scheduled]).when(attempt(1, { kind: 'response', statusCode: 410 }))[1]).toEqual({
      type: 'WebhookDeliveryFailed',
      data: { deliveryId, reason: 'the receiver answered 410' },
    });
  });

  it('reports another client’s delivery, or an unknown one, as not found on redelivery', () => {
    expect(() => given(deliveryDecider, [scheduled]).when({ type: 'RequestRedelivery', deliveryId, clientId: 'c2' })).toThrow('not found');
    expect(() => given(deliveryDecider, []).when({ type: 'RequestRedelivery', deliveryId, clientId })).toThrow('not found');
  });

  it('derives stable ids', () => {
    expect(derivedId('a', 'b')).toBe(derivedId('a', 'b'));
    expect(derivedId('a', 'b')).not.toBe(derivedId('ab'));
  });
});
