/**
 * A create whose read model does not show it after the bounded wait (a projection far behind,
 * or stopped) used to answer 200 with an empty body (a guest), 200 with fewer guests than sent
 * (a batch) or 404 for what it had just created (an event, a template). Now: 503
 * read_models_behind, saying the change was recorded, and the resource is there once the read
 * models catch up.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, startTestService, type Client, type TestService } from '../support/service.js';

let service: TestService;
let alice: Client;
let eventId: string;

beforeAll(async () => {
  service = await startTestService({ READ_YOUR_WRITES_TIMEOUT_MS: '300' });
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
  eventId = await newEvent(alice);
});
afterAll(() => service.close());

describe('a write whose read model is behind', () => {
  it('answers 503 read_models_behind, never a 200 without the resource or a 404, and the resource is there once the projections run', async () => {
    await service.runner!.stop();
    const guestId = 'a5b0c7e2-6a5e-4c55-9a57-7f3ad1b2c001';
    const eventIdNew = 'a5b0c7e2-6a5e-4c55-9a57-7f3ad1b2c002';
    const templateId = 'a5b0c7e2-6a5e-4c55-9a57-7f3ad1b2c003';
    const answers = [
      await alice.call('POST', '/checkin/v1/api/guest', { id: guestId, eventId, firstName: 'Behind' }),
      await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, [{ firstName: 'B1' }, { firstName: 'B2' }]),
      await alice.call('POST', '/checkin/v1/api/event', { id: eventIdNew, title: 'Behind', startTime: '2026-12-01T18:00:00Z', endTime: '2026-12-01T23:00:00Z' }),
      await alice.call('POST', '/comms/v1/api/comms/template', { id: templateId, eventId, name: 'Behind', html: '<p>Hi</p>' }),
    ];
    for (const answer of answers) {
      expect(answer.status, JSON.stringify(answer.body)).toBe(503);
      expect(answer.body).toMatchObject({ code: 'read_models_behind', message: expect.stringContaining('was recorded') });
      expect(answer.headers.get('retry-after')).toBe('1');
    }
    await service.runner!.start();
    expect((await alice.call('GET', `/checkin/v1/api/guest/${guestId}`)).body).toMatchObject({ id: guestId, firstName: 'Behind' });
    expect((await alice.call('GET', `/checkin/v1/api/event/${eventIdNew}`)).body).toMatchObject({ id: eventIdNew, title: 'Behind' });
    const listed = await alice.call('GET', `/checkin/v1/api/guests/${eventId}?limit=10`);
    expect(listed.body.items.map((g: { firstName: string }) => g.firstName).sort()).toEqual(['B1', 'B2', 'Behind']);
  });
});
