import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminKey,
  clientToken,
  createClient,
  passwordToken,
  request,
  startTestService,
  type Client,
  type TestService,
} from '../support/service.js';

let service: TestService;
let alice: Client;
let bob: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service);
  bob = await createClient(service);
});
afterAll(() => service.close());

const admin = (method: string, path: string, body?: unknown) =>
  request(service.url, method, path, body, { authorization: `Bearer ${adminKey}` });

describe('authentication (spec: Authentication rule 1)', () => {
  const path = '/users/v1/api/users/email?email=';

  it('refuses a request without a bearer token with 401 unauthorized', async () => {
    const reply = await request(service.url, 'GET', path + alice.email, undefined, { 'ocp-apim-subscription-key': alice.subscriptionKey });
    expect(reply.status).toBe(401);
    expect(reply.body.code).toBe('unauthorized');
    expect(reply.headers.get('www-authenticate')).toContain('Bearer');
  });

  it('refuses a malformed token, a token signed by someone else and a garbage scheme', async () => {
    const [header, payload] = alice.token.split('.');
    const forged = `${header}.${payload}.${Buffer.from('not the signature').toString('base64url')}`;
    for (const authorization of ['Bearer not-a-jwt', `Bearer ${forged}`, `Basic ${alice.token}`]) {
      const reply = await request(service.url, 'GET', path + alice.email, undefined, {
        authorization,
        'ocp-apim-subscription-key': alice.subscriptionKey,
      });
      expect(reply.status).toBe(401);
      expect(reply.body.code).toBe('unauthorized');
    }
  });

  it('refuses a missing or wrong subscription key, and another client’s key', async () => {
    for (const key of [undefined, 'sk_wrong', bob.subscriptionKey]) {
      const reply = await request(service.url, 'GET', path + alice.email, undefined, {
        authorization: `Bearer ${alice.token}`,
        ...(key ? { 'ocp-apim-subscription-key': key } : {}),
      });
      expect(reply.status).toBe(401);
      expect(reply.body.code).toBe('unauthorized');
    }
  });

  it('accepts the pair of a valid token and a live key, and refuses a revoked key at once', async () => {
    expect((await alice.call('GET', path + alice.email)).status).toBe(200);
    const issued = await admin('POST', `/admin/v1/accounts/${alice.id}/subscription-keys`);
    expect(issued.status).toBe(201);
    const withNew = await alice.call('GET', path + alice.email, undefined, { 'ocp-apim-subscription-key': issued.body.subscriptionKey });
    expect(withNew.status).toBe(200);
    expect((await admin('POST', `/admin/v1/accounts/${alice.id}/subscription-keys/${issued.body.subscriptionKeyId}/revoke`)).status).toBe(204);
    const revoked = await alice.call('GET', path + alice.email, undefined, { 'ocp-apim-subscription-key': issued.body.subscriptionKey });
    expect(revoked.status).toBe(401);
  });

  it('refuses an expired token', async () => {
    const shortLived = await startTestService({ TOKEN_TTL_SECONDS: '1' });
    try {
      const client = await createClient(shortLived);
      expect((await client.call('GET', path + client.email)).status).toBe(200);
      // The verifier allows 5 s of clock skew.
      await new Promise((r) => setTimeout(r, 7000));
      const reply = await client.call('GET', path + client.email);
      expect(reply.status).toBe(401);
      expect(reply.body.message).toContain('expired');
    } finally {
      await shortLived.close();
    }
  }, 120_000);

  it('refuses a wrong client secret at the token endpoint', async () => {
    await expect(clientToken(service.url, alice.id, 'cs_wrong')).rejects.toThrow('401');
  });
});

describe('comms gates (spec: Authentication rules 2 and 3)', () => {
  it('answers 403 comms_api_not_enabled first, then 403 trust_required, then lets the request through', async () => {
    const client = await createClient(service);
    const gated = () => client.call('GET', '/comms/v1/api/comms/webhook');
    expect((await gated()).body.code).toBe('comms_api_not_enabled');
    expect((await gated()).status).toBe(403);
    await admin('PATCH', `/admin/v1/accounts/${client.id}`, { commsApiEnabled: true });
    const untrusted = await gated();
    expect(untrusted.status).toBe(403);
    expect(untrusted.body.code).toBe('trust_required');
    await admin('PATCH', `/admin/v1/accounts/${client.id}`, { senderTrusted: true });
    expect((await gated()).status).not.toBe(403);
  });

  it('checks authentication before the gates', async () => {
    const reply = await request(service.url, 'GET', '/comms/v1/api/comms/webhook');
    expect(reply.status).toBe(401);
  });
});

describe('users (spec: Users)', () => {
  it('reads the caller by its email, case-insensitively, without any password or hash', async () => {
    const reply = await alice.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(alice.email.toUpperCase())}`);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ id: alice.id, email: alice.email, userName: alice.email });
    expect(JSON.stringify(reply.body)).not.toMatch(/password|hash|secret/i);
  });

  it('reports another client’s email as 404', async () => {
    const reply = await alice.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(bob.email)}`);
    expect(reply.status).toBe(404);
    expect(reply.body.code).toBe('not_found');
  });

  it('updates the caller with 204, and refuses to update another client (404)', async () => {
    const update = await alice.call('PUT', '/users/v1/api/user', { id: alice.id, firstName: 'Alice', companyName: 'Acme' });
    expect(update.status).toBe(204);
    const read = await alice.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(alice.email)}`);
    expect(read.body).toMatchObject({ firstName: 'Alice', companyName: 'Acme' });
    const other = await alice.call('PUT', '/users/v1/api/user', { id: bob.id, firstName: 'Mallory' });
    expect(other.status).toBe(404);
    const bobRead = await bob.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(bob.email)}`);
    expect(bobRead.body.firstName).toBeNull();
  });

  it('requires the id on PUT user (400)', async () => {
    const reply = await alice.call('PUT', '/users/v1/api/user', { firstName: 'x' });
    expect(reply.status).toBe(400);
    expect(reply.body.errors[0].path).toBe('id');
  });

  it('refuses a user name taken by someone else with 409', async () => {
    const bobRead = await bob.call('GET', `/users/v1/api/users/email?email=${encodeURIComponent(bob.email)}`);
    const reply = await alice.call('PUT', '/users/v1/api/user', { id: alice.id, userName: bobRead.body.userName });
    expect(reply.status).toBe(409);
  });

  it("a user name or email another client copies onto its own account shadows no one's sign-in: the account whose password matches signs in", async () => {
    const tenantOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).tenant as string;
    const carol = await createClient(service);
    const mallory = await createClient(service);
    // Carol signs in by a user name of her own and by her email; a door account of hers by its user name.
    expect((await carol.call('PUT', '/users/v1/api/user', { id: carol.id, userName: `carol-${Date.now()}` })).status).toBe(204);
    const doorName = `door-${Date.now()}@venue.example`;
    expect((await carol.call('POST', '/checkin/v1/api/teammember', { userName: doorName, password: 'door staff pass 1', email: 'door@venue.example' })).status).toBe(200);
    // Mallory (a password of her own) takes Carol's email as her own, then the door account's user name.
    const mallorysPassword = 'mallory has her own password';
    const changed = await mallory.call('PUT', '/users/v1/api/user/changepassword', { id: mallory.id, oldPassword: mallory.password, newPassword: mallorysPassword });
    expect(changed.status).toBe(204);
    expect((await mallory.call('PUT', '/users/v1/api/user', { id: mallory.id, email: carol.email })).status).toBe(204);
    expect(tenantOf(await passwordToken(service.url, carol.email, carol.password))).toBe(carol.id);
    expect((await mallory.call('PUT', '/users/v1/api/user', { id: mallory.id, email: doorName })).status).toBe(204);
    const door = JSON.parse(Buffer.from((await passwordToken(service.url, doorName, 'door staff pass 1')).split('.')[1]!, 'base64url').toString());
    expect(door).toMatchObject({ role: 'team_member', tenant: carol.id });
    // With her own password, that name signs Mallory in to her own account, never to the door account.
    const mallorys = JSON.parse(Buffer.from((await passwordToken(service.url, doorName, mallorysPassword)).split('.')[1]!, 'base64url').toString());
    expect(mallorys).toMatchObject({ role: 'client', tenant: mallory.id });
    // By the shared email, each signs in to her own account with her own password.
    expect((await mallory.call('PUT', '/users/v1/api/user', { id: mallory.id, email: carol.email })).status).toBe(204);
    expect(tenantOf(await passwordToken(service.url, carol.email, mallorysPassword))).toBe(mallory.id);
    expect(tenantOf(await passwordToken(service.url, carol.email, carol.password))).toBe(carol.id);
    // Mallory takes Carol's email as her user name: by it, each still signs in to her own account.
    expect((await mallory.call('PUT', '/users/v1/api/user', { id: mallory.id, email: `mallory-${Date.now()}@example.com`, userName: carol.email })).status).toBe(204);
    expect(tenantOf(await passwordToken(service.url, carol.email, carol.password))).toBe(carol.id);
    expect(tenantOf(await passwordToken(service.url, carol.email, mallorysPassword))).toBe(mallory.id);
  });
});

describe('password change', () => {
  it('rejects a wrong old password with 400 invalid_old_password and a weak new one with 400 weak_password', async () => {
    const client = await createClient(service);
    const wrong = await client.call('PUT', '/users/v1/api/user/changepassword', {
      id: client.id,
      oldPassword: 'not my password',
      newPassword: 'a much better password',
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.code).toBe('invalid_old_password');
    const weak = await client.call('PUT', '/users/v1/api/user/changepassword', {
      id: client.id,
      oldPassword: client.password,
      newPassword: 'short',
    });
    expect(weak.status).toBe(400);
    expect(weak.body.code).toBe('weak_password');
  });

  it('keeps other sessions when signOutAllSessions is absent, and the new password logs in', async () => {
    const client = await createClient(service);
    const changed = await client.call('PUT', '/users/v1/api/user/changepassword', {
      id: client.id,
      oldPassword: client.password,
      newPassword: 'a brand new passphrase',
    });
    expect(changed.status).toBe(204);
    expect((await client.call('GET', `/users/v1/api/users/email?email=${client.email}`)).status).toBe(200);
    await expect(passwordToken(service.url, client.email, client.password)).rejects.toThrow('400');
    expect(await passwordToken(service.url, client.email, 'a brand new passphrase')).toBeTruthy();
  });

  it('signs out every earlier password sign-in when signOutAllSessions is true; a new token works', async () => {
    const client = await createClient(service);
    // The sign-in the change is made with (the dashboard's): signed out too.
    client.token = await passwordToken(service.url, client.email, client.password);
    const mobile = await passwordToken(service.url, client.email, client.password);
    const changed = await client.call('PUT', '/users/v1/api/user/changepassword', {
      id: client.id,
      oldPassword: client.password,
      newPassword: 'another fresh passphrase',
      signOutAllSessions: true,
    });
    expect(changed.status).toBe(204);
    expect((await client.call('GET', `/users/v1/api/users/email?email=${client.email}`)).status).toBe(401);
    const mobileReply = await client.call('GET', `/users/v1/api/users/email?email=${client.email}`, undefined, {
      authorization: `Bearer ${mobile}`,
    });
    expect(mobileReply.status).toBe(401);
    client.token = await clientToken(service.url, client.id, client.clientSecret);
    expect((await client.call('GET', `/users/v1/api/users/email?email=${client.email}`)).status).toBe(200);
  });

  it('refuses to change another client’s password (404)', async () => {
    const reply = await alice.call('PUT', '/users/v1/api/user/changepassword', {
      id: bob.id,
      oldPassword: bob.password,
      newPassword: 'i would like to own bob',
    });
    expect(reply.status).toBe(404);
  });
});

describe('team members', () => {
  const member = (userName: string) => ({ userName, password: 'door staff pass 1', email: `${userName}@example.com`, firstName: 'Dee' });

  it('creates a team member without echoing the password, and lists the client’s team members', async () => {
    const userName = `door-${Date.now()}`;
    const created = await alice.call('POST', '/checkin/v1/api/teammember', member(userName));
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ userName, email: `${userName}@example.com`, firstName: 'Dee' });
    expect(created.body.password).toBeUndefined();
    const list = await alice.call('GET', `/checkin/v1/api/teammembers/user/${encodeURIComponent(alice.email)}/events`);
    expect(list.status).toBe(200);
    expect(list.body.map((m: { userName: string }) => m.userName)).toContain(userName);
    expect(JSON.stringify(list.body)).not.toMatch(/password/i);
    const one = await alice.call('GET', `/checkin/v1/api/teammembers/user/${userName}/events`);
    expect(one.body).toHaveLength(1);
  });

  it('requires userName, password and email (400)', async () => {
    const reply = await alice.call('POST', '/checkin/v1/api/teammember', { userName: 'x' });
    expect(reply.status).toBe(400);
    expect(reply.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['email', 'password']);
  });

  it('keeps user names unique across the service, case-insensitively (409)', async () => {
    const userName = `unique-${Date.now()}`;
    expect((await alice.call('POST', '/checkin/v1/api/teammember', member(userName))).status).toBe(200);
    const again = await bob.call('POST', '/checkin/v1/api/teammember', member(userName.toUpperCase()));
    expect(again.status).toBe(409);
    const racing = await Promise.all([
      alice.call('POST', '/checkin/v1/api/teammember', member(`race-${userName}`)),
      bob.call('POST', '/checkin/v1/api/teammember', member(`race-${userName}`)),
    ]);
    expect(racing.map((r) => r.status).sort()).toEqual([200, 409]);
  });

  it('never shows another client’s team members (404)', async () => {
    const userName = `hidden-${Date.now()}`;
    await alice.call('POST', '/checkin/v1/api/teammember', member(userName));
    expect((await bob.call('GET', `/checkin/v1/api/teammembers/user/${userName}/events`)).status).toBe(404);
    expect((await bob.call('GET', `/checkin/v1/api/teammembers/user/${encodeURIComponent(alice.email)}/events`)).status).toBe(404);
  });

  it('logs a team member in with the password grant as role team_member, limited to door routes (403 elsewhere)', async () => {
    const userName = `scanner-${Date.now()}`;
    await alice.call('POST', '/checkin/v1/api/teammember', member(userName));
    const token = await passwordToken(service.url, userName, 'door staff pass 1');
    const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());
    expect(claims).toMatchObject({ role: 'team_member', tenant: alice.id });
    const asMember = { authorization: `Bearer ${token}` };
    const event = await alice.call('POST', '/checkin/v1/api/event', { title: 'T', startTime: '2026-12-01T10:00:00Z', endTime: '2026-12-01T12:00:00Z' });
    expect((await alice.call('GET', `/checkin/v1/api/event/${event.body.id}`, undefined, asMember)).status).toBe(200);
    const create = await alice.call('POST', '/checkin/v1/api/teammember', member(`x${userName}`), asMember);
    expect(create.status).toBe(403);
    expect(create.body.code).toBe('forbidden');
    expect((await alice.call('GET', `/users/v1/api/users/email?email=${alice.email}`, undefined, asMember)).status).toBe(403);
  });
});

describe('admin API', () => {
  it('needs the admin key', async () => {
    const reply = await request(service.url, 'POST', '/admin/v1/accounts', { email: 'x@example.com', password: 'long enough pw' });
    expect(reply.status).toBe(401);
    const wrong = await request(service.url, 'POST', '/admin/v1/accounts', { email: 'x@example.com', password: 'long enough pw' }, {
      authorization: 'Bearer not-the-admin-key',
    });
    expect(wrong.status).toBe(401);
  });

  it('shows the client secret and key once: reading the account never returns them', async () => {
    const read = await admin('GET', `/admin/v1/accounts/${alice.id}`);
    expect(read.status).toBe(200);
    expect(JSON.stringify(read.body)).not.toMatch(/secret|password|hash|subscriptionKey/i);
  });

  it('refuses a weak password and an account for a taken user name', async () => {
    expect((await admin('POST', '/admin/v1/accounts', { email: 'weak@example.com', password: 'short' })).status).toBe(400);
    const taken = await admin('POST', '/admin/v1/accounts', { email: alice.email, password: 'long enough password' });
    expect(taken.status).toBe(409);
  });

  it('is 404 when ADMIN_API_KEY is unset', async () => {
    const plain = await startTestService({ ADMIN_API_KEY: '' });
    try {
      expect((await request(plain.url, 'POST', '/admin/v1/accounts', {})).status).toBe(404);
    } finally {
      await plain.close();
    }
  });
});

describe('rate limits (spec: Limits) through the real service', () => {
  it('answers 429 rate_limit with Retry-After once an IP passes the per-minute limit, on the token endpoint too', async () => {
    const limited = await startTestService({ RATE_LIMIT_PER_MINUTE: '5' });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++) statuses.push((await request(limited.url, 'GET', '/checkin/v1/api/events')).status);
      expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
      const refused = await request(limited.url, 'POST', '/core/connect/token', 'grant_type=client_credentials', {
        'content-type': 'application/x-www-form-urlencoded',
      });
      expect(refused.status).toBe(429);
      expect(refused.body.code).toBe('rate_limit');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(50);
    } finally {
      await limited.close();
    }
  });
});

describe('Idempotency-Key through the real service', () => {
  it('creates one event for two identical POSTs and refuses the key with another body', async () => {
    const key = `idem-${Date.now()}`;
    const body = { title: 'Once', startTime: '2026-12-01T10:00:00Z', endTime: '2026-12-01T12:00:00Z' };
    const first = await alice.call('POST', '/checkin/v1/api/event', body, { 'idempotency-key': key });
    const second = await alice.call('POST', '/checkin/v1/api/event', body, { 'idempotency-key': key });
    expect(second.status).toBe(200);
    expect(second.body.id).toBe(first.body.id);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    const other = await alice.call('POST', '/checkin/v1/api/event', { ...body, title: 'Twice' }, { 'idempotency-key': key });
    expect(other.status).toBe(422);
    expect(other.body.code).toBe('idempotency_key_reused');
    const fromBob = await bob.call('POST', '/checkin/v1/api/event', body, { 'idempotency-key': key });
    expect(fromBob.body.id).not.toBe(first.body.id);
  });
});
