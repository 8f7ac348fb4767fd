/**
 * The analyst's views as an analyst meets them (docs/analytics.md, docs/read-models.md): the
 * timeline's file export, the funnel's rates under SendGrid's out-of-order reports, and the raw
 * documents of the MongoDB read store. Each case runs on the embedded store and, when MONGO_URL
 * is set (or a container runtime answers), on the MongoDB read store too.
 */
import { parse } from 'csv-parse/sync';
import ExcelJS from 'exceljs';
import { MongoClient } from 'mongodb';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realServer } from '../support/real-servers.js';
import { postSendGridEvents } from '../support/sendgrid-events.js';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually } from '../webhooks/receiver.js';

const mongo = await realServer('mongo');
const stores: [string, Record<string, string>][] = [['embedded store', {}]];
if (mongo.url) stores.push(['MongoDB read store', { MONGO_URL: mongo.url, MONGO_DB: `analyticshunt_${randomUUID().replaceAll('-', '').slice(0, 12)}` }]);
else describe.skip(`analytics on MongoDB (skipped: ${mongo.skipReason})`, () => it('runs when MONGO_URL or a container runtime is available', () => {}));
afterAll(() => mongo.stop());

const ok = (reply: { status: number; body: any }) => {
  if (reply.status >= 300) throw new Error(`${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body;
};
const auth = (client: Client) => ({ authorization: `Bearer ${client.token}`, 'ocp-apim-subscription-key': client.subscriptionKey });

describe.each(stores)('analytics as analysts see them (%s)', (_name, env) => {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  let service: TestService;
  let alice: Client;

  beforeAll(async () => {
    service = await startTestService({
      INVITES_SENDING_ADDRESS: 'invites@checkin.test',
      SENDGRID_EVENT_WEBHOOK_PUBLIC_KEY: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
      ...env,
    });
    alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  }, 60_000);
  afterAll(() => service?.close());

  const gala = async () =>
    ok(await alice.call('POST', '/checkin/v1/api/event', { title: 'Gala', startTime: '2026-11-01T18:00:00Z', endTime: '2026-11-01T23:00:00Z', timeZoneId: 'Europe/Berlin' })).id as string;

  it('refuses a timeline export whose window would be clipped, instead of a file whose rows silently leave people out', async () => {
    const eventId = await gala();
    // Bo's admission was imported from the system used before, dated two months earlier; Ann came tonight.
    ok(await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Bo', admitted: '2026-09-01T18:00:00Z' }));
    const ann = ok(await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ann' })).id;
    ok(await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { guestId: ann, at: '2026-11-01T18:00:00Z' }));
    // On screen the newest 10,000 five-minute buckets, and the answer says so.
    const screen = ok(await alice.call('GET', `/checkin/v1/api/event/${eventId}/timeline`));
    expect(screen.clipped).toBe(true);
    expect(screen.totals).toMatchObject({ admitted: 1, importedAdmitted: 1, insideNow: 2 });

    // A file cannot say so: the export is refused as a full window that long is, and changes nothing.
    for (const type of ['CSV', 'EXCEL']) {
      const refused = await alice.call('POST', `/checkin/v1/api/event/${eventId}/timeline/export?type=${type}`);
      expect(refused.status, JSON.stringify(refused.body)).toBe(400);
      expect(refused.body).toMatchObject({ code: 'validation_error', errors: [{ path: 'bucket', message: 'at most 10000 buckets per export' }] });
    }
    const direct = await fetch(`${service.url}/checkin/v1/api/event/${eventId}/timeline/export?type=CSV`, { method: 'POST', headers: { ...auth(alice), accept: 'text/csv' } });
    expect(direct.status).toBe(400);

    // Day buckets hold the whole event: the rows add up to the totals.
    const file = await fetch(`${service.url}/checkin/v1/api/event/${eventId}/timeline/export?type=CSV&bucket=1440`, { method: 'POST', headers: { ...auth(alice), accept: 'text/csv' } });
    expect(file.status).toBe(200);
    const rows = parse(await file.text(), { columns: true, bom: true }) as Record<string, string>[];
    const sum = (column: string) => rows.reduce((n, row) => n + Number(row[column]), 0);
    expect([sum('admitted'), sum('importedAdmitted'), Number(rows.at(-1)!.insideNow)]).toEqual([1, 1, 2]);
  }, 60_000);

  it('counts a guest whose open arrived before (or without) its delivered as delivered, so the open rate stays a fraction', async () => {
    const eventId = await gala();
    const templateId = ok(await alice.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invitation', subject: 'Hi', html: '<p>Hi</p>' })).id;
    const guests: string[] = [];
    for (const name of ['ann', 'bo', 'cy']) guests.push(ok(await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: name, email: `${name}@example.com`, commsTemplateId: templateId })).id);
    const invitations = await eventually(async () => {
      const items = ok(await alice.call('GET', `/comms/v1/api/comms/invitations?eventId=${eventId}`)).items as any[];
      return items.length === 3 && items.every((i) => i.status === 'sent') ? items : undefined;
    }, 60_000, 'the three sends');
    const report = (guest: number, event: string, n: number) => {
      const invitation = invitations.find((i) => i.attendeeId === guests[guest])!;
      return { email: invitation.to ?? 'x@example.com', timestamp: Math.floor(Date.now() / 1000), attendeeInvitationId: invitation.attendeeInvitationId, event, sg_event_id: `${eventId}-${n}` };
    };
    // SendGrid posts in batches that arrive in any order (docs/invitations.md, "Out of order"):
    // Ann's open is here, her delivered not yet; Bo's came in order; Cy reported the email as spam.
    const posted = await postSendGridEvents(service.url, privateKey, [report(0, 'open', 1), report(1, 'delivered', 2), report(1, 'open', 3), report(2, 'spamreport', 4)]);
    expect(posted.status).toBe(200);
    await service.services.readYourWrites(await service.platform.eventStore.headPosition());

    const funnel = ok(await alice.call('GET', `/comms/v1/api/comms/funnel?eventId=${eventId}`));
    expect(funnel.totals).toMatchObject({ invited: 3, sent: 3, delivered: 3, opened: 2, spamReported: 1 });
    expect(funnel.totals.rates).toMatchObject({ delivered: 1, opened: 0.6667 });
    for (const rate of Object.values(funnel.totals.rates) as (number | null)[]) if (rate !== null) expect(rate).toBeLessThanOrEqual(1);

    // Ann's delivered arrives at last: nothing changes.
    expect((await postSendGridEvents(service.url, privateKey, [report(0, 'delivered', 5)])).status).toBe(200);
    await service.services.readYourWrites(await service.platform.eventStore.headPosition());
    expect(ok(await alice.call('GET', `/comms/v1/api/comms/funnel?eventId=${eventId}`)).totals).toEqual(funnel.totals);

    // The Excel file carries the rates as numbers an analyst can compute with.
    const excel = await fetch(`${service.url}/comms/v1/api/comms/funnel/export?type=EXCEL&eventId=${eventId}`, {
      method: 'POST',
      headers: { ...auth(alice), accept: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' },
    });
    expect(excel.status).toBe(200);
    const workbook = new ExcelJS.Workbook();
    await workbook.xlsx.load(await excel.arrayBuffer());
    const sheet = workbook.getWorksheet('Funnel')!;
    const header = sheet.getRow(1).values as unknown[];
    const all = sheet.getRow(sheet.rowCount);
    expect(all.getCell(header.indexOf('templateId')).value).toBe('(all)');
    expect(all.getCell(header.indexOf('openedRate')).value).toBe(0.6667);
    expect(all.getCell(header.indexOf('delivered')).value).toBe(3);
  }, 60_000);

  it('names every field of the raw MongoDB documents an analyst sees in docs/read-models.md', async () => {
    if (!env.MONGO_URL) return; // The embedded store's documents are read through the store, which hides its own marks.
    const eventId = await gala();
    const ann = ok(await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ann' })).id;
    ok(await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { guestId: ann, gate: 'A' }));
    await service.services.readYourWrites(await service.platform.eventStore.headPosition());
    const docs = fs.readFileSync(new URL('../../docs/read-models.md', import.meta.url), 'utf8');
    const client = await MongoClient.connect(env.MONGO_URL);
    try {
      const db = client.db(env.MONGO_DB);
      const marks = new Set<string>();
      for (const collection of ['guests', 'scans', 'timeline_minutes', 'funnel_arrivals', 'event_stats', 'team_stats']) {
        const doc = await db.collection(collection).findOne({ eventId });
        expect(doc, collection).not.toBeNull();
        // Numbers are numbers, times ISO 8601 text (docs/read-models.md, Conventions).
        if (collection === 'timeline_minutes') expect(typeof doc!.minute).toBe('number');
        if (collection === 'scans') expect(doc!.at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
        for (const key of Object.keys(doc!)) if (key.startsWith('_') && key !== '_id') marks.add(key);
      }
      expect(marks.size).toBeGreaterThan(0);
      for (const mark of marks) expect(docs, `docs/read-models.md names ${mark}`).toContain(`\`${mark}\``);
    } finally {
      await client.close();
    }
  }, 60_000);
});
