import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, request, startTestService, type Client, type TestService } from '../support/service.js';

// What an integrator meets who generates a typed client from GET /openapi.json (docs/api.md).
const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

let service: TestService;
let client: Client;
let doc: any;

beforeAll(async () => {
  service = await startTestService();
  client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  doc = (await request(service.url, 'GET', '/openapi.json')).body;
});
afterAll(() => service.close());

type Operation = { operationId?: string; security?: unknown[] };
const operationsOf = (section: Record<string, Record<string, Operation>>) =>
  Object.entries(section ?? {}).flatMap(([p, item]) => Object.entries(item).map(([method, op]) => ({ label: `${method.toUpperCase()} ${p}`, op })));

/** Every schema object of the document, with where it is. */
function* schemasOf(value: unknown, where: string): Generator<{ where: string; schema: Record<string, any> }> {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) yield* schemasOf(item, `${where}/${i}`);
  } else if (value && typeof value === 'object') {
    yield { where, schema: value as Record<string, any> };
    for (const [key, item] of Object.entries(value)) if (key !== 'example' && key !== 'examples') yield* schemasOf(item, `${where}/${key}`);
  }
}

describe('a client generated from the served document (openapi-typescript + openapi-fetch)', () => {
  it('type-checks with tsc and round-trips event, template, guests, door scan, stats, team member, webhook, user and export', async () => {
    const dir = fs.mkdtempSync(path.join(root, 'node_modules', '.cache-sdkhunt-'));
    try {
      fs.writeFileSync(path.join(dir, 'api.d.ts'), astToString(await openapiTS(doc)));
      fs.copyFileSync(path.join(here, 'sdkhunt-client', 'client.ts'), path.join(dir, 'client.ts'));
      fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] },
        files: ['client.ts', 'api.d.ts'],
      }));
      const checked = await promisify(execFile)(process.execPath, [tsc, '-p', dir]).then(() => '', (e: { stdout: string }) => e.stdout);
      expect(checked).toBe('');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }

    // Imported by a path tsc does not follow: the program compiles only next to its generated ./api.js.
    const program = path.join(here, 'sdkhunt-client', 'client.ts');
    const { roundTrip } = (await import(/* @vite-ignore */ program)) as { roundTrip: (...args: unknown[]) => Promise<any> };
    const read = await roundTrip(service.url, client, client.email, client.id);
    expect(read.templateRead).toEqual(read.template);
    expect(read.upsertStatus).toBe(204);
    expect(read.byInfo.map((g: { id: string }) => g.id)).toEqual([read.guest.id]);
    expect(read.scan).toMatchObject({ result: 'admitted', plusOnesAdmitted: 1 });
    expect(read.admittedAt?.toISOString()).toBe(read.scan.guest?.admitted);
    expect(read.stats).toMatchObject({ invited: 1, admitted: 1, insideNow: { guests: 1, people: 2 } });
    expect(read.member.userName).toBe('sdk-door-1');
    expect(read.team.find((row: { teamMemberId: string }) => row.teamMemberId === client.id)).toMatchObject({ checkedIn: 2, checkedOut: 0 });
    expect(read.team.find((row: { teamMemberId: string }) => row.teamMemberId === read.member.id)).toMatchObject({ username: 'sdk-door-1', checkedIn: 0 });
    expect(read.webhook.secret).toEqual(expect.any(String));
    expect(read.webhookRead.url).toBe('https://hooks.example.com/sdk');
    expect(read.user.id).toBe(client.id);
    expect(read.userUpdateStatus).toBe(204);
    expect(read.exported.rowCount).toBe(1);
    expect(read.csv).toContain('Ada');
  });

  it('names every operation, webhooks included, with a unique identifier a generator can use as a method name', () => {
    const ids = [...operationsOf(doc.paths), ...operationsOf(doc.webhooks)].map(({ label, op }) => ({ label, id: op.operationId }));
    expect(ids.filter(({ id }) => !/^[A-Za-z][A-Za-z0-9]*$/.test(id ?? ''))).toEqual([]);
    expect(new Set(ids.map(({ id }) => id)).size).toBe(ids.length);
    expect(ids.map(({ id }) => id)).toContain('commsSpamReportedWebhook');
  });

  it('states security on every operation: both headers on the API, none on a webhook (its signature authenticates it)', () => {
    for (const { label, op } of operationsOf(doc.paths)) {
      expect(op.security, label).toEqual(label.includes(' /admin/') ? [{ adminKey: [] }] : [{ bearer: [], subscriptionKey: [] }]);
    }
    for (const { label, op } of operationsOf(doc.webhooks)) expect(op.security, label).toEqual([]);
  });

  it('names every JSON body a client sends or reads: a component, or a list or page of one (no type named after an operation)', () => {
    const inline: string[] = [];
    const named = (schema: Record<string, any>) => '$ref' in schema || '$ref' in (schema.items ?? {}) || '$ref' in (schema.properties?.items?.items ?? {});
    for (const { label, op } of operationsOf(doc.paths) as { label: string; op: any }[]) {
      const bodies = [op.requestBody, ...Object.entries(op.responses).filter(([status]) => status.startsWith('2')).map(([, answer]) => answer)];
      for (const body of bodies) {
        const schema = body?.content?.['application/json']?.schema;
        if (schema && !named(schema)) inline.push(label);
      }
    }
    expect(inline).toEqual([]);
  });

  it('declares every instant the service answers as a date-time (spec: timestamps are ISO 8601 date-time strings)', () => {
    const undeclared: string[] = [];
    for (const { where, schema } of schemasOf(doc.components.schemas, '')) {
      for (const [name, property] of Object.entries((schema.properties ?? {}) as Record<string, any>)) {
        const instant = /(At|^at|^created|^updated)$/.test(name);
        const text = property?.type === 'string' || (Array.isArray(property?.type) && property.type.includes('string'));
        if (instant && text && property.format !== 'date-time') undeclared.push(`${where}/${name}`);
      }
    }
    expect(undeclared).toEqual([]);
  });

  it('lists no schema twice in an anyOf, and gives each branch of a oneOf/anyOf body the type of the field it requires', () => {
    for (const { where, schema } of schemasOf(doc.components.schemas, '')) {
      for (const key of ['anyOf', 'oneOf'] as const) {
        const branches = (schema[key] ?? []) as Record<string, any>[];
        expect(new Set(branches.map((b) => JSON.stringify(b))).size, `${where}/${key}`).toBe(branches.length);
        for (const branch of branches) {
          for (const field of branch.required ?? []) expect(branch.properties?.[field]?.type, `${where}/${key} ${field}`).toBeDefined();
        }
      }
    }
  });
});
