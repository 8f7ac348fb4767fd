import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readOutbox } from '../support/mail-readers.js';
import { createClient, newEvent, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually } from '../webhooks/receiver.js';

/**
 * Zone names shown to people use the IANA database's current spelling (Europe/Kyiv, not the
 * Europe/Kiev that CLDR's Windows table and ICU keep), wherever the zone comes from: a Windows
 * name, an old IANA name. docs/identifiers.md, "Time zones".
 */
let service: TestService;
beforeAll(async () => {
  service = await startTestService({ INVITES_SENDING_ADDRESS: 'invites@checkin.test' });
});
afterAll(async () => {
  await service.close();
});

const api = '/checkin/v1/api';

describe('zone names shown in their current IANA spelling', () => {
  it('an event answer names the zone of "FLE Standard Time" Europe/Kyiv, of "Asia/Calcutta" Asia/Kolkata, and keeps timeZoneId as given', async () => {
    const client = await createClient(service);
    const kyiv = await newEvent(client, { timeZoneId: 'FLE Standard Time' });
    const kolkata = await newEvent(client, { timeZoneId: 'Asia/Calcutta' });
    expect((await client.call('GET', `${api}/event/${kyiv}`)).body).toMatchObject({ timeZoneId: 'FLE Standard Time', ianaTimeZone: 'Europe/Kyiv' });
    expect((await client.call('GET', `${api}/event/${kolkata}`)).body).toMatchObject({ timeZoneId: 'Asia/Calcutta', ianaTimeZone: 'Asia/Kolkata' });
    const list = await client.call('GET', `${api}/events`);
    expect(list.body.items.map((e: { ianaTimeZone: string }) => e.ianaTimeZone).sort()).toEqual(['Asia/Kolkata', 'Europe/Kyiv']);
  });

  it('the timeline of an event in "India Standard Time" is on Asia/Kolkata', async () => {
    const client = await createClient(service);
    const eventId = await newEvent(client, { timeZoneId: 'India Standard Time' });
    const timeline = await client.call('GET', `${api}/event/${eventId}/timeline`);
    expect(timeline.status, JSON.stringify(timeline.body)).toBe(200);
    expect(timeline.body.timeZone).toBe('Asia/Kolkata');
  });

  it('an invitation of an event in "Nepal Standard Time" names Asia/Kathmandu as {{eventTimeZone}}', async () => {
    const client: Client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
    const eventId = await newEvent(client, { startTime: '2026-12-12T12:15:00Z', endTime: '2026-12-12T16:15:00Z', timeZoneId: 'Nepal Standard Time' });
    const template = await client.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Times', html: '<p>{{eventStart}} ({{eventTimeZone}})</p>' });
    expect(template.status, JSON.stringify(template.body)).toBe(200);
    const email = `nepal-${Date.now()}@example.com`;
    const guest = await client.call('POST', `${api}/guest`, { eventId, firstName: 'Tim', email, commsTemplateId: template.body.id });
    expect(guest.status, JSON.stringify(guest.body)).toBe(200);
    const mail = await eventually(async () => (await readOutbox(path.join(service.dataDir, 'outbox'))).find((m) => m.to.email === email), 30_000, `the mail to ${email}`);
    // 12:15Z is 18:00 in Kathmandu (+05:45).
    expect(mail.html).toContain('Saturday, 12 December 2026 at 18:00 (Asia/Kathmandu)');
  });
});
