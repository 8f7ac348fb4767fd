/**
 * Team members' personal data (docs/personal-data.md, "Team members and account users"): a
 * registration's email, names, user name and password hash are sealed with a data key of that
 * registration, and removing the team member (DELETE teammember/{id}) deletes the key. After it,
 * no file under DATA_DIR holds the email or the names, also after a projections rebuild; the
 * scans stay counted under the team member's id.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import Database from 'better-sqlite3';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, passwordToken, request, startTestService, type Client, type TestService } from '../support/service.js';
import { filesHolding } from '../support/files-holding.js';
import { createLogger } from '../../src/shared/logger.js';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(() => service.close());

const password = 'north gate scanner 7';
const api = '/checkin/v1/api';

function doorStaff() {
  const tag = randomUUID().slice(0, 8);
  return { userName: `door-${tag}`, email: `dora.${tag}@staff.example`, firstName: `Dorothéa${tag}`, lastName: `Pförtner${tag}` };
}

async function signedIn(client: Client, userName: string, pw = password) {
  const token = await passwordToken(service.url, userName, pw);
  return (method: string, pathname: string, body?: unknown) =>
    request(service.url, method, pathname, body, { authorization: `Bearer ${token}`, 'ocp-apim-subscription-key': client.subscriptionKey });
}

/** The stored data of the team member's events, as the event store holds them. */
function storedEvents(stream: string): { type: string; data: Record<string, unknown> }[] {
  const db = new Database(path.join(service.dataDir, 'events.sqlite'), { readonly: true, fileMustExist: true });
  try {
    return (db.prepare(`SELECT type, data FROM events WHERE stream = ? ORDER BY position`).all(stream) as { type: string; data: string }[]).map((row) => ({
      type: row.type,
      data: JSON.parse(row.data) as Record<string, unknown>,
    }));
  } finally {
    db.close();
  }
}

describe('team members: personal data sealed, and gone with the team member', () => {
  it('keeps the email and names out of the events, and after DELETE teammember/{id} out of every file under DATA_DIR, also after a rebuild', async () => {
    const client = await createClient(service);
    const eventId = await newEvent(client);
    const staff = doorStaff();
    const id = `door-${randomUUID().slice(0, 8)}`;
    // With an Idempotency-Key, the create's answer (which repeats the email and names) is stored for 24 h.
    const created = await client.call('POST', `${api}/teammember`, { ...staff, password, id }, { 'idempotency-key': `tm-${id}` });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body).not.toHaveProperty('password');

    // Sealed in the event store: the registration holds ciphertext, never the email, names or hash.
    const [registered] = storedEvents(`teammember-${client.id}:${id}`);
    expect(registered!.type).toBe('TeamMemberRegistered');
    expect(registered!.data).toMatchObject({ teamMemberId: id, personalData: { alg: 'A256GCM' } });
    for (const field of ['userName', 'email', 'firstName', 'lastName', 'passwordHash']) expect(registered!.data).not.toHaveProperty(field);
    expect(filesHolding(service.dataDir, [staff.email, staff.firstName, staff.lastName]).filter((f) => f.startsWith('events.sqlite'))).toEqual([]);

    const door = await signedIn(client, staff.userName);
    const guest = await client.call('POST', `${api}/guest`, { eventId, firstName: 'Ada', plusOnes: 1, isGroup: true });
    expect((await door('POST', `${api}/guests/${eventId}/checkin`, { guestId: guest.body.id })).body.result).toBe('admitted');

    expect((await client.call('DELETE', `${api}/teammember/${id}`)).status).toBe(204);
    expect(filesHolding(service.dataDir, [staff.email, staff.firstName, staff.lastName])).toEqual([]);
    // A retry of the create with its key answers the stored reply, without the person, and creates no one.
    const retried = await client.call('POST', `${api}/teammember`, { ...staff, password, id }, { 'idempotency-key': `tm-${id}` });
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ id, userName: '[erased]', email: '[erased]', firstName: '[erased]', lastName: '[erased]' });
    expect((await client.call('GET', `${api}/teammembers/user/${encodeURIComponent(client.email)}/events`)).body).toEqual([]);

    // The registration no longer opens; a rebuild skips it and leaves no team member document.
    await service.runner!.rebuild([]);
    expect(filesHolding(service.dataDir, [staff.email, staff.firstName, staff.lastName])).toEqual([]);
    expect((await client.call('GET', `${api}/teammembers/user/${encodeURIComponent(client.email)}/events`)).body).toEqual([]);

    // What it did at the door stays counted, under its id; its user name is gone with it (test/personal-data/pdleftovers.test.ts).
    const stats = await client.call('GET', `${api}/team/event/${eventId}`);
    expect(stats.body).toEqual([expect.objectContaining({ teamMemberId: id, username: '[erased]', checkedIn: 2 })]);
  });

  it('a removed id registered again (the way to a new password) gets a key of its own: the new profile is kept, signs in and is listed, also after a rebuild', async () => {
    const client = await createClient(service);
    const staff = doorStaff();
    const id = `door-${randomUUID().slice(0, 8)}`;
    expect((await client.call('POST', `${api}/teammember`, { ...staff, password, id })).status).toBe(200);
    expect((await client.call('DELETE', `${api}/teammember/${id}`)).status).toBe(204);
    const newPassword = 'a brand new door passphrase';
    const again = await client.call('POST', `${api}/teammember`, { ...staff, password: newPassword, id });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    await service.runner!.rebuild([]);

    const door = await signedIn(client, staff.userName, newPassword);
    const self = await door('GET', `${api}/teammembers/user/${staff.userName}/events`);
    expect(self.status).toBe(200);
    expect(self.body).toEqual([{ id, userName: staff.userName, email: staff.email, firstName: staff.firstName, lastName: staff.lastName, canForce: false }]);
  });
});

describe('the request log holds no user name from a team member path', () => {
  it('logs GET teammembers/user/{username}/events with the user name (or the client email) redacted', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    const logged = await startTestService({}, { logger: createLogger('info', sink) });
    try {
      const client = await createClient(logged);
      const staff = doorStaff();
      expect((await client.call('POST', `${api}/teammember`, { ...staff, password })).status).toBe(200);
      expect((await client.call('GET', `${api}/teammembers/user/${encodeURIComponent(client.email)}/events`)).status).toBe(200);
      expect((await client.call('GET', `${api}/teammembers/user/${staff.userName}/events`)).status).toBe(200);
      await new Promise((resolve) => setImmediate(resolve));
      const log = lines.join('');
      expect(log).toContain('/checkin/v1/api/teammembers/user/[Redacted]/events');
      for (const value of [staff.userName, client.email, encodeURIComponent(client.email)]) expect(log, value).not.toContain(value);
    } finally {
      await logged.close();
    }
  });
});
