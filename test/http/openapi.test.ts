import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ZodType } from 'zod';
import { createClient, request, startTestService, type Client, type TestService } from '../support/service.js';
import { registry } from '../../src/http/openapi.js';
import { commsEventTypes } from '../../src/domain/webhook.js';

let service: TestService;
let client: Client;

beforeAll(async () => {
  service = await startTestService();
  client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
});
afterAll(() => service.close());

describe('OpenAPI document', () => {
  it('describes only routes that exist: every documented method and path reaches a handler', async () => {
    const doc = (await request(service.url, 'GET', '/openapi.json')).body;
    const uuid = '00000000-0000-4000-8000-000000000000';
    const operations = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
      Object.keys(item).map((method) => ({ method: method.toUpperCase(), path })),
    );
    expect(operations.length).toBeGreaterThan(30);
    for (const { method, path } of operations) {
      const concrete = path.replace(/\{(\w+)\}/g, (_m, name: string) => (name === 'username' ? 'nobody' : uuid));
      const reply = await client.call(method, concrete, method === 'GET' ? undefined : {}, {
        authorization: path.startsWith('/admin') ? 'Bearer test-admin-key-0123456789' : `Bearer ${client.token}`,
      });
      const unrouted = reply.status === 404 && String(reply.body?.message ?? '').startsWith('no route for');
      expect(unrouted, `${method} ${path} is documented but not routed`).toBe(false);
    }
  });

  it('documents the error shape and the two security schemes’ headers on secured routes', async () => {
    const doc = (await request(service.url, 'GET', '/openapi.json')).body;
    expect(doc.components.schemas.Error.properties).toHaveProperty('code');
    const post = doc.paths['/checkin/v1/api/guest'].post;
    expect(post.responses).toHaveProperty('401');
    expect(post.requestBody.content['application/json'].schema).toBeDefined();
    expect(post.security).toEqual([{ bearer: [], subscriptionKey: [] }]);
    expect(doc.components.securitySchemes.subscriptionKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'Ocp-Apim-Subscription-Key' });
  });
});

type Operation = {
  operationId?: string;
  requestBody?: { required?: boolean; content: Record<string, { schema?: unknown; example?: unknown }> };
  responses: Record<string, { content?: Record<string, { schema?: unknown; example?: unknown }>; links?: Record<string, { operationId: string }> }>;
};

const operationsOf = (doc: { paths: Record<string, Record<string, Operation>> }) =>
  Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ label: `${method.toUpperCase()} ${path}`, op })));

describe('OpenAPI document: complete for a generated client', () => {
  it('describes every operation’s success answer, with a whole example for each JSON request and response body', async () => {
    const doc = (await request(service.url, 'GET', '/openapi.json')).body;
    const missing: string[] = [];
    for (const { label, op } of operationsOf(doc)) {
      const [status, success] = Object.entries(op.responses).find(([code]) => code.startsWith('2'))!;
      if (status !== '204' && !success.content) missing.push(`${label}: no success body`);
      for (const [type, media] of Object.entries(success.content ?? {})) {
        if (type === 'application/json' && media.example === undefined) missing.push(`${label}: no example of the ${status} body`);
      }
      for (const [code, answer] of Object.entries(op.responses)) {
        if (!code.startsWith('2') && answer.content?.['application/json']?.example === undefined) missing.push(`${label}: no example of ${code}`);
      }
      const body = op.requestBody?.content['application/json'];
      if (body && body.example === undefined) missing.push(`${label}: no request example`);
    }
    expect(missing).toEqual([]);
  });

  it('every example is accepted by the zod schema it illustrates (requests as the route parses them)', () => {
    const wrong: string[] = [];
    let checked = 0;
    for (const definition of registry.definitions) {
      if (definition.type !== 'route') continue;
      const { route } = definition;
      const label = `${route.method.toUpperCase()} ${route.path}`;
      const media = [
        ['request', route.request?.body?.content['application/json']],
        ...Object.entries(route.responses).map(([code, answer]) => [code, 'content' in answer ? answer.content?.['application/json'] : undefined]),
      ] as [string, { schema?: unknown; example?: unknown } | undefined][];
      for (const [where, content] of media) {
        const schema = content?.schema as ZodType | undefined;
        if (!schema || typeof (schema as { safeParse?: unknown }).safeParse !== 'function' || content?.example === undefined) continue;
        checked += 1;
        const result = schema.safeParse(JSON.parse(JSON.stringify(content.example)));
        if (!result.success) wrong.push(`${label} ${where}: ${result.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(checked).toBeGreaterThan(60);
  });

  it('states the enforced rules: one guest identifier, one undo key, a non-empty block, cursor form, password policy, batch size', async () => {
    const doc = (await request(service.url, 'GET', '/openapi.json')).body;
    const schemas = doc.components.schemas;
    // Each branch also carries its field's type, for generated clients (test/http/sdkhunt.test.ts).
    expect(schemas.Scan.oneOf.map((branch: { required: string[] }) => branch.required)).toEqual([['guestId'], ['barcode'], ['customId']]);
    const undo = schemas.CheckInUndo;
    expect(undo.oneOf.map((branch: { required: string[] }) => branch.required)).toEqual([['scanId'], ['nonce'], ['guestId'], ['customId']]);
    expect(schemas.BulkBlock.anyOf).toHaveLength(3);
    const cursor = doc.paths['/checkin/v1/api/events'].get.parameters.find((p: { name: string }) => p.name === 'cursor');
    expect(cursor.schema.pattern).toBe('^[A-Za-z0-9_-]+$');
    expect(schemas.TeamMember.properties.password).toMatchObject({ minLength: 10, maxLength: 200, not: { pattern: '^(.)\\1*$' } });
    expect(schemas.AdminAccountCreate.properties.email.pattern).toBeDefined();
    const batch = doc.paths['/checkin/v1/api/guests/{eventId}'].post.requestBody.content['application/json'].schema;
    expect(batch.maxItems).toBe(200);
    expect(schemas.Event.description).toMatch(/endTime must be after startTime/);
  });

  it('marks a body required exactly when an empty one is refused, and gives the admin API its own security scheme', async () => {
    const doc = (await request(service.url, 'GET', '/openapi.json')).body;
    expect(doc.paths['/checkin/v1/api/event'].post.requestBody.required).toBe(true);
    expect(doc.paths['/comms/v1/api/comms/webhook/test'].post.requestBody.required).toBe(false);
    expect(doc.paths['/admin/v1/accounts'].post.security).toEqual([{ adminKey: [] }]);
    expect(doc.components.securitySchemes.adminKey).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('has unique operation ids, and every link names an operation of the document', async () => {
    const doc = (await request(service.url, 'GET', '/openapi.json')).body;
    const operations = operationsOf(doc);
    const ids = operations.map(({ op }) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    const dangling = operations.flatMap(({ label, op }) =>
      Object.values(op.responses).flatMap((answer) =>
        Object.entries(answer.links ?? {})
          .filter(([, link]) => !ids.includes(link.operationId))
          .map(([name]) => `${label} link ${name}`),
      ),
    );
    expect(dangling).toEqual([]);
    const linked = operations.filter(({ op }) => Object.values(op.responses).some((answer) => answer.links)).length;
    expect(linked).toBeGreaterThanOrEqual(8);
  });

  it('publishes no pattern on a text the spec types string (a template name, an event title): any string is taken', async () => {
    const doc = (await request(service.url, 'GET', '/openapi.json')).body;
    const body = doc.paths['/comms/v1/api/comms/templates'].post.requestBody.content['application/json'].schema;
    const resolved = body.$ref ? doc.components.schemas[body.$ref.split('/').pop()] : body;
    expect(resolved.properties.name.type).toBe('string');
    expect(resolved.properties.name.pattern).toBeUndefined();
    expect(resolved.properties.name.minLength).toBeUndefined();
    const other = await createClient(service);
    const event = await other.call('POST', '/checkin/v1/api/event', { title: '\t ', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' });
    expect(event.status).toBe(200);
  });

  it('writes every field that takes null so that null is valid against the document: no nullable reference under allOf, null among listed values', async () => {
    const doc = (await request(service.url, 'GET', '/openapi.json')).body;
    const nullRefusedBy: string[] = [];
    const walk = (node: unknown, path: string): void => {
      if (!node || typeof node !== 'object') return;
      const n = node as { type?: unknown; enum?: unknown[]; allOf?: Array<{ $ref?: string; type?: unknown }> };
      const nullable = Array.isArray(n.type) && n.type.includes('null');
      if (nullable && Array.isArray(n.enum) && !n.enum.includes(null)) nullRefusedBy.push(`${path}: enum without null`);
      if (n.allOf?.some((part) => part.$ref) && n.allOf.some((part) => Array.isArray(part.type) && part.type.includes('null'))) {
        nullRefusedBy.push(`${path}: allOf a reference that refuses null`);
      }
      for (const [key, value] of Object.entries(node)) walk(value, `${path}/${key}`);
    };
    walk(doc, '#');
    expect(nullRefusedBy).toEqual([]);
    const exportBody = doc.components.schemas.ExportRequest;
    for (const field of ['active', 'timeZoneId', 'tags', 'customData']) expect(exportBody.properties[field].type).toContain('null');
    const own = await createClient(service);
    const event = await own.call('POST', '/checkin/v1/api/event', { title: 'Null fields', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z' });
    const exported = await own.call('POST', '/checkin/v1/api/event/export?type=CSV', {
      id: event.body.id, title: '', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-12T23:00:00Z', active: null, timeZoneId: null, tags: null, customData: null,
    });
    expect(exported.status).toBe(200);
    expect(exported.body.eventId).toBe(event.body.id);
  });

  it('refuses a JSON null where the document asks for an object, and changes nothing', async () => {
    const created = await request(service.url, 'POST', '/admin/v1/accounts', { email: 'null-body@example.com', password: 'a long passphrase 1' }, {
      authorization: 'Bearer test-admin-key-0123456789',
    });
    expect(created.status).toBe(201);
    const reply = await request(service.url, 'PATCH', `/admin/v1/accounts/${created.body.id}`, 'null', {
      authorization: 'Bearer test-admin-key-0123456789',
      'content-type': 'application/json',
    });
    expect(reply.status).toBe(400);
    expect(reply.body.code).toBe('validation_error');
    const event = await client.call('POST', '/checkin/v1/api/event', 'null');
    expect(event.status).toBe(400);
    expect((await client.call('GET', '/checkin/v1/api/events')).body.items).toEqual([]);
  });

  it('counts password length in characters as the document does: 200 emoji are accepted, 201 are not', async () => {
    const admin = { authorization: 'Bearer test-admin-key-0123456789' };
    const ok = await request(service.url, 'POST', '/admin/v1/accounts', { email: 'emoji-200@example.com', password: '🎟️'.slice(0, 2).repeat(199) + 'x' }, admin);
    expect(ok.status).toBe(201);
    const long = await request(service.url, 'POST', '/admin/v1/accounts', { email: 'emoji-201@example.com', password: '🎟'.repeat(200) + 'x' }, admin);
    expect(long.status).toBe(400);
    expect(long.body.code).toBe('weak_password');
  });

  it('documents the export download as a file (CSV or xlsx), not JSON', async () => {
    const doc = (await request(service.url, 'GET', '/openapi.json')).body;
    const download = doc.paths['/checkin/v1/api/event/export/{exportId}'].get.responses['200'];
    expect(Object.keys(download.content)).toEqual(['text/csv', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet']);
    expect(download.headers).toHaveProperty('Content-Disposition');
  });

  it('lists every outgoing comms event under webhooks, with the signature header and the body', async () => {
    const doc = (await request(service.url, 'GET', '/openapi.json')).body;
    expect(Object.keys(doc.webhooks).sort()).toEqual([...commsEventTypes].sort());
    for (const type of commsEventTypes) {
      const post = doc.webhooks[type].post;
      const headers = post.parameters.filter((p: { in: string }) => p.in === 'header').map((p: { name: string }) => p.name);
      expect(headers).toEqual(expect.arrayContaining(['X-Service-Signature', 'X-Service-Webhook-Id', 'X-Service-Event']));
      expect(post.description).toMatch(/HMAC-SHA256/);
      const body = post.requestBody.content['application/json'];
      expect(body.example.type).toBe(type);
      expect(body.schema.properties.data.required).toEqual(
        expect.arrayContaining(['attendeeId', 'templateId', 'attendeeInvitationId', 'status', 'error']),
      );
    }
  });
});
