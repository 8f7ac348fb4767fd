/**
 * Password guessing at the dev provider's token endpoint: after 10 failed password sign-ins of
 * one user name from one address, that pair is refused (429, Retry-After) even with the right
 * password, until 15 minutes after the last failure; another user name is not held back, and a
 * success before the limit clears the count.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';

let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service);
});
afterAll(() => service.close());

const signIn = (username: string, password: string) =>
  fetch(`${service.url}/core/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', client_id: 'checkin-app', username, password }),
  });

async function teamMember(userName: string): Promise<void> {
  const created = await alice.call('POST', '/checkin/v1/api/teammember', { userName, password: 'door staff pass 1', email: `${userName}@example.com` });
  expect(created.status).toBe(200);
}

describe('failed password sign-ins', () => {
  it('refuse a user name after 10 failures from one address, even with the right password; other names go on', async () => {
    await teamMember('throttled-door');
    await teamMember('other-door');
    for (let i = 0; i < 10; i++) expect((await signIn('throttled-door', `wrong guess ${i}`)).status).toBe(400);
    const refused = await signIn('Throttled-Door', 'door staff pass 1');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.json()).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('too many failed sign-ins') });
    expect((await signIn('other-door', 'door staff pass 1')).status).toBe(200);
  });

  it('a success before the limit clears the count', async () => {
    await teamMember('careless-door');
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 9; i++) expect((await signIn('careless-door', `typo ${round}.${i}`)).status).toBe(400);
      expect((await signIn('careless-door', 'door staff pass 1')).status).toBe(200);
    }
  });
});
