import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Aggregator } from 'mingo';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projections } from '../../src/main.js';
import { realServer } from '../support/real-servers.js';
import { passwordToken, request } from '../support/service.js';
import { postSendGridEvents } from '../support/sendgrid-events.js';
import { eventually } from '../webhooks/receiver.js';
import { buildAuditDataset, type AuditDataset } from './audit-dataset.js';

/**
 * docs/read-models.md as an analyst reads it, against the documents an evening built through the
 * API leaves (test/projections/audit-dataset.ts, plus what it lacks: an event with every field, a
 * guest whose create imported an admission, an offline scan sent with an offset, a team member
 * removed, a bounce), read as stored (on MongoDB with the driver, as an analyst's client reads
 * them). Everything is read from the page itself, so a field, a type, an index or an example
 * that drifts from the code fails here:
 * - every field of every document is named in its collection's section (`_pos` and `_seq`, the
 *   store's own marks, in the conventions);
 * - every field has the type the page's "Field types" table gives (a string when it names none),
 *   and every time is an ISO 8601 UTC string with milliseconds, never a BSON date;
 * - every index a projection creates is listed in its collection's section, and exists on MongoDB;
 * - every example query of the page runs and answers what the page says.
 */
const page = fs.readFileSync(path.join(import.meta.dirname, '..', '..', 'docs', 'read-models.md'), 'utf8');

/** The text of the section whose heading names `collection` (team_member_removals lives in team_members'). */
function sectionOf(collection: string): string {
  const heading = collection === 'team_member_removals' ? 'team_members' : collection;
  const match = new RegExp(`^## [^\\n]*\`${heading}\``, 'm').exec(page);
  expect(match, `docs/read-models.md has a section for ${collection}`).not.toBeNull();
  const rest = page.slice(match!.index + 3);
  const end = rest.search(/^## /m);
  return end === -1 ? rest : rest.slice(0, end);
}
const namedIn = (collection: string) => new Set([...sectionOf(collection).matchAll(/`([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!));

const typesSection = page.slice(page.indexOf('## Field types'), page.indexOf('## The same rows'));
type Kind = 'number' | 'boolean' | 'array' | 'object';
/** collection -> field -> type, from the page's table (a field it does not name is a string). */
const typeTable: Record<string, Record<string, Kind>> = {};
for (const row of typesSection.matchAll(/^\| `([a-z_]+)` \|(.*)\|\s*$/gm)) {
  const cells = row[2]!.split('|');
  const kinds: Kind[] = ['number', 'boolean', 'array', 'object'];
  typeTable[row[1]!] = Object.fromEntries(cells.flatMap((cell, i) => [...cell.matchAll(/`([A-Za-z_]+)`/g)].map((m) => [m[1]!, kinds[i]!])));
}

const kindOf = (value: unknown): string =>
  value instanceof Date ? 'BSON date' : Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value === 'object' ? 'object' : typeof value;
const isoMillis = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const timeFields = new Set(['created', 'updated', 'at', 'admitted', 'discharged', 'blockedDate', 'validFrom', 'validTo', 'startTime', 'endTime', 'sessionsValidAfter']);
const isTimeField = (collection: string, field: string) => (timeFields.has(field) || /[a-z]At$/.test(field)) && typeTable[collection]?.[field] !== 'number';

/** Fields the table types that this evening does not write (each needs a scenario of its own). */
const notThisEvening: Record<string, string[]> = {
  accounts: ['retentionDays'],
  scans: ['forced'],
};

const collections = projections.flatMap((projection) => projection.collections.map((collection) => collection.name));
/** Built by test/projections/read-model-docs-webhooks.test.ts, which needs a webhook receiver. */
const elsewhere = new Set(['webhooks', 'webhook_deliveries', 'sending_domains']);

/** `{a, b: -1}` as the page writes an index. */
const indexText = (keys: Record<string, number>) => `{${Object.entries(keys).map(([key, order]) => (order === 1 ? key : `${key}: ${order}`)).join(', ')}}`;

interface Example {
  title: string;
  code: string;
}
const examples: Example[] = [...typesSection.matchAll(/([^\n]+(?:\n[^\n]+)*)\n\n```js\n([\s\S]*?)\n```/g)].map((m) => ({ title: m[1]!, code: m[2]! }));

type Query = { collection: string; filter?: Record<string, unknown>; sort?: Record<string, 1 | -1>; pipeline?: Record<string, unknown>[] };
/** Reads `db.<collection>.find(filter).sort(sort)` or `db.<collection>.aggregate(pipeline)` as mongosh would. */
function parseExample(code: string, ids: Record<string, string>): Query {
  const source = code.replace(/"<(\w+)>"/g, (_, name: string) => JSON.stringify(ids[name] ?? expect.fail(`unknown placeholder <${name}>`)));
  const db = new Proxy({}, {
    get: (_, collection: string) => ({
      find: (filter: Record<string, unknown>) => ({ sort: (sort: Record<string, 1 | -1>) => ({ collection, filter, sort }) }),
      aggregate: (pipeline: Record<string, unknown>[]) => ({ collection, pipeline }),
    }),
  });
  return new Function('db', 'ISODate', `return ${source}`)(db, (text: string) => new Date(text)) as Query;
}

const mongo = await realServer('mongo');
const stores: [string, Record<string, string>][] = [['embedded store', {}]];
if (mongo.url) stores.push(['MongoDB read store', { MONGO_URL: mongo.url, MONGO_DB: `readmodeldocs_${randomUUID().replaceAll('-', '').slice(0, 12)}` }]);
else describe.skip(`read models on MongoDB (skipped: ${mongo.skipReason})`, () => it('runs when MONGO_URL or a container runtime is available', () => {}));

describe.each(stores)('docs/read-models.md: fields, types, indexes and examples (%s)', (_name, env) => {
  let data: AuditDataset;
  let dee: string;
  let eve: string;
  let offlineScanId: string;
  let client: MongoClient | undefined;
  const docs: Record<string, Record<string, unknown>[]> = {};

  /** Runs a query as an analyst would: with the driver on MongoDB, through the store (filters) or mingo (pipelines) on the embedded store. */
  async function run(query: Query): Promise<Record<string, unknown>[]> {
    if (client) {
      const collection = client.db(env.MONGO_DB).collection(query.collection);
      return (query.pipeline ? await collection.aggregate(query.pipeline).toArray() : await collection.find(query.filter!).sort(query.sort!).toArray()) as Record<string, unknown>[];
    }
    const store = data.service.platform.readStore.collection(query.collection);
    if (query.pipeline) return new Aggregator(query.pipeline).run(docs[query.collection]!) as Record<string, unknown>[];
    const found: Record<string, unknown>[] = [];
    for await (const doc of store.stream(query.filter!, { sort: query.sort, readOnly: true })) found.push(doc as Record<string, unknown>);
    return found;
  }

  beforeAll(async () => {
    data = await buildAuditDataset(env);
    const { service, alice, eventId, templateId } = data;
    const ok = (reply: { status: number; body: any }, status = 200) => {
      if (reply.status !== status) throw new Error(`expected ${status}, got ${reply.status} ${JSON.stringify(reply.body)}`);
      return reply.body;
    };
    ok(await alice.call('POST', '/checkin/v1/api/event', {
      id: eventId, title: 'Gala', startTime: '2026-11-01T18:00:00Z', endTime: '2026-11-01T23:00:00Z', timeZoneId: 'Europe/Berlin',
      active: true, tags: 'gala,vip', customData: '{"room":"Main hall"}', retentionDays: 30,
    }));
    ({ id: dee } = ok(await alice.call('POST', '/checkin/v1/api/guest', {
      eventId, firstName: 'Dee', otherNames: 'Q', lastName: 'Adams', additionalInfo: 'Table 4', barcode: ' BC-4 ', isGroup: true, plusOnes: 1,
      validFrom: '2026-11-01T17:00:00+01:00', validTo: '2026-11-02T02:00:00+01:00', admitted: '2026-11-01T18:05:00Z', admittedPlusOnes: 1,
    })));
    ok(await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Fay', lastName: 'Fox', admitted: '2026-11-01T18:10:00Z', discharged: '2026-11-01T20:00:00Z' }));
    ({ id: eve } = ok(await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Eve', lastName: 'Zed', email: 'eve@example.com', commsTemplateId: templateId })));
    const userName = `door2-${randomUUID().slice(0, 8)}`;
    ok(await alice.call('POST', '/checkin/v1/api/teammember', { userName, password: 'door staff pass 2', email: 'door2@example.com', canForce: true }));
    const member = { authorization: `Bearer ${await passwordToken(service.url, userName, 'door staff pass 2')}`, 'ocp-apim-subscription-key': alice.subscriptionKey };
    const { id: gone } = ok(await alice.call('POST', '/checkin/v1/api/teammember', { userName: `door3-${randomUUID().slice(0, 8)}`, password: 'door staff pass 3', email: 'door3@example.com' }));
    ok(await alice.call('DELETE', `/checkin/v1/api/teammember/${gone}`), 204);
    // An offline scan: the scanner's time with an offset, stored in UTC.
    ({ scanId: offlineScanId } = ok(await request(service.url, 'POST', `/checkin/v1/api/guests/${eventId}/checkin`, { guestId: eve, gate: 'C', nonce: 'n-1', at: '2026-11-01T19:30:00+01:00' }, member)));
    const invitation = await eventually(async () => {
      const reply = await alice.call('GET', `/comms/v1/api/comms/invitations?attendeeId=${eve}`);
      return reply.body.items?.[0]?.status === 'sent' ? reply.body.items[0] : undefined;
    }, 30_000, "Eve's invitation sent");
    const bounce = { email: 'eve@example.com', timestamp: Math.floor(Date.now() / 1000), attendeeInvitationId: invitation.attendeeInvitationId, event: 'bounce', sg_event_id: 'sg-eve', reason: '550 unknown' };
    // The audit dataset's key pair signs SendGrid's reports; the service took its public half.
    const posted = await postSendGridEvents(service.url, data.sendGridKey, [bounce]);
    if (posted.status !== 200) throw new Error(`provider report: ${posted.status} ${await posted.text()}`);
    await eventually(async () => (await alice.call('GET', `/comms/v1/api/comms/invitations/${invitation.attendeeInvitationId}`)).body?.providerStatus === 'bounced' || undefined, 60_000, 'bounce projected');
    await eventually(async () => (await alice.call('GET', `/checkin/v1/api/event/${eventId}/timeline`)).body?.totals?.importedAdmitted >= 1 || undefined, 60_000, 'import projected');
    await eventually(async () => (await alice.call('GET', `/checkin/v1/api/guest/${eve}`)).body?.admitted || undefined, 60_000, 'offline scan projected');
    await eventually(async () => (await alice.call('GET', `/checkin/v1/api/event/${eventId}`)).body?.tags === 'gala,vip' || undefined, 60_000, 'event update projected');

    if (env.MONGO_URL) {
      client = new MongoClient(env.MONGO_URL);
      for (const name of collections) docs[name] = (await client.db(env.MONGO_DB).collection(name).find({}).toArray()) as Record<string, unknown>[];
    } else {
      for (const name of collections) {
        docs[name] = [];
        for await (const doc of service.platform.readStore.collection(name).stream({}, { readOnly: true })) docs[name]!.push(doc as Record<string, unknown>);
      }
    }
  }, 180_000);
  afterAll(async () => {
    await client?.close();
    await data?.service.close();
  });

  const built = collections.filter((name) => !elsewhere.has(name));

  it.each(built)('%s: this evening has documents, and every field of each is named in its section', (name) => {
    expect(docs[name]!.length, `${name} has documents for this evening`).toBeGreaterThan(0);
    const named = namedIn(name);
    const undocumented = new Set<string>();
    for (const doc of docs[name]!) for (const key of Object.keys(doc)) if (!named.has(key) && !['_pos', '_seq'].includes(key)) undocumented.add(key);
    expect([...undocumented]).toEqual([]);
  });

  it('the conventions name the store\'s own marks, _pos and _seq, as not data', () => {
    const conventions = page.slice(page.indexOf('Conventions:'), page.indexOf('## Field types'));
    expect(conventions).toContain('`_pos`');
    expect(conventions).toContain('`_seq`');
  });

  it.each(built)('%s: every field has the type the "Field types" table gives, and every time is an ISO 8601 UTC string with milliseconds', (name) => {
    const wrong: string[] = [];
    for (const doc of docs[name]!) {
      for (const [key, value] of Object.entries(doc)) {
        if (key === '_pos' || key === '_seq') continue;
        const expected: Kind | 'string' = typeTable[name]?.[key] ?? 'string';
        if (kindOf(value) !== expected) wrong.push(`${key}: ${kindOf(value)}, documented ${expected}`);
        else if (typeof value === 'string' && isTimeField(name, key) && !isoMillis.test(value as string)) wrong.push(`${key}: ${JSON.stringify(value)} is not a UTC time with milliseconds`);
      }
    }
    expect([...new Set(wrong)]).toEqual([]);
  });

  it('every field the "Field types" table names is written by this evening (or is listed as needing another scenario)', () => {
    const missing: string[] = [];
    for (const [name, fields] of Object.entries(typeTable)) {
      if (elsewhere.has(name)) continue;
      expect(collections, `the table's ${name} is a projection's collection`).toContain(name);
      for (const field of Object.keys(fields)) {
        if (notThisEvening[name]?.includes(field)) continue;
        if (!docs[name]!.some((doc) => field in doc)) missing.push(`${name}.${field}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('nested times (history steps, funnel reports and entries) are UTC strings too, and the offline scan\'s offset is gone', () => {
    const nested: unknown[] = [
      ...docs.invitations!.flatMap((doc) => (doc.history as { at: unknown }[]).map((step) => step.at)),
      ...docs.funnel_invitations!.flatMap((doc) => Object.values((doc.provider ?? {}) as object)),
      ...docs.funnel_arrivals!.flatMap((doc) => Object.values((doc.entries ?? {}) as object)),
    ];
    expect(nested.length).toBeGreaterThan(3);
    for (const value of nested) expect(value).toMatch(isoMillis);
    expect(docs.scans!.find((scan) => scan._id === offlineScanId)).toMatchObject({ at: '2026-11-01T18:30:00.000Z', nonce: 'n-1', gate: 'C' });
    expect(docs.guests!.find((guest) => guest.guestId === dee)).toMatchObject({ validFrom: '2026-11-01T16:00:00.000Z', admitted: '2026-11-01T18:05:00.000Z', barcodeTrimmed: 'BC-4', isGroup: true });
  });

  it('an erased guest keeps ids, times and tags, and has no personal field nor a ...Lower copy', () => {
    const cy = docs.guests!.find((guest) => guest.guestId === data.cy)!;
    expect(cy).toMatchObject({ _id: `${data.alice.id}:${data.cy}`, clientId: data.alice.id, eventId: data.eventId, erased: true, tags: 'staff', tagList: ['staff'] });
    const personal = ['firstName', 'otherNames', 'lastName', 'email', 'customId', 'barcode', 'barcodeTrimmed', 'additionalInfo', 'image'];
    expect(Object.keys(cy).filter((key) => personal.includes(key) || key.endsWith('Lower'))).toEqual([]);
    expect(docs.erased_custom_ids).toEqual([expect.objectContaining({ _id: cy._id, clientId: data.alice.id, eventId: data.eventId, customIdKey: expect.stringMatching(/^#[^.]+\.[A-Za-z0-9_-]{43}$/) })]);
  });

  it('ids have the documented shapes', () => {
    const { alice, eventId } = data;
    const guid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    expect(docs.events!.find((event) => event.eventId === eventId)!._id).toBe(`${alice.id}:${eventId}`);
    for (const guest of docs.guests!) expect(guest._id).toBe(`${guest.clientId}:${guest.guestId}`);
    for (const scan of docs.scans!) expect(scan._id).toMatch(guid);
    for (const invitation of docs.invitations!) expect(invitation._id).toMatch(guid);
    for (const account of docs.accounts!) expect(account._id).toMatch(guid);
    for (const member of docs.team_members!) expect(member._id).toBe(`${member.clientId}:${member.teamMemberId}`);
    expect(docs.team_member_removals).toEqual([expect.objectContaining({ clientId: alice.id, removedAt: expect.stringMatching(isoMillis) })]);
    expect(docs.comms_suppressions).toEqual([expect.objectContaining({ _id: expect.stringMatching(new RegExp(`^${alice.id}#`)), clientId: alice.id, reason: expect.any(String) })]);
    for (const minute of docs.timeline_minutes!) expect(minute._id).toMatch(new RegExp(`^${minute.clientId}:${minute.eventId}:${minute.minute}(:gate|:device)?$`));
  });

  it('every index a projection creates is listed in its collection\'s section, and exists on MongoDB', async () => {
    for (const projection of projections) {
      for (const { name, indexes } of projection.collections) {
        const section = sectionOf(name);
        for (const index of indexes) {
          const text = indexText(index.keys as Record<string, number>);
          // A one-key index may be written bare (`customIdKey`).
          expect(section.includes(`\`${text}\``) || (Object.keys(index.keys).length === 1 && section.includes(`index \`${Object.keys(index.keys)[0]}\``)), `${name}: index ${text} in docs/read-models.md`).toBe(true);
        }
        if (client && indexes.length > 0) {
          const existing = (await client.db(env.MONGO_DB).collection(name).listIndexes().toArray()).map((index) => JSON.stringify(index.key));
          for (const index of indexes) expect(existing, `${name}: index ${indexText(index.keys as Record<string, number>)} on MongoDB`).toContain(JSON.stringify(index.keys));
        }
      }
    }
  });

  it('the page\'s example queries answer what it says', async () => {
    const { alice, eventId } = data;
    const ids = { clientId: alice.id, eventId };
    /** What each example answers for this evening, in the page's order. */
    const expected: [string, (found: Record<string, unknown>[]) => void][] = [
      ['Guests inside now', (found) => expect(found.map((guest) => guest.guestId)).toEqual([dee, eve])],
      ['Check-ins between', (found) => expect(found.map((scan) => [scan._id, scan.at])).toEqual([[offlineScanId, '2026-11-01T18:30:00.000Z']])],
      ['with a BSON date matches nothing', (found) => expect(found).toEqual([])],
      ['without milliseconds misses', (found) => expect(found).toEqual([])],
      ['People let in per gate', (found) => expect(found).toEqual([{ _id: 'A', people: 2 }, { _id: 'C', people: 1 }])],
      ['Invitations per furthest provider report', (found) => expect(found).toEqual([{ _id: 'bounced', invitations: 1 }, { _id: 'opened', invitations: 1 }])],
    ];
    expect(examples.map((example) => example.title)).toHaveLength(expected.length);
    for (const [i, example] of examples.entries()) {
      const [title, check] = expected[i]!;
      expect(example.title, `example ${i + 1}`).toContain(title);
      check(await run(parseExample(example.code, ids)));
    }
  });
});
