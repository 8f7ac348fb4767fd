/**
 * Tenancy audit, second sweep: what one client can learn about, or do to, another through ids
 * both may choose (docs/identifiers.md: every id a caller chooses is scoped per client). The
 * first sweep's probes are in tenancy-audit.test.ts; this file holds what the second one found.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, passwordToken, request, startTestService, type Client, type TestService } from '../support/service.js';

const api = '/checkin/v1/api';

let service: TestService;
let alice: Client;
let bob: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service);
  bob = await createClient(service);
});
afterAll(async () => {
  await service?.close();
});

/** Whom a password sign-in lands on: the token's tenant, via the team member's own record. */
async function signedInAs(userName: string, password: string, subscriptionKey: string) {
  const token = await passwordToken(service.url, userName, password);
  return request(service.url, 'GET', `${api}/teammembers/user/${encodeURIComponent(userName)}/events`, undefined, {
    authorization: `Bearer ${token}`,
    'ocp-apim-subscription-key': subscriptionKey,
  });
}

describe('a user name stays unique across the service whatever team member id claims it', () => {
  it('another client’s team member with the same id is refused the name as any other is (409), and the holder keeps signing in', async () => {
    // Team member ids are the caller's and scoped per client: both may number their door staff alike.
    const id = `door-${randomUUID().slice(0, 8)}`;
    const userName = `north-gate-${randomUUID().slice(0, 8)}`;
    const own = await alice.call('POST', `${api}/teammember`, { id, userName, password: 'north gate scanner 7', email: 'door@alice.example' });
    expect(own.status, JSON.stringify(own.body)).toBe(200);

    // The same name under another id and under Alice's id: one answer, the name is taken.
    const otherId = await bob.call('POST', `${api}/teammember`, { id: `${id}-b`, userName, password: 'south gate scanner 9', email: 'door@bob.example' });
    const sameId = await bob.call('POST', `${api}/teammember`, { id, userName: userName.toUpperCase(), password: 'south gate scanner 9', email: 'door@bob.example' });
    expect(otherId.status).toBe(409);
    expect(otherId.body.code).toBe('username_taken');
    expect(sameId.status, JSON.stringify(sameId.body)).toBe(409);
    expect(sameId.body.code).toBe('username_taken');
    expect((await bob.call('GET', `${api}/teammembers/user/${encodeURIComponent(userName)}/events`)).status).toBe(404);

    // Alice's door staff signs in to Alice's account as before.
    const signedIn = await signedInAs(userName, 'north gate scanner 7', alice.subscriptionKey);
    expect(signedIn.status, JSON.stringify(signedIn.body)).toBe(200);
    expect(signedIn.body).toEqual([expect.objectContaining({ id, userName, email: 'door@alice.example' })]);
  });

  it('a team member whose id is an account’s id cannot take that account’s user name', async () => {
    const name = `${alice.email.split('@')[0]}-user`;
    expect((await alice.call('PUT', '/users/v1/api/user', { id: alice.id, userName: name })).status).toBe(204);
    const copy = await bob.call('POST', `${api}/teammember`, { id: alice.id, userName: name, password: 'south gate scanner 9', email: 'door@bob.example' });
    expect(copy.status, JSON.stringify(copy.body)).toBe(409);
    expect(copy.body.code).toBe('username_taken');
  });
});
