import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClient, newEvent, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually } from '../webhooks/receiver.js';

/**
 * docs/read-models.md: `retentionDays` of `events` and `accounts`, and "a field that has no value
 * is absent, not null": removing the client's default (`retentionDays: ""`) removes the field.
 */
let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service);
});
afterAll(() => service.close());

it("writes retentionDays to events and accounts, and removes the client's default instead of storing null", async () => {
  const eventId = await newEvent(alice, { retentionDays: 30 });
  const events = service.platform.readStore.collection<{ _id: string } & Record<string, unknown>>('events');
  const eventDoc = await eventually(async () => (await events.findOne({ clientId: alice.id, eventId })) ?? undefined, 60_000, 'event projected');
  expect(eventDoc.retentionDays).toBe(30);

  const accounts = service.platform.readStore.collection<{ _id: string } & Record<string, unknown>>('accounts');
  expect((await alice.call('PUT', '/users/v1/api/user', { id: alice.id, retentionDays: 7 })).status).toBe(204);
  expect((await accounts.get(alice.id))?.retentionDays).toBe(7);

  expect((await alice.call('PUT', '/users/v1/api/user', { id: alice.id, retentionDays: null })).status).toBe(204);
  expect((await accounts.get(alice.id))?.retentionDays).toBe(7);
  expect((await alice.call('PUT', '/users/v1/api/user', { id: alice.id, retentionDays: '' })).status).toBe(204);
  const account = await accounts.get(alice.id);
  expect(account).toBeDefined();
  expect(account).not.toHaveProperty('retentionDays');
});
