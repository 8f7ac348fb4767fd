/**
 * The published document as integrators meet it (docs/api.md, "The OpenAPI document"): linted by
 * @redocly/cli with the rules of redocly.yaml, every example valid against its schema (JSON
 * Schema 2020-12, as OpenAPI 3.1 reads it), and real answers of the service valid against the
 * schemas the document gives them: a field the server always sends is required, a field it
 * leaves out or sends as null is optional or nullable.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commsApi, until } from '../support/flows.js';
import { createClient, request, startTestService, type Client, type TestService } from '../support/service.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { default: Ajv2020 } = require('ajv/dist/2020') as { default: new (options: object) => AjvLike };

interface AjvLike {
  addSchema(schema: object, key: string): void;
  validate(schema: object, data: unknown): boolean;
  errorsText(errors?: unknown): string;
  errors?: unknown;
}

let service: TestService;
let client: Client;
let doc: any;
const receivers: Receiver[] = [];

beforeAll(async () => {
  service = await startTestService({ WEBHOOK_ALLOW_INSECURE: 'true' });
  client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  doc = (await request(service.url, 'GET', '/openapi.json')).body;
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await service.close();
});

type Operation = { operationId?: string; parameters?: any[]; responses: Record<string, any> };
const operationsOf = (paths: Record<string, Record<string, Operation>>) =>
  Object.entries(paths).flatMap(([p, item]) => Object.entries(item).map(([method, op]) => ({ label: `${method.toUpperCase()} ${p}`, op })));

/** An ajv that reads the document's `#/components/...` references. */
function documentValidator() {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false, logger: false });
  // References inside the document point at its root: keep them, under the document's own key.
  const rooted = JSON.parse(JSON.stringify({ components: doc.components }).replaceAll('"#/components/', '"openapi.json#/components/'));
  ajv.addSchema(rooted, 'openapi.json');
  const resolve = (schema: object) => JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi.json#/components/'));
  return (schema: object, value: unknown): string | undefined => (ajv.validate(resolve(schema), value) ? undefined : ajv.errorsText(ajv.errors));
}

describe('the served OpenAPI document is lint-clean (@redocly/cli, redocly.yaml)', () => {
  it('has no linter error: operations named, summed up and tagged, parameters described, examples valid against their schemas', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oaslint-'));
    try {
      const file = path.join(dir, 'openapi.json');
      fs.writeFileSync(file, JSON.stringify(doc));
      const cli = path.join(path.dirname(require.resolve('@redocly/cli/package.json')), 'bin', 'cli.js');
      const run = await promisify(execFile)(process.execPath, [cli, 'lint', file, '--config', path.join(root, 'redocly.yaml'), '--format', 'json'], {
        cwd: dir,
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
        maxBuffer: 64 * 1024 * 1024,
      }).then(
        (r) => r.stdout,
        (e: { stdout: string; stderr: string }) => e.stdout || e.stderr,
      );
      const report = JSON.parse(run.slice(run.indexOf('{'))) as { problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[] };
      const errors = report.problems.filter((p) => p.severity === 'error').map((p) => `${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`);
      expect(errors).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('declares every tag an operation uses, with a description', () => {
    const declared = new Map((doc.tags ?? []).map((t: { name: string; description?: string }) => [t.name, t.description]));
    const used = new Set(operationsOf(doc.paths).flatMap(({ op }) => (op as any).tags as string[]));
    for (const tag of used) expect(declared.get(tag), tag).toEqual(expect.any(String));
  });

  it('describes every parameter', () => {
    const bare = operationsOf(doc.paths).flatMap(({ label, op }) => (op.parameters ?? []).filter((p) => !p.description).map((p) => `${label} ${p.in} ${p.name}`));
    expect(bare).toEqual([]);
  });
});

describe('examples and answers hold against the document (ajv, JSON Schema 2020-12)', () => {
  it('every example of a request or response body is valid against its schema', () => {
    const check = documentValidator();
    const wrong: string[] = [];
    let checked = 0;
    for (const { label, op } of [...operationsOf(doc.paths), ...operationsOf(doc.webhooks)] as { label: string; op: any }[]) {
      const media = [
        ['request', op.requestBody?.content?.['application/json']],
        ...Object.entries(op.responses ?? {}).map(([code, answer]: [string, any]) => [code, answer.content?.['application/json']]),
      ] as [string, { schema?: object; example?: unknown } | undefined][];
      for (const [where, content] of media) {
        if (!content?.schema || content.example === undefined) continue;
        checked += 1;
        const problem = check(content.schema, content.example);
        if (problem) wrong.push(`${label} ${where}: ${problem}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(checked).toBeGreaterThan(400);
  });

  it('every error answer carries the Error schema', () => {
    const bare = operationsOf(doc.paths).flatMap(({ label, op }) =>
      Object.entries(op.responses)
        .filter(([code]) => !code.startsWith('2'))
        .filter(([, answer]) => answer.content?.['application/json']?.schema?.$ref !== '#/components/schemas/Error')
        .map(([code]) => `${label} ${code}`),
    );
    expect(bare).toEqual([]);
  });

  it('shares one named page schema per item type: every list answer refers to a component, none repeats the wrapper inline', () => {
    const inline: string[] = [];
    for (const { label, op } of operationsOf(doc.paths)) {
      const schema = op.responses['200']?.content?.['application/json']?.schema;
      if (schema && !schema.$ref && schema.properties?.items) inline.push(label);
    }
    expect(inline).toEqual([]);
    const page = doc.components.schemas.EventResponsePage;
    expect(page).toMatchObject({ type: 'object', required: ['items'], properties: { items: { type: 'array', items: { $ref: '#/components/schemas/EventResponse' } } } });
    expect(doc.paths['/checkin/v1/api/events'].get.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/EventResponsePage' });
  });

  it('types every part of a guest’s personal-data document (GDPR art. 15), no open {} object, and the real answer matches it', async () => {
    const schema = doc.components.schemas.GuestPersonalData;
    const open: string[] = [];
    const walk = (node: any, where: string): void => {
      if (!node || typeof node !== 'object') return;
      if (node.type === 'object' && !node.properties && !node.$ref) open.push(where);
      for (const [key, value] of Object.entries(node)) if (key !== 'example') walk(value, `${where}/${key}`);
    };
    walk(schema, '');
    expect(open).toEqual([]);
    const refOf = (s: any) => s.$ref ?? s.allOf?.find((part: any) => part.$ref)?.$ref;
    expect(refOf(schema.properties.guest)).toBe('#/components/schemas/GuestResponse');
    expect(refOf(schema.properties.scans.items)).toBe('#/components/schemas/ScanRecord');
    expect(refOf(schema.properties.invitations.items)).toBe('#/components/schemas/Invitation');
    expect(refOf(schema.properties.history.items)).toBe('#/components/schemas/GuestHistoryEntry');

    // A guest invited by email (a comms event, a webhook delivery), admitted at the door, and one unmatched scan.
    const receiver = await startReceiver();
    receivers.push(receiver);
    expect((await client.call('POST', `${commsApi}/webhook`, { url: receiver.url })).status).toBe(200);
    const event = (await client.call('POST', '/checkin/v1/api/event', { title: 'Lint gala', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-13T02:00:00Z' })).body;
    const template = (await client.call('POST', `${commsApi}/template`, { eventId: event.id, name: 'Pass', subject: 'Pass', html: '<p>Hi {{firstName}}</p>' })).body;
    const guest = (await client.call('POST', '/checkin/v1/api/guest', { eventId: event.id, firstName: 'Ada', email: 'ada@example.com', barcode: 'LINT-1', commsTemplateId: template.id })).body;
    expect((await client.call('POST', `/checkin/v1/api/guests/${event.id}/checkin`, { barcode: 'LINT-1' })).status).toBe(200);
    await client.call('POST', `/checkin/v1/api/guests/${event.id}/checkin`, { customId: guest.id });
    const access = await until(async () => {
      const reply = await client.call('GET', `/checkin/v1/api/guest/${guest.id}/personal-data`);
      return reply.body.commsEvents?.length && reply.body.commsEvents.every((e: any) => e.delivery) ? reply.body : undefined;
    }, 'the invitation’s comms event and its webhook delivery', 60_000);
    expect(access.invitations.length).toBe(1);
    expect(access.scans.length).toBe(1);
    expect(access.unmatchedScans.length).toBe(1);
    const check = documentValidator();
    expect(check({ $ref: '#/components/schemas/GuestPersonalData' }, access)).toBeUndefined();
    // The check has teeth: a scan without its id, or a delivery without its status, is not what the document says.
    expect(check({ $ref: '#/components/schemas/GuestPersonalData' }, { ...access, scans: [{ ...access.scans[0], scanId: undefined }] })).toMatch(/scanId/);
    const { status: _status, ...noStatus } = access.commsEvents[0].delivery;
    expect(check({ $ref: '#/components/schemas/GuestPersonalData' }, { ...access, commsEvents: [{ ...access.commsEvents[0], delivery: noStatus }] })).toMatch(/status/);
  });

  it('real answers of the list and read routes are valid against their documented 200 schema', async () => {
    const check = documentValidator();
    const event = (await client.call('POST', '/checkin/v1/api/event', { title: 'Lint list', startTime: '2026-12-12T18:00:00Z', endTime: '2026-12-13T02:00:00Z' })).body;
    const template = (await client.call('POST', `${commsApi}/template`, { eventId: event.id, name: 'Pass', subject: 'Pass', html: '<p>Hi</p>' })).body;
    const guest = (await client.call('POST', '/checkin/v1/api/guest', { eventId: event.id, firstName: 'Bo', barcode: 'LINT-2' })).body;
    await client.call('POST', `/checkin/v1/api/guests/${event.id}/checkin`, { barcode: 'LINT-2' });
    const reads: [string, string][] = [
      ['/checkin/v1/api/events', '/checkin/v1/api/events'],
      ['/checkin/v1/api/event/{id}', `/checkin/v1/api/event/${event.id}`],
      ['/checkin/v1/api/guests/{eventId}', `/checkin/v1/api/guests/${event.id}`],
      ['/checkin/v1/api/guest/{id}', `/checkin/v1/api/guest/${guest.id}`],
      ['/checkin/v1/api/guest/{id}/history', `/checkin/v1/api/guest/${guest.id}/history`],
      ['/checkin/v1/api/event/{id}/scans', `/checkin/v1/api/event/${event.id}/scans`],
      ['/checkin/v1/api/event/{id}/stats', `/checkin/v1/api/event/${event.id}/stats`],
      ['/comms/v1/api/comms/templates', `/comms/v1/api/comms/templates?eventId=${event.id}`],
      ['/comms/v1/api/comms/template/{id}', `/comms/v1/api/comms/template/${template.id}`],
      ['/comms/v1/api/comms/events', '/comms/v1/api/comms/events'],
      ['/comms/v1/api/comms/webhook/deliveries', '/comms/v1/api/comms/webhook/deliveries'],
      ['/comms/v1/api/comms/invitations', `/comms/v1/api/comms/invitations?eventId=${event.id}`],
      ['/checkin/v1/api/team/event/{id}', `/checkin/v1/api/team/event/${event.id}`],
      ['/checkin/v1/api/event/{id}/timeline', `/checkin/v1/api/event/${event.id}/timeline`],
      ['/comms/v1/api/comms/funnel', `/comms/v1/api/comms/funnel?eventId=${event.id}`],
      ['/checkin/v1/api/event/{id}/tickets', `/checkin/v1/api/event/${event.id}/tickets`],
      ['/checkin/v1/api/event/{id}/ticket-keys', `/checkin/v1/api/event/${event.id}/ticket-keys`],
      ['/checkin/v1/api/guest/{id}/ticket', `/checkin/v1/api/guest/${guest.id}/ticket`],
      ['/users/v1/api/users/email', `/users/v1/api/users/email?email=${encodeURIComponent(client.email)}`],
      ['/checkin/v1/api/teammembers/user/{username}/events', `/checkin/v1/api/teammembers/user/${encodeURIComponent(client.email)}/events`],
    ];
    const wrong: string[] = [];
    for (const [documented, url] of reads) {
      const reply = await client.call('GET', url);
      if (reply.status !== 200) {
        wrong.push(`GET ${url}: ${reply.status} ${JSON.stringify(reply.body).slice(0, 200)}`);
        continue;
      }
      const problem = check(doc.paths[documented].get.responses['200'].content['application/json'].schema, reply.body);
      if (problem) wrong.push(`GET ${documented}: ${problem}`);
    }
    expect(wrong).toEqual([]);
  });
});
