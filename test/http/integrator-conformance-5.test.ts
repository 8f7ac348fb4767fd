import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';

/**
 * The interface spec read line by line as an integrator reads it, fifth pass: the places where
 * the service still differed from the spec and was mended.
 */

let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
});
afterAll(() => service.close());

const exportCall = (client: Client, body: unknown, query = '?type=CSV') => client.call('POST', `/checkin/v1/api/event/export${query}`, body);

describe('Check-in: the export body is an Event object (title, startTime, endTime required; id optional)', () => {
  it('without id, exports the caller’s one event with that title and those instants (the same instants written with another offset too)', async () => {
    const title = `Export by details ${Date.now()}`;
    const created = await alice.call('POST', '/checkin/v1/api/event', { title, startTime: '2026-06-01T18:00:00Z', endTime: '2026-06-01T23:00:00Z' });
    expect(created.status).toBe(200);
    await alice.call('POST', `/checkin/v1/api/guests/${encodeURIComponent(created.body.id)}`, [{ firstName: 'Ada' }, { firstName: 'Grace' }]);

    const reply = await exportCall(alice, { title, startTime: '2026-06-01T18:00:00Z', endTime: '2026-06-01T23:00:00Z' });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toMatchObject({ eventId: created.body.id, type: 'CSV', rowCount: 2 });

    const sameInstants = await exportCall(alice, { title, startTime: '2026-06-01T20:00:00+02:00', endTime: '2026-06-02T01:00:00+02:00', id: null });
    expect(sameInstants.status, JSON.stringify(sameInstants.body)).toBe(200);
    expect(sameInstants.body.eventId).toBe(created.body.id);
  });

  it('without id, no matching event is 404 not_found, and another client’s event is not matched', async () => {
    const title = `Export nobody ${Date.now()}`;
    const times = { startTime: '2026-07-01T18:00:00Z', endTime: '2026-07-01T23:00:00Z' };
    const bob = await createClient(service);
    expect((await bob.call('POST', '/checkin/v1/api/event', { title, ...times })).status).toBe(200);
    const reply = await exportCall(alice, { title, ...times });
    expect(reply.status).toBe(404);
    expect(reply.body.code).toBe('not_found');
    // Another title, or other instants, is another event.
    await alice.call('POST', '/checkin/v1/api/event', { title, ...times });
    expect((await exportCall(alice, { title: title.toUpperCase(), ...times })).status).toBe(404);
    expect((await exportCall(alice, { title, ...times, endTime: '2026-07-01T23:00:01Z' })).status).toBe(404);
  });

  it('without id, several matching events are 409 ambiguous_event naming id; with the id each is exported', async () => {
    const title = `Export twice ${Date.now()}`;
    const times = { startTime: '2026-08-01T18:00:00Z', endTime: '2026-08-01T23:00:00Z' };
    const first = await alice.call('POST', '/checkin/v1/api/event', { title, ...times });
    const second = await alice.call('POST', '/checkin/v1/api/event', { title, ...times });
    const reply = await exportCall(alice, { title, ...times });
    expect(reply.status).toBe(409);
    expect(reply.body).toMatchObject({ code: 'ambiguous_event', errors: [{ path: 'id' }] });
    for (const event of [first.body, second.body]) {
      const chosen = await exportCall(alice, { id: event.id, title, ...times });
      expect(chosen.status).toBe(200);
      expect(chosen.body.eventId).toBe(event.id);
    }
  });

  it('the document makes only title, startTime and endTime required, as the spec’s Event does', async () => {
    const doc = (await (await fetch(`${service.url}/openapi.json`)).json()) as any;
    expect([...doc.components.schemas.ExportRequest.required].sort()).toEqual(['endTime', 'startTime', 'title']);
    expect(doc.paths['/checkin/v1/api/event/export'].post.responses['409']).toBeDefined();
  });
});
