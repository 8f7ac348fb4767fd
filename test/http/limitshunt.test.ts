/**
 * The interface's Errors and Limits tables, route by route: every operation of the served
 * OpenAPI document under /checkin/v1, /comms/v1 and /users/v1 is driven through the refusals
 * the Errors table names (401 without a valid token, 400 for malformed JSON or a malformed
 * GUID, 404 for another client's resource), checking the error shape and that nothing was
 * written; then the bulk limits at 200 and 201 records, and the per-source-IP limits.
 */
import path from 'node:path';
import { decodeJwt, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventStore } from '../../src/adapters/eventstore/port.js';
import { invitationStream } from '../../src/domain/invitation.js';
import { deliveryStream, webhookIdFor } from '../../src/domain/webhook.js';
import { loadOrCreateSigningKey } from '../../src/identity/signing-key.js';
import { createClient, newEvent, request, startTestService, type Client, type Reply, type TestService } from '../support/service.js';

type Operation = { method: string; path: string; pathParams: { name: string; format?: string }[]; requiredQuery: string[]; hasBody: boolean };

/** Every operation the document lists under the interface's three areas (admin is the operator's). */
async function operations(url: string): Promise<Operation[]> {
  const document = (await request(url, 'GET', '/openapi.json')).body as {
    paths: Record<string, Record<string, { parameters?: { in: string; name: string; required?: boolean; schema?: { format?: string } }[]; requestBody?: unknown }>>;
  };
  const found: Operation[] = [];
  for (const [pathname, methods] of Object.entries(document.paths)) {
    if (!/^\/(checkin|comms|users)\/v1\//.test(pathname)) continue;
    for (const [method, op] of Object.entries(methods)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const parameters = op.parameters ?? [];
      found.push({
        method: method.toUpperCase(),
        path: pathname,
        pathParams: parameters.filter((p) => p.in === 'path').map((p) => ({ name: p.name, format: p.schema?.format })),
        requiredQuery: parameters.filter((p) => p.in === 'query' && p.required).map((p) => p.name),
        hasBody: op.requestBody !== undefined,
      });
    }
  }
  return found;
}

function expectErrorShape(reply: Reply, status: number, code: string, what: string): void {
  expect({ what, status: reply.status, code: reply.body?.code }).toEqual({ what, status, code });
  expect(typeof reply.body.message, what).toBe('string');
  expect(Object.keys(reply.body).filter((key) => !['code', 'message', 'errors'].includes(key)), what).toEqual([]);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits until the background work of the setup is over, by its last events (docs/testing.md): the
 * invitation's send has its outcome, and the delivery of each webhook (the test one, the send
 * outcome's) to the closed port has been dead-lettered. A quiet spell of the store was no sign:
 * a loaded machine can pause the send or a retry for longer, and its event then landed inside a
 * test's "changing nothing" check.
 */
async function setupDone(store: EventStore, invitationId: string, testWebhookId: string): Promise<void> {
  const lastType = async (stream: string) => (await store.readStream(stream)).at(-1)?.type;
  const deadline = Date.now() + 50_000;
  for (;;) {
    const outcome = (await store.readStream(invitationStream(invitationId))).find((e) => ['SendSucceeded', 'SendFailed', 'SendSkipped'].includes(e.type));
    const deliveries = outcome ? [testWebhookId, webhookIdFor(outcome.id)] : [testWebhookId];
    const ended = await Promise.all(deliveries.map(async (id) => (await lastType(deliveryStream(id))) === 'WebhookDeliveryDeadLettered'));
    if (outcome && ended.every(Boolean)) return;
    if (Date.now() > deadline) throw new Error(`the setup's send and webhook deliveries did not end within 50 s (send outcome: ${outcome?.type ?? 'none'})`);
    await sleep(50);
  }
}

describe('every operation against the Errors table', () => {
  let service: TestService;
  let alice: Client;
  let bob: Client;
  let ops: Operation[];
  /** Alice's resources, by the path parameter that names them. */
  const ids: Record<string, string> = {};
  const guestId = '6f1c2a9e-3b4d-4c5e-8f70-112233445566';

  beforeAll(async () => {
    // Webhook deliveries to the closed port give up after two quick attempts, so the store goes quiet.
    service = await startTestService({ WEBHOOK_ALLOW_INSECURE: 'true', WEBHOOK_RETRY_DELAYS_MS: '1' });
    alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    bob = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    const eventId = await newEvent(alice);
    const guest = await alice.call('POST', '/checkin/v1/api/guest', { id: guestId, eventId, firstName: 'Ada', email: 'ada@example.com', customId: 'ada-1' });
    const template = await alice.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invite', html: '<p>Hello</p>' });
    const exported = await alice.call('POST', '/checkin/v1/api/event/export?type=CSV', { id: eventId, title: 'Ball', startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z' });
    // The webhook before the send, so the send's outcome always has a webhook delivery to wait for.
    await alice.call('POST', '/comms/v1/api/comms/webhook', { url: 'http://127.0.0.1:9/hook' });
    const sent = await alice.call('POST', '/comms/v1/api/comms/send', { templateId: template.body.id, attendeeIds: [guestId] });
    const tested = await alice.call('POST', '/comms/v1/api/comms/webhook/test', {});
    await alice.call('POST', '/comms/v1/api/comms/domain', { domain: 'mail.example.com' });
    expect([guest.status, template.status, exported.status, sent.status, tested.status]).toEqual([200, 200, 200, 200, 200]);
    Object.assign(ids, {
      event: eventId,
      guest: guestId,
      template: template.body.id,
      export: exported.body.exportId,
      invitation: sent.body.invitations[0].attendeeInvitationId,
      delivery: tested.body.webhookId,
      username: alice.email,
    });
    ops = await operations(service.url);
    await setupDone(service.services.eventStore, ids.invitation!, ids.delivery!);
  }, 60_000);
  afterAll(() => service?.close());

  /** The path with alice's resource in each parameter (or `value` for all of them). */
  function pathFor(op: Operation, value?: string): string {
    let pathname = op.path;
    for (const param of op.pathParams) {
      const resource = /\/guest\/\{id\}/.test(op.path)
        ? ids.guest
        : /\/template\/\{id\}/.test(op.path)
          ? ids.template
          : /\/invitations\/\{id\}/.test(op.path)
            ? ids.invitation
            : /\/deliveries\/\{id\}/.test(op.path)
              ? ids.delivery
              : param.name === 'exportId'
                ? ids.export
                : param.name === 'username'
                  ? ids.username
                  : ids.event;
      pathname = pathname.replace(`{${param.name}}`, encodeURIComponent(value ?? resource!));
    }
    const query = op.requiredQuery.map((name) => `${name}=${encodeURIComponent(name === 'email' ? alice.email : 'x')}`);
    return query.length ? `${pathname}?${query.join('&')}` : pathname;
  }

  const head = () => service.services.eventStore.headPosition();

  it('lists the interface’s endpoints (the sweep below covers each)', () => {
    const listed = ops.map((op) => `${op.method} ${op.path}`);
    for (const endpoint of [
      'POST /comms/v1/api/comms/template',
      'POST /comms/v1/api/comms/webhook',
      'POST /comms/v1/api/comms/webhook/rotate',
      'POST /comms/v1/api/comms/domain/activate',
      'POST /comms/v1/api/comms/domain/deactivate',
      'GET /comms/v1/api/comms/webhook',
      'POST /comms/v1/api/comms/webhook/test',
      'POST /comms/v1/api/comms/webhook/delete',
      'GET /comms/v1/api/comms/domain',
      'POST /comms/v1/api/comms/domain',
      'POST /comms/v1/api/comms/domain/verify',
      'POST /comms/v1/api/comms/send',
      'POST /checkin/v1/api/guests/{eventId}',
      'POST /checkin/v1/api/guests/{eventId}/block',
      'POST /checkin/v1/api/guests/{eventId}/unblock',
      'POST /checkin/v1/api/guest',
      'GET /checkin/v1/api/guests/{eventId}/byinfo',
      'PUT /checkin/v1/api/guests/{eventId}/upsert',
      'POST /checkin/v1/api/teammember',
      'GET /checkin/v1/api/team/event/{id}',
      'GET /checkin/v1/api/teammembers/user/{username}/events',
      'POST /checkin/v1/api/event/export',
      'GET /users/v1/api/users/email',
      'PUT /users/v1/api/user',
      'PUT /users/v1/api/user/changepassword',
    ]) {
      expect(listed).toContain(endpoint);
    }
  });

  it('answers 401 unauthorized in the error shape to a missing, invalid or expired bearer token, on every operation, changing nothing', async () => {
    const before = await head();
    const keyFile = path.join(service.dataDir, 'identity', 'signing-key.json');
    const key = loadOrCreateSigningKey(keyFile);
    const claims = decodeJwt(alice.token);
    const past = Math.floor(Date.now() / 1000) - 7200;
    const expired = await new SignJWT({ ...claims })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })
      .setIssuedAt(past)
      .setNotBefore(past)
      .setExpirationTime(past + 3600)
      .sign(key.privateKey);
    const withKey = { 'ocp-apim-subscription-key': alice.subscriptionKey };
    for (const op of ops) {
      const target = pathFor(op);
      const body = op.hasBody ? {} : undefined;
      for (const [label, headers] of [
        ['missing', withKey],
        ['invalid', { ...withKey, authorization: 'Bearer not.a.token' }],
        ['expired', { ...withKey, authorization: `Bearer ${expired}` }],
      ] as const) {
        const reply = await request(service.url, op.method, target, body, headers);
        expectErrorShape(reply, 401, 'unauthorized', `${label} token: ${op.method} ${op.path}`);
        expect(reply.headers.get('www-authenticate'), `${label}: ${op.method} ${op.path}`).toMatch(/^Bearer /);
      }
    }
    expect(await head()).toBe(before);
  }, 60_000);

  it('answers malformed JSON with 400 validation_error on every operation that takes a body, changing nothing', async () => {
    const before = await head();
    for (const op of ops.filter((o) => o.hasBody)) {
      const reply = await alice.call(op.method, pathFor(op), '{"eventId": "x",');
      expectErrorShape(reply, 400, 'validation_error', `${op.method} ${op.path}`);
    }
    expect(await head()).toBe(before);
  }, 60_000);

  it('answers a malformed GUID in the path with 400 naming it, not 404, changing nothing', async () => {
    const before = await head();
    const guidRoutes = ops.filter((o) => o.pathParams.some((p) => p.format === 'uuid'));
    expect(guidRoutes.length).toBeGreaterThan(0);
    for (const op of guidRoutes) {
      const reply = await alice.call(op.method, pathFor(op, 'not-a-guid'), op.hasBody ? {} : undefined);
      expectErrorShape(reply, 400, 'validation_error', `${op.method} ${op.path}`);
      expect(reply.body.errors.map((e: { path: string }) => e.path), `${op.method} ${op.path}`).toContain(op.pathParams[0]!.name);
    }
    expect(await head()).toBe(before);
  }, 60_000);

  it('answers another client’s resource in the path with 404 not_found (never 403), changing nothing', async () => {
    const before = await head();
    const scoped = ops.filter((o) => o.pathParams.length > 0 && !o.hasBody);
    expect(scoped.length).toBeGreaterThan(10);
    for (const op of scoped) {
      expectErrorShape(await bob.call(op.method, pathFor(op)), 404, 'not_found', `${op.method} ${op.path}`);
    }
    expect(await head()).toBe(before);
  }, 60_000);

  it('answers a malformed GUID or a missing required field in a body with 400 naming the field, changing nothing', async () => {
    const before = await head();
    const cases: [string, string, unknown, string][] = [
      ['POST', '/checkin/v1/api/guest', { eventId: ids.event, id: 'nope' }, 'id'],
      ['POST', '/checkin/v1/api/guest', { eventId: ids.event, commsTemplateId: 'nope' }, 'commsTemplateId'],
      ['POST', '/checkin/v1/api/guest', { firstName: 'Ada' }, 'eventId'],
      ['PUT', `/checkin/v1/api/guests/${ids.event}/upsert`, [{ firstName: 'Ada' }, { id: 'nope' }], '1.id'],
      ['POST', `/checkin/v1/api/guests/${ids.event}`, [{ commsTemplateId: 'nope' }], '0.commsTemplateId'],
      ['POST', '/comms/v1/api/comms/template', { eventId: ids.event, name: 'n', html: '<p>x</p>', id: 'nope' }, 'id'],
      ['POST', '/comms/v1/api/comms/template', { eventId: ids.event, name: 'n' }, 'html'],
      ['POST', '/comms/v1/api/comms/send', { templateId: 'nope', attendeeIds: [guestId] }, 'templateId'],
      ['POST', '/comms/v1/api/comms/webhook', {}, 'url'],
      ['POST', '/checkin/v1/api/teammember', { userName: 'door-1', password: 'a long door password' }, 'email'],
      ['POST', '/checkin/v1/api/event/export', { title: 'Ball', startTime: '2026-01-01T18:00:00Z' }, 'endTime'],
      ['PUT', '/users/v1/api/user', { firstName: 'Ada' }, 'id'],
      ['PUT', '/users/v1/api/user/changepassword', { id: alice.id, oldPassword: alice.password }, 'newPassword'],
      ['GET', `/checkin/v1/api/guests/${ids.event}/byinfo`, undefined, 'additionalInfo'],
      ['GET', '/users/v1/api/users/email', undefined, 'email'],
    ];
    for (const [method, target, body, field] of cases) {
      const reply = await alice.call(method, target, body);
      expectErrorShape(reply, 400, 'validation_error', `${method} ${target} ${field}`);
      expect(reply.body.errors.map((e: { path: string }) => e.path), `${method} ${target}`).toContain(field);
    }
    expect(await head()).toBe(before);
  }, 60_000);
});

describe('bulk payloads: 200 records succeed, 201 are 400 with nothing written (spec: Limits)', () => {
  let service: TestService;
  let alice: Client;
  let eventId: string;
  const records = (count: number, prefix: string) => Array.from({ length: count }, (_, i) => ({ customId: `${prefix}-${i}`, barcode: `${prefix}-B${i}`, firstName: `G${i}` }));

  beforeAll(async () => {
    service = await startTestService();
    alice = await createClient(service);
    eventId = await newEvent(alice);
  }, 60_000);
  afterAll(() => service?.close());

  const head = () => service.services.eventStore.headPosition();

  it('POST /guests/{eventId} and PUT .../upsert take 200 records and refuse 201', async () => {
    for (const [method, target, ok] of [
      ['POST', `/checkin/v1/api/guests/${eventId}`, 200],
      ['PUT', `/checkin/v1/api/guests/${eventId}/upsert`, 204],
    ] as const) {
      const before = await head();
      const refused = await alice.call(method, target, records(201, `${method}-over`));
      expectErrorShape(refused, 400, 'validation_error', `${method} 201`);
      expect(await head(), `${method} 201 wrote`).toBe(before);
      expect((await alice.call(method, target, records(200, method))).status, `${method} 200`).toBe(ok);
    }
    const listed = await alice.call('GET', `/checkin/v1/api/guests/${eventId}?limit=1000`);
    expect(listed.body.items).toHaveLength(400);
  }, 60_000);

  it('block and unblock take 200 ids or barcodes and refuse 201', async () => {
    const listed = await alice.call('GET', `/checkin/v1/api/guests/${eventId}?limit=1000`);
    const guests = listed.body.items as { id: string; barcode: string }[];
    const byId = guests.slice(0, 201).map((g) => g.id);
    const byBarcode = guests.slice(200, 401).map((g) => g.barcode);
    expect(byBarcode).toHaveLength(200);
    const extraBarcode = guests[0]!.barcode;
    for (const action of ['block', 'unblock']) {
      for (const [label, over, ok] of [
        ['ids', { ids: byId }, { ids: byId.slice(0, 200) }],
        ['barcodes', { barcodes: [...byBarcode, extraBarcode] }, { barcodes: byBarcode }],
      ] as const) {
        const before = await head();
        const refused = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/${action}`, { ...over, reason: 'refund' });
        expectErrorShape(refused, 400, 'validation_error', `${action} 201 ${label}`);
        expect(await head(), `${action} 201 ${label} wrote`).toBe(before);
        const done = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/${action}`, { ...ok, reason: 'refund' });
        expect(done.status, `${action} 200 ${label}: ${JSON.stringify(done.body).slice(0, 200)}`).toBe(200);
      }
    }
  }, 60_000);
});

describe('the source IP behind a proxy (spec: Limits, per source IP)', () => {
  let service: TestService | undefined;
  afterAll(() => service?.close());

  async function statuses(forwardedFor: (i: number) => string, count: number): Promise<number[]> {
    const seen: number[] = [];
    for (let i = 0; i < count; i++) {
      seen.push((await request(service!.url, 'GET', '/checkin/v1/api/events', undefined, { 'x-forwarded-for': forwardedFor(i) })).status);
    }
    return seen;
  }

  it('counts a client whose proxy writes its address with the source port (Azure Application Gateway) by its address alone', async () => {
    service = await startTestService({ RATE_LIMIT_PER_MINUTE: '3', TRUST_PROXY: '1' });
    // A new connection, a new source port: still one client.
    expect(await statuses((i) => `203.0.113.77:${50000 + i}`, 5)).toEqual([401, 401, 401, 429, 429]);
    expect(await statuses(() => '203.0.113.77', 1)).toEqual([429]);
    expect(await statuses((i) => `[2001:db8:77:1::${i + 1}]:${40000 + i}`, 5)).toEqual([401, 401, 401, 429, 429]);
    // Another address still has its own budget.
    expect(await statuses(() => '203.0.113.78:50000', 1)).toEqual([401]);
  }, 60_000);
});

describe('500 and 429 as the document states them (spec: Errors)', () => {
  let service: TestService | undefined;
  afterAll(() => service?.close());

  it('lists 500 internal_error on every operation, and 429 rate_limit with its Retry-After header, as the service answers them', async () => {
    let failing = false;
    service = await startTestService({}, {
      // An event store that throws something no mapper knows: the unexpected error of the Errors table.
      wrapEventStore: (store) =>
        new Proxy(store, {
          get(target, property, receiver) {
            const value = Reflect.get(target, property, receiver);
            if (typeof value !== 'function') return value;
            if (property !== 'append' && property !== 'appendMany') return value.bind(target);
            return (...args: unknown[]) => {
              if (failing) throw new Error('SQLITE_CORRUPT: database disk image is malformed (/var/lib/checkin/events.sqlite)');
              return value.apply(target, args);
            };
          },
        }),
    });
    const alice = await createClient(service);
    const eventId = await newEvent(alice);
    failing = true;
    const failed = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ada' });
    failing = false;
    expectErrorShape(failed, 500, 'internal_error', 'unexpected error');
    expect(failed.body.message).toMatch(/retry/);
    expect(JSON.stringify(failed.body)).not.toMatch(/SQLITE|sqlite|\/var\//);

    const document = (await request(service.url, 'GET', '/openapi.json')).body;
    const ops = await operations(service.url);
    for (const op of ops) {
      const responses = document.paths[op.path][op.method.toLowerCase()].responses;
      const what = `${op.method} ${op.path}`;
      expect(responses['500']?.content?.['application/json']?.example, what).toEqual({ code: failed.body.code, message: failed.body.message });
      expect(responses['429']?.content?.['application/json']?.example?.code, what).toBe('rate_limit');
      expect(responses['429']?.headers?.['Retry-After']?.required, what).toBe(true);
    }
  }, 60_000);
});

describe('a request refused with 429 writes nothing (spec: Limits)', () => {
  let service: TestService | undefined;
  afterAll(() => service?.close());

  it('sends over the send limit and creates over the whole-API limit change nothing; a send counts against both', async () => {
    service = await startTestService({ RATE_LIMIT_PER_MINUTE: '20', SEND_RATE_LIMIT_PER_MINUTE: '1', TRUST_PROXY: 'loopback' });
    // The setup runs from loopback's own budget; the client under test is 198.51.100.9.
    const alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    const eventId = await newEvent(alice);
    const guestId = '7a1c2a9e-3b4d-4c5e-8f70-112233445566';
    await alice.call('POST', '/checkin/v1/api/guest', { id: guestId, eventId, firstName: 'Ada', email: 'ada@example.com' });
    const template = await alice.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invite', html: '<p>Hello</p>' });
    const from = { 'x-forwarded-for': '198.51.100.9' };
    const send = () => alice.call('POST', '/comms/v1/api/comms/send', { templateId: template.body.id, attendeeIds: [guestId] }, from);

    const first = await send();
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const refusedSend = await send();
    expectErrorShape(refusedSend, 429, 'rate_limit', 'second send');
    expect(Number(refusedSend.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // Both sends counted against the whole-API budget of 20: after 17 more requests, one is left.
    for (let i = 0; i < 17; i++) expect((await alice.call('GET', `/checkin/v1/api/event/${eventId}`, undefined, from)).status).toBe(200);
    expect((await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Bo' }, from)).status).toBe(200);
    const refusedCreate = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Cy' }, from);
    expectErrorShape(refusedCreate, 429, 'rate_limit', 'create over the whole-API limit');
    expect(refusedCreate.headers.get('retry-after')).toBe('60');

    const invitations = await alice.call('GET', `/comms/v1/api/comms/invitations?eventId=${encodeURIComponent(eventId)}`);
    expect(invitations.body.items).toHaveLength(1);
    const guests = await alice.call('GET', `/checkin/v1/api/guests/${eventId}`);
    expect(guests.body.items.map((g: { firstName: string }) => g.firstName).sort()).toEqual(['Ada', 'Bo']);
  }, 60_000);
});
