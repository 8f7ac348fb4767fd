import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { invitationStream } from '../../src/domain/invitation.js';
import type { BusMessage } from '../../src/adapters/bus/port.js';
import { topics } from '../../src/workers/topics.js';
import { createClient, request, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually, startReceiver, type Receiver } from '../webhooks/receiver.js';
import { loggedLines } from '../support/log-lines.js';

const api = '/comms/v1/api/comms';

/** Every log line the service writes, parsed. */
const { logger: capturing, lines } = loggedLines();

let service: TestService;
const receivers: Receiver[] = [];

beforeAll(async () => {
  service = await startTestService(
    { WEBHOOK_ALLOW_INSECURE: 'true', INVITES_SENDING_ADDRESS: 'invites@checkin.test', LOG_LEVEL: 'info' },
    { logger: capturing },
  );
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await service.close();
});

/** A comms client with a webhook, an event and a template: ready to invite a guest. */
async function invitingClient(): Promise<{ client: Client; receiver: Receiver; eventId: string; templateId: string }> {
  const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  const receiver = await startReceiver();
  receivers.push(receiver);
  receiver.secret = (await client.call('POST', `${api}/webhook`, { url: receiver.url })).body.secret;
  const event = await client.call('POST', '/checkin/v1/api/event', {
    title: 'Winter Gala',
    startTime: '2026-12-12T18:00:00Z',
    endTime: '2026-12-12T23:00:00Z',
  });
  const template = await client.call('POST', `${api}/template`, {
    eventId: event.body.id,
    name: 'Invitation',
    subject: 'Welcome {{firstName}}',
    html: '<p>Dear {{fullName}}</p>',
  });
  expect(template.status).toBe(200);
  return { client, receiver, eventId: event.body.id, templateId: template.body.id };
}

/** The value of one sample in Prometheus text, or undefined when the series is absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = Object.fromEntries([...(match[3] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => present[k] === v)) return Number(match[4]);
  }
  return undefined;
}

const scrape = async (): Promise<string> => {
  const reply = await fetch(`${service.url}/metrics`);
  expect(reply.status).toBe(200);
  expect(reply.headers.get('content-type')).toContain('text/plain');
  return reply.text();
};

describe('GET /metrics (issue 12 item 1)', () => {
  it('moves the counters of a guest create through to its comms.sent webhook', async () => {
    const before = await scrape();
    const { client, receiver, eventId, templateId } = await invitingClient();
    const guest = await client.call('POST', '/checkin/v1/api/guest', {
      eventId,
      firstName: 'Zoë',
      lastName: 'de Vries',
      email: 'zoe@example.com',
      commsTemplateId: templateId,
    });
    expect(guest.status).toBe(200);
    const [delivery] = await receiver.waitFor(1);
    expect(delivery!.headers['x-service-event']).toBe('comms.sent');

    const after = await eventually(async () => {
      const text = await scrape();
      return (sample(text, 'webhook_attempts_total', { outcome: 'delivered' }) ?? 0) > (sample(before, 'webhook_attempts_total', { outcome: 'delivered' }) ?? 0)
        ? text
        : undefined;
    }, 60_000, 'the webhook attempt to be counted');

    const route = { route: '/checkin/v1/api/guest', method: 'POST', status: '200' };
    expect(sample(after, 'http_request_duration_seconds_count', route)).toBe((sample(before, 'http_request_duration_seconds_count', route) ?? 0) + 1);
    expect(sample(after, 'invitation_sends_total', { outcome: 'sent', code: '' })).toBe((sample(before, 'invitation_sends_total', { outcome: 'sent', code: '' }) ?? 0) + 1);
    expect(sample(after, 'eventstore_append_duration_seconds_count', { operation: 'append', outcome: 'ok' })).toBeGreaterThan(
      sample(before, 'eventstore_append_duration_seconds_count', { operation: 'append', outcome: 'ok' }) ?? 0,
    );
    // Lag and backlog gauges are there for each projection, the relay and each consumer group.
    expect(sample(after, 'projection_lag_events', { projection: 'guests' })).toBeTypeOf('number');
    expect(sample(after, 'projection_lag_seconds', { projection: 'invitations' })).toBeTypeOf('number');
    expect(sample(after, 'relay_lag_events')).toBeTypeOf('number');
    expect(sample(after, 'relay_lag_seconds')).toBeTypeOf('number');
    expect(sample(after, 'bus_consumer_lag_messages', { group: 'send-worker', topic: 'comms.invitations.v1' })).toBeTypeOf('number');
    expect(sample(after, 'bus_consumer_lag_messages', { group: 'webhook-dispatcher', topic: 'comms.events.v1' })).toBeTypeOf('number');
    expect(sample(after, 'webhook_deliveries_pending')).toBeTypeOf('number');
    expect(sample(after, 'webhook_deliveries_dead_lettered')).toBeTypeOf('number');
    expect(sample(after, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(sample(after, 'nodejs_eventloop_lag_seconds')).toBeTypeOf('number');
    // Every probe answered: its failure counter is there, at 0 (so rate() sees the first failure).
    for (const probe of ['projections', 'relay', 'consumers', 'webhook_deliveries']) expect(sample(after, 'metrics_probe_failures_total', { probe })).toBe(0);
  });

  it('labels routes by template, and a request refused before any route by its area', async () => {
    const client = await createClient(service);
    await client.call('GET', '/checkin/v1/api/event/not-a-real-event');
    await request(service.url, 'GET', '/checkin/v1/api/events');
    const text = await scrape();
    expect(sample(text, 'http_request_duration_seconds_count', { route: '/checkin/v1/api/event/:id', method: 'GET', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'http_request_duration_seconds_count', { route: '/checkin/v1/*', method: 'GET', status: '401' })).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain('not-a-real-event');
  });

  it('answers only on loopback without METRICS_TOKEN: a proxied request is refused', async () => {
    const proxied = await request(service.url, 'GET', '/metrics', undefined, { 'x-forwarded-for': '203.0.113.9' });
    expect(proxied.status).toBe(403);
    expect(proxied.body).toEqual({ code: 'forbidden', message: expect.stringContaining('METRICS_TOKEN') });
  });

  it('needs Authorization: Bearer <METRICS_TOKEN> when the token is set', async () => {
    const token = 'metrics-token-0123456789';
    const guarded = await startTestService({ METRICS_TOKEN: token });
    try {
      const none = await request(guarded.url, 'GET', '/metrics');
      expect(none.status).toBe(401);
      expect(none.body.code).toBe('unauthorized');
      expect(none.headers.get('www-authenticate')).toContain('Bearer');
      expect((await request(guarded.url, 'GET', '/metrics', undefined, { authorization: 'Bearer wrong-token-0123456789' })).status).toBe(401);
      const ok = await request(guarded.url, 'GET', '/metrics', undefined, { authorization: `Bearer ${token}` });
      expect(ok.status).toBe(200);
      expect(String(ok.body)).toContain('http_request_duration_seconds');
    } finally {
      await guarded.close();
    }
  });
});

describe('METRICS_PORT (a process without the api role)', () => {
  it('serves /metrics on a listener of its own, so the workers’ send and webhook counters can be scraped', async () => {
    const { logger, lines: logged } = loggedLines();
    const workers = await startTestService({ METRICS_PORT: '0' }, { role: 'workers', logger });
    try {
      const line = logged.find((l) => l.msg === 'metrics listening');
      expect(line).toMatchObject({ role: 'workers', url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/) });
      const reply = await fetch(String(line!.url));
      expect(reply.status).toBe(200);
      const text = await reply.text();
      expect(text).toContain('# TYPE invitation_sends_total counter');
      expect(text).toContain('# TYPE webhook_attempts_total counter');
    } finally {
      await workers.close();
    }
  });

  it('answers /readyz there too, with the projections’ state in a projections process', async () => {
    const { logger, lines: logged } = loggedLines();
    const projections = await startTestService({ METRICS_PORT: '0' }, { role: 'projections', logger });
    try {
      const url = String(logged.find((l) => l.msg === 'metrics listening')!.url).replace(/\/metrics$/, '/readyz');
      let reply = await fetch(url);
      // Catching up after start answers 503 for a moment; the probe is polled, as an orchestrator does.
      for (let i = 0; i < 200 && reply.status === 503; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        reply = await fetch(url);
      }
      expect(reply.status).toBe(200);
      const body = (await reply.json()) as { ready: boolean; checks: Record<string, { ok: boolean }> };
      expect(body.ready).toBe(true);
      expect(body.checks).toMatchObject({ eventStore: { ok: true }, readStore: { ok: true }, bus: { ok: true }, projections: { ok: true } });
    } finally {
      await projections.close();
    }
  });
});

describe('one request followed end to end (issue 12 item 2)', () => {
  it('keeps the caller’s traceparent and request id from the guest create to its comms.sent webhook', async () => {
    const { client, receiver, eventId, templateId } = await invitingClient();
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const requestId = `story-${crypto.randomUUID()}`;
    const guest = await client.call(
      'POST',
      '/checkin/v1/api/guest',
      { eventId, firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.com', commsTemplateId: templateId },
      { traceparent: `00-${traceId}-00f067aa0ba902b7-01`, 'x-request-id': requestId },
    );
    expect(guest.status).toBe(200);
    expect(guest.headers.get('x-request-id')).toBe(requestId);
    await receiver.waitFor(1);

    // grep <requestId>: every step of the story, each line in the caller's trace.
    const steps = ['request completed', 'events appended', 'projections applied', 'relay published', 'invitation sent', 'webhook delivery scheduled', 'webhook attempt'];
    const story = await eventually(async () => {
      const told = lines.filter((l) => l.requestId === requestId);
      return steps.every((step) => told.some((l) => l.msg === step)) ? told : undefined;
    }, 10_000, `a log line for each step of ${requestId}`);
    expect(story.every((l) => l.traceId === traceId)).toBe(true);
    expect(story.find((l) => l.msg === 'webhook attempt')).toMatchObject({ outcome: 'delivered', statusCode: 200, eventType: 'comms.sent' });
    // No other request's lines carry it.
    expect(lines.filter((l) => JSON.stringify(l).includes(requestId)).every((l) => l.requestId === requestId)).toBe(true);

    // The events of the send carry it in their metadata.
    const invitations = await client.call('GET', `${api}/invitations?attendeeId=${guest.body.id}`);
    const stored = await service.platform.eventStore.readStream(invitationStream(invitations.body.items[0].attendeeInvitationId));
    expect(stored.map((e) => e.type)).toContain('SendSucceeded');
    for (const event of stored) {
      expect(event.metadata.requestId).toBe(requestId);
      expect(event.metadata.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    }

    // And the bus messages in their headers.
    const seen: BusMessage[] = [];
    const consumer = await service.platform.bus.consume({ groupId: `trace-check-${requestId}`, topics: [topics.invitations, topics.commsEvents] }, async (m) => {
      seen.push(m);
    });
    try {
      // Until both topics carried one (by topic, not by count: the bus and the relay are at least
      // once, so a message may come twice, and two of one topic must not end the wait).
      const carried = await eventually(async () => {
        const mine = seen.filter((m) => m.headers['request-id'] === requestId);
        return new Set(mine.map((m) => m.topic)).size === 2 ? mine : undefined;
      }, 60_000, 'the invitation request and comms.sent on the bus');
      expect([...new Set(carried.map((m) => m.topic))].sort()).toEqual([topics.commsEvents, topics.invitations].sort());
      for (const m of carried) expect(m.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    } finally {
      await consumer.close();
    }
  });

  it('starts a new trace for a missing or malformed traceparent, and a new request id for an unusable one', async () => {
    const client = await createClient(service);
    const reply = await client.call('GET', '/checkin/v1/api/events', undefined, {
      traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      'x-request-id': 'has spaces',
    });
    expect(reply.status).toBe(200);
    const requestId = reply.headers.get('x-request-id')!;
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    const line = await eventually(async () => lines.find((l) => l.requestId === requestId && l.msg === 'request completed'), 60_000, 'the request line');
    expect(line.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(line.traceId).not.toBe('00000000000000000000000000000000');
  });
});

describe('logged errors', () => {
  it('carry no password of a connection string, in the message or the stack', () => {
    const { logger, lines } = loggedLines();
    logger.error({ err: new Error('connect ECONNREFUSED mongodb://reader:s3cret-pw@mongo.internal:27017/checkin') }, 'the read store is unreachable');
    const written = lines.map((l) => JSON.stringify(l));
    const line = lines[0] as { err: { message: string; stack: string; type: string } };
    expect(line.err.message).toBe('connect ECONNREFUSED mongodb://reader:***@mongo.internal:27017/checkin');
    expect(line.err.type).toBe('Error');
    expect(written.join('')).not.toContain('s3cret-pw');
  });
});
