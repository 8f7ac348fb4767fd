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

describe('failed password sign-ins across api processes', () => {
  it('count together: 5 failures at one process and 5 at another refuse the pair at both', async () => {
    const second = await startTestService({}, { role: 'api', dataDir: service.dataDir });
    try {
      await teamMember('shared-door');
      const at = (url: string, password: string) =>
        fetch(`${url}/core/connect/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'password', client_id: 'checkin-app', username: 'shared-door', password }),
        });
      for (let i = 0; i < 5; i++) expect((await at(service.url, `guess a${i}`)).status).toBe(400);
      for (let i = 0; i < 5; i++) expect((await at(second.url, `guess b${i}`)).status).toBe(400);
      expect((await at(service.url, 'door staff pass 1')).status).toBe(429);
      expect((await at(second.url, 'door staff pass 1')).status).toBe(429);
    } finally {
      await second.close();
    }
  });
});

describe('failed password sign-ins behind a proxy', () => {
  it('count an IPv6 client by its /64 and an address by itself whatever source port the proxy writes', async () => {
    const proxied = await startTestService({ TRUST_PROXY: 'loopback' });
    try {
      const owner = await createClient(proxied);
      const created = await owner.call('POST', '/checkin/v1/api/teammember', { userName: 'v6-door', password: 'door staff pass 1', email: 'v6-door@example.com' });
      expect(created.status).toBe(200);
      const from = (forwardedFor: string, username: string, password: string) =>
        fetch(`${proxied.url}/core/connect/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': forwardedFor },
          body: new URLSearchParams({ grant_type: 'password', client_id: 'checkin-app', username, password }),
        });
      // A host given a /64 takes a new address of it for every guess.
      for (let i = 1; i <= 10; i++) expect((await from(`2001:db8:7:1::${i.toString(16)}`, 'v6-door', `guess ${i}`)).status).toBe(400);
      expect((await from('2001:db8:7:1::ff', 'v6-door', 'door staff pass 1')).status).toBe(429);
      expect((await from('2001:db8:7:2::1', 'v6-door', 'door staff pass 1')).status).toBe(200);
      // A proxy writing the client's source port (Azure Application Gateway) gives no fresh budget per connection.
      for (let i = 1; i <= 10; i++) expect((await from(`203.0.113.7:${50000 + i}`, 'v6-door', `guess v4 ${i}`)).status).toBe(400);
      expect((await from('203.0.113.7:51234', 'v6-door', 'door staff pass 1')).status).toBe(429);
    } finally {
      await proxied.close();
    }
  });
});
