import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerAccount } from '../../src/commands/accounts.js';
import { adminKey, clientToken, createClient, request, startTestService, type Client, type Reply, type TestService } from '../support/service.js';

/**
 * Every path parameter takes any id the spec allows, on every route (docs/identifiers.md, "Ids in
 * paths"). Routes mix literal segments and parameters (`/event/export` beside `/event/{id}`,
 * `/event/export/{exportId}` beside `/event/{id}/stats`): a literal route names a path only for
 * the methods it defines and only where its own parameter could be meant, so each request
 * reaches the route an integrator means. Ids with awkward characters either work or get a 400
 * in the error shape naming the parameter; none is a 500 or reaches another resource.
 */

let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
});
afterAll(() => service.close());

const api = '/checkin/v1/api';
const times = { startTime: '2026-01-01T18:00:00Z', endTime: '2027-12-31T23:00:00Z' };
const enc = encodeURIComponent;

/**
 * A request with the path sent byte for byte: fetch would resolve `.` and `..` segments (even
 * percent-encoded) before sending, as every URL library does.
 */
function raw(method: string, path: string, headers: Record<string, string> = {}): Promise<Reply> {
  const url = new URL(service.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        headers: { authorization: `Bearer ${alice.token}`, 'ocp-apim-subscription-key': alice.subscriptionKey, ...headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          let body: unknown = text;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {
            // not JSON: keep the text
          }
          resolve({ status: res.statusCode!, body, headers: new Headers(res.headers as Record<string, string>) });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A 400 in the spec's error shape naming `path`. */
function expectRefused(reply: Reply, path: string, what: string): void {
  expect(reply.status, `${what}: ${JSON.stringify(reply.body)}`).toBe(400);
  expect(reply.body, what).toMatchObject({ code: 'validation_error', message: expect.any(String) });
  expect(reply.body.errors.map((e: { path: string }) => e.path), what).toContain(path);
}

async function newEventWith(id: string): Promise<void> {
  const created = await alice.call('POST', `${api}/event`, { id, title: `Event ${id}`, ...times });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  expect(created.body.id).toBe(id);
}

describe('routes whose paths can name one URL (the document read as an integrator reads it)', () => {
  type Operation = { method: string; path: string; params: Record<string, { format?: string }> };
  const guid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

  /** How two operations whose segments can all be the same are told apart, or undefined when they cannot name one path. */
  function overlap(a: Operation, b: Operation): 'methods' | 'guid' | 'ambiguous' | undefined {
    const as = a.path.split('/');
    const bs = b.path.split('/');
    if (as.length !== bs.length) return undefined;
    let byGuid = false;
    for (let i = 0; i < as.length; i++) {
      const [x, y] = [as[i]!, bs[i]!];
      const xParam = /^\{(\w+)\}$/.exec(x)?.[1];
      const yParam = /^\{(\w+)\}$/.exec(y)?.[1];
      // Express matches literal segments case-insensitively.
      if (!xParam && !yParam && x.toLowerCase() !== y.toLowerCase()) return undefined;
      // A GUID parameter facing a literal that is no GUID: only the other route can take that path.
      if (xParam && !yParam && a.params[xParam]?.format === 'uuid' && !guid.test(y)) byGuid = true;
      if (yParam && !xParam && b.params[yParam]?.format === 'uuid' && !guid.test(x)) byGuid = true;
    }
    if (a.method !== b.method) return 'methods';
    return byGuid ? 'guid' : 'ambiguous';
  }

  it('finds the known pairs only, each told apart by its methods or by a GUID parameter; none is ambiguous', async () => {
    const doc = (await request(service.url, 'GET', '/openapi.json')).body;
    const operations: Operation[] = Object.entries<Record<string, { parameters?: { in: string; name: string; schema: { format?: string } }[] }>>(doc.paths).flatMap(
      ([path, methods]) =>
        Object.entries(methods).map(([method, op]) => ({
          method: method.toUpperCase(),
          path,
          params: Object.fromEntries((op.parameters ?? []).filter((p) => p.in === 'path').map((p) => [p.name, p.schema])),
        })),
    );
    const found: string[] = [];
    for (const [i, a] of operations.entries()) {
      for (const b of operations.slice(i + 1)) {
        if (a.path === b.path) continue;
        const kind = overlap(a, b);
        if (kind) found.push([`${a.method} ${a.path}`, `${b.method} ${b.path}`].sort().join(' | ') + ` -> ${kind}`);
      }
    }
    expect(found.sort()).toEqual(
      [
        'GET /checkin/v1/api/event/{id} | POST /checkin/v1/api/event/export -> methods',
        ...['scans', 'stats', 'ticket-keys', 'tickets', 'timeline'].map(
          (sub) => `GET /checkin/v1/api/event/export/{exportId} | GET /checkin/v1/api/event/{id}/${sub} -> guid`,
        ),
      ].sort(),
    );
  });
});

describe('an event whose id is a literal segment of another route', () => {
  it.each(['export', 'Export', 'EXPORT'])('%j is read and used through every event route, not the export', async (id) => {
    await newEventWith(id);
    const guest = await alice.call('POST', `${api}/guest`, { eventId: id, firstName: 'Ada', barcode: `B-${id}` });
    expect(guest.status).toBe(200);
    expect((await alice.call('POST', `${api}/guests/${enc(id)}/checkin`, { barcode: `B-${id}` })).body.result).toBe('admitted');

    const read = await alice.call('GET', `${api}/event/${id}`);
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    expect(read.body).toMatchObject({ id, title: `Event ${id}` });
    expect((await alice.call('GET', `${api}/event/${id}/`)).body.id).toBe(id);
    expect((await alice.call('HEAD', `${api}/event/${id}`)).status).toBe(200);

    expect((await alice.call('GET', `${api}/event/${id}/stats`)).body).toMatchObject({ eventId: id, invited: 1, admitted: 1 });
    expect((await alice.call('GET', `${api}/event/${id}/scans`)).body.items).toHaveLength(1);
    expect((await alice.call('GET', `${api}/event/${id}/tickets`)).status).toBe(200);
    expect((await alice.call('GET', `${api}/event/${id}/ticket-keys`)).body.eventId).toBe(id);
    const timeline = await alice.call('GET', `${api}/event/${id}/timeline`);
    expect(timeline.status, JSON.stringify(timeline.body)).toBe(200);
    expect(timeline.body).toMatchObject({ eventId: id, totals: { admitted: 1 } });
    expect((await alice.call('POST', `${api}/event/${id}/ticket-keys/rotate`)).body.eventId).toBe(id);
    expect((await alice.call('GET', `${api}/guests/${id}`)).body.items.map((g: { id: string }) => g.id)).toEqual([guest.body.id]);
    expect((await alice.call('GET', `${api}/team/event/${id}`)).status).toBe(200);

    const timelineFile = await alice.call('POST', `${api}/event/${id}/timeline/export?type=CSV`);
    expect(timelineFile.status, JSON.stringify(timelineFile.body)).toBe(200);
    const download = await alice.call('GET', timelineFile.body.url);
    expect(download.status).toBe(200);
  });

  it('the export keeps POST /event/export and GET /event/export/{exportId}; the event keeps GET', async () => {
    await newEventWith('export-owner');
    const created = await alice.call('POST', `${api}/event/export`, { id: 'export-owner', title: 'x', ...times });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.eventId).toBe('export-owner');
    const file = await alice.call('GET', `${api}/event/export/${created.body.exportId}`);
    expect(file.status).toBe(200);
    expect((await alice.call('GET', `${api}/event/export/${String(created.body.exportId).toUpperCase()}`)).status).toBe(200);
    expect((await alice.call('GET', `${api}/event/export/${created.body.exportId}/`)).status).toBe(200);

    // A value that is no GUID and names no event route is still the export's 400, not a 404 or a guess.
    expectRefused(await alice.call('GET', `${api}/event/export/not-a-guid`), 'exportId', 'export id not a GUID');

    const allow = await alice.call('OPTIONS', `${api}/event/export`);
    expect(allow.status).toBe(204);
    // Allow names the resource /openapi.json documents at this path (the export); a GET still reaches the event.
    expect(allow.headers.get('allow')).toBe('POST, OPTIONS');
    expect((await alice.call('OPTIONS', `${api}/event/export/stats`)).headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    const put = await alice.call('PUT', `${api}/event/export`, {});
    expect(put.status).toBe(405);
    expect(put.body.code).toBe('method_not_allowed');
  });

  it('an event "export" that does not exist is 404 on its routes, never the export', async () => {
    const other = await createClient(service);
    for (const suffix of ['', '/stats', '/timeline', '/ticket-keys']) {
      const reply = await other.call('GET', `${api}/event/export${suffix}`);
      expect(reply.status, `${suffix}: ${JSON.stringify(reply.body)}`).toBe(404);
      expect(reply.body.code).toBe('not_found');
    }
  });
});

describe('event ids with the characters an integrator may use', () => {
  const ids = ['a/b', 'ends/', 'two words', 'a+b', 'x.y', '..x', '.hidden', 'ÜnïcØdé-🎉', 'x'.repeat(128), '🎉'.repeat(128), '100%', 'a?b#c', 'stats', 'events'];

  it.each(ids)('%j works on every route that names an event', async (id) => {
    await newEventWith(id);
    const e = enc(id);
    for (const path of [`${api}/event/${e}`, `${api}/event/${e}/`]) expect((await alice.call('GET', path)).body.id, path).toBe(id);
    for (const sub of ['stats', 'ticket-keys', 'timeline']) expect((await alice.call('GET', `${api}/event/${e}/${sub}`)).body.eventId, sub).toBe(id);
    for (const sub of ['scans', 'tickets']) expect((await alice.call('GET', `${api}/event/${e}/${sub}`)).status, sub).toBe(200);
    expect((await alice.call('GET', `${api}/guests/${e}`)).status).toBe(200);
    expect((await alice.call('GET', `${api}/team/event/${e}`)).status).toBe(200);
  });

  it('a + in a path is a plus, sent as it is or as %2B', async () => {
    await newEventWith('p+q');
    expect((await raw('GET', `${api}/event/p+q`)).body.id).toBe('p+q');
    expect((await raw('GET', `${api}/event/p%2Bq`)).body.id).toBe('p+q');
    expect((await raw('GET', `${api}/event/p%20q`)).status).toBe(404);
  });

  it('is case-sensitive: Gala and gala are two events, and neither answers for the other', async () => {
    await newEventWith('Gala');
    expect((await alice.call('GET', `${api}/event/gala`)).status).toBe(404);
    await newEventWith('gala');
    expect((await alice.call('GET', `${api}/event/Gala`)).body.title).toBe('Event Gala');
    expect((await alice.call('GET', `${api}/event/gala`)).body.title).toBe('Event gala');
  });

  it('refuses with 400 naming the id what no event can be: . and .. (also percent-encoded), control characters, over 128 characters, bad percent-encoding', async () => {
    for (const segment of ['.', '..', '%2E', '%2e%2E', '%00', 'a%1Fb', 'y'.repeat(129), '%E0%A4%A', '%ZZ', 'a%']) {
      for (const suffix of ['', '/stats', '/timeline']) {
        const reply = await raw('GET', `${api}/event/${segment}${suffix}`);
        expectRefused(reply, 'id', `${segment}${suffix}`);
      }
      expectRefused(await raw('GET', `${api}/guests/${segment}`), 'eventId', `guests/${segment}`);
    }
  });
});

describe('guest ids and customIds in paths', () => {
  const customIds = ['c/1', 'c 2', 'c+3', 'c.4', '..5', 'ü-6-🎉', 'z'.repeat(128), 'history', 'ticket', 'erase', 'personal-data', '100%', 'ends/'];
  let eventId: string;

  beforeAll(async () => {
    eventId = 'guest-paths';
    await newEventWith(eventId);
  });

  it.each(customIds)('customId %j names its guest on every guest route', async (customId) => {
    const created = await alice.call('POST', `${api}/guest`, { eventId, customId, firstName: 'Ada', email: 'ada@example.com' });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.id as string;
    const c = enc(customId);
    for (const path of [`${api}/guest/${c}`, `${api}/guest/${c}/`, `${api}/guest/${c}?eventId=${enc(eventId)}`]) {
      const read = await alice.call('GET', path);
      expect(read.status, path).toBe(200);
      expect(read.body).toMatchObject({ id, customId });
    }
    expect((await alice.call('GET', `${api}/guest/${c}/history`)).body.guestId).toBe(id);
    expect((await alice.call('GET', `${api}/guest/${c}/ticket`)).body.guestId).toBe(id);
    expect((await alice.call('GET', `${api}/guest/${c}/personal-data`)).body.guestId).toBe(id);
    // customIds are matched in any case (docs/identifiers.md).
    expect((await alice.call('GET', `${api}/guest/${enc(customId.toUpperCase())}`)).body.id).toBe(id);
  });

  it('a guest id is a GUID in any case, with or without a trailing slash; reissue and revoke reach the guest', async () => {
    const created = await alice.call('POST', `${api}/guest`, { eventId, firstName: 'Bo' });
    const id = created.body.id as string;
    for (const path of [`${api}/guest/${id.toUpperCase()}`, `${api}/guest/${id}/`, `${api}/guest/${id.toUpperCase()}/history`]) {
      expect((await alice.call('GET', path)).body[path.endsWith('history') ? 'guestId' : 'id'], path).toBe(id);
    }
    expect((await alice.call('POST', `${api}/guest/${id.toUpperCase()}/ticket/reissue`)).body.guestId).toBe(id);
    expect((await alice.call('POST', `${api}/guest/${id}/ticket/revoke`)).status).toBe(204);
  });

  it('erase by a customId with a slash erases that guest only', async () => {
    const kept = await alice.call('POST', `${api}/guest`, { eventId, customId: 'keep/me', firstName: 'Keep' });
    const gone = await alice.call('POST', `${api}/guest`, { eventId, customId: 'erase/me', firstName: 'Gone' });
    const erased = await alice.call('POST', `${api}/guest/${enc('erase/me')}/erase`, { reason: 'route ids test' });
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    expect(erased.body.id).toBe(gone.body.id);
    expect((await alice.call('GET', `${api}/guest/${gone.body.id}`)).body.firstName).not.toBe('Gone');
    expect((await alice.call('GET', `${api}/guest/${enc('keep/me')}`)).body).toMatchObject({ id: kept.body.id, firstName: 'Keep' });
  });

  it('refuses with 400 naming the id what no guest can be named by; an unknown one is 404', async () => {
    for (const segment of ['.', '..', '%2E%2E', '%00', 'z'.repeat(129), '%E0%A4%A']) {
      for (const suffix of ['', '/history', '/ticket', '/personal-data']) expectRefused(await raw('GET', `${api}/guest/${segment}${suffix}`), 'id', `${segment}${suffix}`);
    }
    const unknown = await alice.call('GET', `${api}/guest/${enc('no such/guest')}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');
  });
});

describe('template ids in paths (GUIDs)', () => {
  it('takes the GUID in any case and with a trailing slash; anything else is 400 on id, never 404 or 500', async () => {
    await newEventWith('template-paths');
    const created = await alice.call('POST', '/comms/v1/api/comms/template', { eventId: 'template-paths', name: 'T', html: '<p>Hi</p>' });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.id as string;
    for (const path of [id, id.toUpperCase(), `${id}/`]) expect((await alice.call('GET', `/comms/v1/api/comms/template/${path}`)).body.id).toBe(id);
    for (const segment of ['not-a-guid', 'a%2Fb', '%2E%2E', '..', 'caf%C3%A9', '%E0%A4%A', `${id}x`, 'x'.repeat(300)]) {
      expectRefused(await raw('GET', `/comms/v1/api/comms/template/${segment}`), 'id', segment);
      expectRefused(await raw('GET', `/comms/v1/api/comms/invitations/${segment}`), 'id', segment);
    }
  });
});

describe('team members and user names in paths', () => {
  const password = 'north gate scanner 7';
  const names = ['door/1', 'door 2', 'door+3', 'Door.4', 'dör-🎉-5', '..6', `long-${'n'.repeat(300)}`];

  it.each(names)('user name %j names its team member (in any case, as user names are unique case-insensitively)', async (name) => {
    const userName = `${alice.id}-${name}`;
    const id = `tm/${name}`.slice(0, 128);
    const created = await alice.call('POST', `${api}/teammember`, { userName, password, email: 'door@example.com', id });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body).toMatchObject({ userName, id });
    for (const asked of [userName, userName.toUpperCase()]) {
      const listed = await alice.call('GET', `${api}/teammembers/user/${enc(asked)}/events`);
      expect(listed.status, asked).toBe(200);
      expect(listed.body).toEqual([expect.objectContaining({ userName, id })]);
    }
  });

  it('the client’s own user name or email lists its team members', async () => {
    const listed = await alice.call('GET', `${api}/teammembers/user/${enc(alice.email)}/events`);
    expect(listed.status).toBe(200);
    expect(listed.body.length).toBeGreaterThanOrEqual(names.length);
  });

  it('refuses . and .. as a user name at creation with 400 naming userName (no URL path can carry them)', async () => {
    for (const userName of ['.', '..', ' .. ']) {
      const member = await alice.call('POST', `${api}/teammember`, { userName, password, email: 'door@example.com' });
      expectRefused(member, 'userName', `team member ${JSON.stringify(userName)}`);
      expect(member.body.errors[0].message).toMatch(/must not be \. or \.\./);
      expectRefused(await alice.call('PUT', '/users/v1/api/user', { id: alice.id, userName }), 'userName', `user ${JSON.stringify(userName)}`);
      const account = await request(service.url, 'POST', '/admin/v1/accounts', { email: `dots-${Date.now()}@example.com`, password, userName }, { authorization: `Bearer ${adminKey}` });
      expectRefused(account, 'userName', `account ${JSON.stringify(userName)}`);
    }
  });

  it('an account named . before the names were refused PUTs its read-back user unchanged; it cannot be renamed to ..', async () => {
    // Opened through the commands layer, which does not refuse the name (as accounts were opened before the HTTP schema did).
    const context = { tenantId: '', actor: { type: 'system' as const, id: 'test' }, correlationId: randomUUID(), now: new Date() };
    const email = `dot-${randomUUID().slice(0, 8)}@example.com`;
    const legacy = await registerAccount(service.services, context, { email, password, userName: '.' });
    const headers = { authorization: `Bearer ${await clientToken(service.url, legacy.id, legacy.clientSecret)}`, 'ocp-apim-subscription-key': legacy.subscriptionKey };
    const read = await request(service.url, 'GET', `/users/v1/api/users/email?email=${enc(email)}`, undefined, headers);
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    expect(read.body.userName).toBe('.');
    for (const body of [read.body, { ...read.body, userName: ' . ', companyName: 'Dots Ltd' }]) {
      const put = await request(service.url, 'PUT', '/users/v1/api/user', body, headers);
      expect(put.status, JSON.stringify(put.body)).toBe(204);
    }
    expectRefused(await request(service.url, 'PUT', '/users/v1/api/user', { ...read.body, userName: '..' }, headers), 'userName', 'renamed to ..');
    const after = await request(service.url, 'GET', `/users/v1/api/users/email?email=${enc(email)}`, undefined, headers);
    expect(after.body).toMatchObject({ userName: '.', companyName: 'Dots Ltd' });
  });

  it('a user name path no user has is 404; one that is not valid percent-encoding is 400 naming username', async () => {
    for (const segment of ['nobody-here', '%2E%2E', '%20']) {
      const reply = await raw('GET', `${api}/teammembers/user/${segment}/events`);
      expect(reply.status, segment).toBe(404);
      expect(reply.body.code).toBe('not_found');
    }
    expectRefused(await raw('GET', `${api}/teammembers/user/%E0%A4%A/events`), 'username', 'bad encoding');
  });
});

describe('account ids in admin paths', () => {
  const admin = { authorization: `Bearer ${adminKey}` };

  it('reads the account by its id in any case; others are 404 or 400 naming the parameter', async () => {
    expect((await raw('GET', `/admin/v1/accounts/${alice.id.toUpperCase()}`, admin)).body.id).toBe(alice.id);
    expect((await raw('GET', `/admin/v1/accounts/${alice.id}/`, admin)).body.id).toBe(alice.id);
    expect((await raw('GET', '/admin/v1/accounts/a%2Fb', admin)).status).toBe(404);
    for (const segment of ['..', '%00', 'x'.repeat(129), '%E0%A4%A']) expectRefused(await raw('GET', `/admin/v1/accounts/${segment}`, admin), 'id', segment);
    expectRefused(await raw('POST', `/admin/v1/accounts/${alice.id}/subscription-keys/%E0%A4%A/revoke`, admin), 'keyId', 'key id');
  });
});

describe('no path parameter is a 500', () => {
  it('a sweep of awkward segments over every route with a parameter answers below 500, in the error shape when refused', async () => {
    const segments = ['export', '%2F', '%2E', '%2E%2E', '%20', '+', '%2B', '%25', '%E0%A4%A', '%C3%28', '%F0%9F%8E%89', '%00', 'A'.repeat(200), '%u0041', '%'];
    const routes = [
      'GET /checkin/v1/api/event/{}',
      'GET /checkin/v1/api/event/{}/stats',
      'GET /checkin/v1/api/event/export/{}',
      'POST /checkin/v1/api/event/{}/timeline/export',
      'GET /checkin/v1/api/guest/{}',
      'POST /checkin/v1/api/guest/{}/erase',
      'GET /checkin/v1/api/guests/{}',
      'POST /checkin/v1/api/guests/{}/checkin',
      'GET /checkin/v1/api/teammembers/user/{}/events',
      'GET /checkin/v1/api/team/event/{}',
      'GET /comms/v1/api/comms/template/{}',
      'GET /comms/v1/api/comms/webhook/deliveries/{}',
    ];
    for (const route of routes) {
      const [method, pattern] = route.split(' ') as [string, string];
      for (const segment of segments) {
        const reply = await raw(method, pattern.replace('{}', segment), method === 'POST' ? { 'content-type': 'application/json', 'content-length': '0' } : {});
        const what = `${method} ${pattern.replace('{}', segment)}: ${JSON.stringify(reply.body)}`;
        expect(reply.status, what).toBeLessThan(500);
        if (reply.status >= 400) expect(reply.body, what).toMatchObject({ code: expect.any(String), message: expect.any(String) });
      }
    }
  });
});
