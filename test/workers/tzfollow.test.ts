/**
 * Time-zone follow-ups (branch tzfollow): retention counts calendar days on the event's clock;
 * zone names shown to people use the current IANA spelling.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import type { RetentionWorker } from '../../src/workers/retention.js';

const api = '/checkin/v1/api';

describe('retention across a daylight-saving change', () => {
  let service: TestService;
  let worker: RetentionWorker;
  beforeAll(async () => {
    service = await startTestService();
    worker = service.workers.find((w) => w.name === 'retention') as RetentionWorker;
  });
  afterAll(async () => {
    await service.close();
  });

  const guestOf = async (client: Client, eventId: string) => {
    const tag = randomUUID().slice(0, 8);
    const created = await client.call('POST', `${api}/guest`, { eventId, firstName: `Ada${tag}`, email: `ada.${tag}@example.com` });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    return created.body.id as string;
  };
  const erased = async (client: Client, id: string) => (await client.call('GET', `${api}/guest/${id}`)).body.erased === true;

  it('erases "30 days after the event ended" at the end time on the event\'s calendar: Europe/Berlin, clocks set forward on 29 March', async () => {
    const client = await createClient(service);
    // Ends 23:00 CET (+01:00) on 1 March; 30 days later is 23:00 CEST (+02:00) on 31 March = 21:00Z, not 22:00Z.
    const event = await client.call('POST', `${api}/event`, {
      title: 'Berlin gala',
      startTime: '2026-03-01T18:00:00Z',
      endTime: '2026-03-01T22:00:00Z',
      timeZoneId: 'Europe/Berlin',
      retentionDays: 30,
    });
    expect(event.status, JSON.stringify(event.body)).toBe(200);
    const id = await guestOf(client, event.body.id);
    await worker.runOnce(new Date('2026-03-31T20:59:00Z'));
    expect(await erased(client, id)).toBe(false);
    await worker.runOnce(new Date('2026-03-31T21:00:00Z'));
    expect(await erased(client, id)).toBe(true);
  });

  it('erases no earlier than the end time on the event\'s calendar: Australia/Sydney (given by its Windows name), clocks set back on 5 April', async () => {
    const client = await createClient(service);
    // Ends 21:00 AEDT (+11:00) on 20 March; 30 days later is 21:00 AEST (+10:00) on 19 April = 11:00Z, not 10:00Z.
    const event = await client.call('POST', `${api}/event`, {
      title: 'Sydney gala',
      startTime: '2026-03-20T08:00:00Z',
      endTime: '2026-03-20T10:00:00Z',
      timeZoneId: 'AUS Eastern Standard Time',
      retentionDays: 30,
    });
    expect(event.status, JSON.stringify(event.body)).toBe(200);
    const id = await guestOf(client, event.body.id);
    await worker.runOnce(new Date('2026-04-19T10:00:00Z'));
    expect(await erased(client, id)).toBe(false);
    await worker.runOnce(new Date('2026-04-19T11:00:00Z'));
    expect(await erased(client, id)).toBe(true);
  });

  it("an event without a zone of its own counts on the account's zone (the client's default days)", async () => {
    const client = await createClient(service);
    expect((await client.call('PUT', '/users/v1/api/user', { id: client.id, timeZoneId: 'W. Europe Standard Time', retentionDays: 30 })).status).toBe(204);
    const event = await client.call('POST', `${api}/event`, { title: 'No zone', startTime: '2026-03-01T18:00:00Z', endTime: '2026-03-01T22:00:00Z' });
    expect(event.status, JSON.stringify(event.body)).toBe(200);
    const id = await guestOf(client, event.body.id);
    await worker.runOnce(new Date('2026-03-31T20:59:00Z'));
    expect(await erased(client, id)).toBe(false);
    await worker.runOnce(new Date('2026-03-31T21:00:00Z'));
    expect(await erased(client, id)).toBe(true);
  });

  it('an event and account without a zone count UTC days, as before', async () => {
    const client = await createClient(service);
    const event = await client.call('POST', `${api}/event`, { title: 'UTC', startTime: '2026-03-01T18:00:00Z', endTime: '2026-03-01T22:00:00Z', retentionDays: 30 });
    const id = await guestOf(client, event.body.id);
    await worker.runOnce(new Date('2026-03-31T21:59:00Z'));
    expect(await erased(client, id)).toBe(false);
    await worker.runOnce(new Date('2026-03-31T22:00:00Z'));
    expect(await erased(client, id)).toBe(true);
  });
});
