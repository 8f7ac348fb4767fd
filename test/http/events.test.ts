import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, request, startTestService, type Client, type TestService } from '../support/service.js';

let service: TestService;
let alice: Client;
let bob: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service);
  bob = await createClient(service);
});
afterAll(() => service.close());

const event = { title: 'Gala', startTime: '2026-12-01T18:00:00+01:00', endTime: '2026-12-01T23:00:00Z' };

describe('events over HTTP', () => {
  it('creates an event and reads it back at once (read-your-writes)', async () => {
    const created = await alice.call('POST', '/checkin/v1/api/event', event);
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ title: 'Gala', startTime: '2026-12-01T17:00:00.000Z', endTime: '2026-12-01T23:00:00.000Z' });
    expect(created.body.id).toMatch(/^[0-9a-f-]{36}$/);
    const read = await alice.call('GET', `/checkin/v1/api/event/${created.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created.body);
    expect(read.body.clientId).toBeUndefined();
  });

  it('keeps a caller-supplied id exactly as sent (a GUID-shaped one in upper case too) and updates the event on a second POST, keeping the fields it is not given', async () => {
    const id = 'A1B2C3D4-E5F6-4A7B-8C9D-0E1F2A3B4C5D';
    const kept = { tags: 'vip', timeZoneId: 'Europe/Berlin', customData: '{"crm":7}', active: false };
    await alice.call('POST', '/checkin/v1/api/event', { ...event, id, ...kept });
    const updated = await alice.call('POST', '/checkin/v1/api/event', { ...event, id, title: 'Gala 2' });
    expect(updated.status).toBe(200);
    expect(updated.body.id).toBe(id);
    expect(updated.body).toMatchObject({ title: 'Gala 2', ...kept });
    expect((await alice.call('GET', `/checkin/v1/api/event/${id}`)).body).toMatchObject({ title: 'Gala 2', ...kept });
    const cleared = await alice.call('POST', '/checkin/v1/api/event', { ...event, id, title: 'Gala 2', tags: '', active: true });
    expect(cleared.body).toMatchObject({ tags: '', active: true, timeZoneId: 'Europe/Berlin', customData: '{"crm":7}' });
    const history = await service.platform.eventStore.readStream(`event-${alice.id}:${id}`);
    expect(history.map((e) => e.type)).toEqual(['EventCreated', 'EventUpdated', 'EventUpdated']);
    expect(history[1]!.metadata).toMatchObject({ tenantId: alice.id, actor: { type: 'client', id: alice.id } });
  });

  it('reports another client’s event as 404 on read; the same id posted by another client is that client’s own event', async () => {
    const created = await alice.call('POST', '/checkin/v1/api/event', event);
    const read = await bob.call('GET', `/checkin/v1/api/event/${created.body.id}`);
    expect(read.status).toBe(404);
    expect(read.body.code).toBe('not_found');
    const own = await bob.call('POST', '/checkin/v1/api/event', { ...event, id: created.body.id, title: 'Bob’s' });
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ id: created.body.id, title: 'Bob’s' });
    expect((await alice.call('GET', `/checkin/v1/api/event/${created.body.id}`)).body.title).toBe('Gala');
    expect((await bob.call('GET', `/checkin/v1/api/event/${created.body.id}`)).body.title).toBe('Bob’s');
  });

  it('rejects missing fields, bad dates, a bad id and endTime before startTime with 400 validation_error', async () => {
    const cases = [
      [{ startTime: event.startTime, endTime: event.endTime }, 'title'],
      [{ ...event, startTime: 'tomorrow' }, 'startTime'],
      [{ ...event, id: 'x'.repeat(129) }, 'id'],
      [{ ...event, id: '' }, 'id'],
      [{ ...event, id: 'tab\there' }, 'id'],
      [{ ...event, endTime: '2026-12-01T10:00:00Z' }, 'endTime'],
    ] as const;
    for (const [body, path] of cases) {
      const reply = await alice.call('POST', '/checkin/v1/api/event', body);
      expect(reply.status).toBe(400);
      expect(reply.body.code).toBe('validation_error');
      expect(reply.body.errors.map((e: { path: string }) => e.path)).toContain(path);
    }
  });

  it('ignores unknown JSON fields (spec, versioning rule 3)', async () => {
    const reply = await alice.call('POST', '/checkin/v1/api/event', { ...event, somethingNew: 1 });
    expect(reply.status).toBe(200);
    expect(reply.body.somethingNew).toBeUndefined();
  });

  it('answers malformed JSON with 400, a huge body with 413 and an unknown route with 404, in the error shape', async () => {
    const malformed = await alice.call('POST', '/checkin/v1/api/event', '{"title": ');
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ code: 'validation_error', message: expect.any(String) });
    const huge = await alice.call('POST', '/checkin/v1/api/event', { ...event, customData: 'x'.repeat(17 * 1024 * 1024) });
    expect(huge.status).toBe(413);
    expect(huge.body.code).toBe('payload_too_large');
    const unknown = await request(service.url, 'GET', '/nothing/here');
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');
  });

  it('reports health and readiness with the projection lag', async () => {
    expect((await request(service.url, 'GET', '/healthz')).status).toBe(200);
    const ready = await request(service.url, 'GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.checks).toMatchObject({ eventStore: { ok: true }, readStore: { ok: true }, bus: { ok: true } });
    expect(ready.body.checks.projections.lag).toBeGreaterThanOrEqual(0);
  });

  it('publishes the OpenAPI 3.1 document and the docs page', async () => {
    const doc = await request(service.url, 'GET', '/openapi.json');
    expect(doc.body.openapi).toBe('3.1.0');
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining(['/checkin/v1/api/event', '/checkin/v1/api/event/{id}', '/users/v1/api/user/changepassword']),
    );
    const page = await fetch(`${service.url}/docs`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('swagger-ui');
    expect((await fetch(`${service.url}/docs/assets/swagger-ui-bundle.js`)).status).toBe(200);
  });
});

describe('event list', () => {
  it('pages through the caller’s events by start time and never shows another client’s', async () => {
    const carol = await createClient(service);
    const titles = ['C', 'A', 'B'];
    for (const [i, title] of titles.entries()) {
      await carol.call('POST', '/checkin/v1/api/event', { title, startTime: `2026-12-0${3 - i}T10:00:00Z`, endTime: '2026-12-31T10:00:00Z' });
    }
    const first = await carol.call('GET', '/checkin/v1/api/events?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.items.map((e: { title: string }) => e.title)).toEqual(['B', 'A']);
    const second = await carol.call('GET', `/checkin/v1/api/events?limit=2&cursor=${first.body.nextCursor}`);
    expect(second.body.items.map((e: { title: string }) => e.title)).toEqual(['C']);
    expect(second.body.nextCursor).toBeUndefined();
    const others = await alice.call('GET', '/checkin/v1/api/events?limit=1000');
    expect(others.body.items.some((e: { title: string }) => ['A', 'B', 'C'].includes(e.title))).toBe(false);
    expect((await carol.call('GET', '/checkin/v1/api/events?cursor=garbage')).status).toBe(400);
  });
});
