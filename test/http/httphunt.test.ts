import net from 'node:net';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, startTestService, type Client, type TestService } from '../support/service.js';

let service: TestService;
let alice: Client;
let eventId: string;

beforeAll(async () => {
  service = await startTestService({ CORS_ORIGINS: 'https://app.example' });
  alice = await createClient(service);
  eventId = await newEvent(alice);
});
afterAll(() => service.close());

const event = { title: 'Gala', startTime: '2026-12-01T18:00:00Z', endTime: '2026-12-01T23:00:00Z' };
const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
const guestCount = async () => (await alice.call('GET', `/checkin/v1/api/guests/${eventId}?limit=1000`)).body.items.length as number;

describe('JSON nesting deeper than 100 levels (RFC 8259 section 9: a parser may limit it) is 400, never 500', () => {
  const deep = nested(50_000);
  it.each([
    ['without an Idempotency-Key', {}],
    ['with an Idempotency-Key (its fingerprint walked the body recursively: a stack overflow, 500)', { 'idempotency-key': 'deep-1' }],
  ])('an unknown field nested 50,000 levels deep in a guest batch, %s: 400 on (body), nothing created', async (_label, headers) => {
    const before = await guestCount();
    const reply = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, `[{"firstName":"Ada","extra":${deep}}]`, headers);
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({ code: 'validation_error', errors: [{ path: '(body)', message: expect.stringContaining('100 levels') }] });
    expect(await guestCount()).toBe(before);
  });

  it('a whole body of 50,000 nested arrays with an Idempotency-Key on the door scan: 400, not 500', async () => {
    const reply = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, deep, { 'idempotency-key': 'deep-2' });
    expect(reply.status).toBe(400);
    expect(reply.body.code).toBe('validation_error');
  });

  it('100 levels are taken (an ignored extra field), with an Idempotency-Key', async () => {
    const reply = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, `[{"firstName":"Bo","extra":${nested(98)}}]`, { 'idempotency-key': 'deep-3' });
    expect(reply.status).toBe(200);
  });
});

describe('a lone UTF-16 surrogate escape in a JSON string (RFC 7493 section 2.1: not allowed) is 400 invalid_encoding naming the field', () => {
  it.each([
    ['a high surrogate alone', '"Ada\\ud800"', '0.firstName'],
    ['a low surrogate alone', '"\\udc00Ada"', '0.firstName'],
  ])('%s in a guest record: 400, nothing stored (BSON and every UTF-8 writer would store U+FFFD)', async (_label, text, path) => {
    const before = await guestCount();
    const reply = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, `[{"firstName":${text}}]`);
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({ code: 'invalid_encoding', errors: [{ path }] });
    expect(await guestCount()).toBe(before);
  });

  it('in an object key too', async () => {
    const reply = await alice.call('POST', '/checkin/v1/api/event', `{"title":"Gala","startTime":"${event.startTime}","endTime":"${event.endTime}","\\ud800":1}`);
    expect(reply.status).toBe(400);
    expect(reply.body.code).toBe('invalid_encoding');
  });

  it('an escaped surrogate pair (Python json.dumps writes emoji so) is the character, stored and answered as sent', async () => {
    const reply = await alice.call('POST', `/checkin/v1/api/guests/${eventId}`, '[{"firstName":"Ada \\ud83c\\udf89"}]');
    expect(reply.status).toBe(200);
    expect(reply.body[0].firstName).toBe('Ada 🎉');
  });
});

describe('names of a body that mean what the parser knows', () => {
  it('Content-Encoding: x-gzip is gzip (RFC 9110 section 8.4.1.3), not 415', async () => {
    const response = await fetch(`${service.url}/checkin/v1/api/event`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.token}`, 'ocp-apim-subscription-key': alice.subscriptionKey, 'content-type': 'application/json', 'content-encoding': 'x-gzip' },
      body: zlib.gzipSync(JSON.stringify(event)),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ title: 'Gala' });
  });

  it.each(['utf8', 'UTF8', '"utf8"', 'unicode-1-1-utf-8'])('charset=%s is UTF-8 (a WHATWG label of it), not 415 telling the client to send UTF-8', async (charset) => {
    const reply = await alice.call('POST', '/checkin/v1/api/event', JSON.stringify({ ...event, title: 'Gäla' }), { 'content-type': `application/json; charset=${charset}` });
    expect(reply.status).toBe(200);
    expect(reply.body.title).toBe('Gäla');
  });

  it('a charset that is not UTF-8 stays 415 (docs/identifiers.md), and so does an encoding not named gzip, deflate or br', async () => {
    const latin1 = await alice.call('POST', '/checkin/v1/api/event', JSON.stringify(event), { 'content-type': 'application/json; charset=latin1' });
    expect(latin1.status).toBe(415);
    const zstd = await alice.call('POST', '/checkin/v1/api/event', JSON.stringify(event), { 'content-encoding': 'zstd' });
    expect(zstd.status).toBe(415);
  });
});

/** Sends `head`, then `body` once the server has answered 100 Continue; resolves with all it got (hang guard far above real figures). */
function expectContinue(head: string, body: string): Promise<string> {
  const { port } = new URL(service.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let text = '';
    let sent = false;
    const guard = setTimeout(() => {
      socket.destroy();
      resolve(`${text}[no answer]`);
    }, 10_000);
    socket.on('data', (chunk) => {
      text += chunk.toString('utf8');
      if (!sent && text.startsWith('HTTP/1.1 100 Continue\r\n\r\n')) {
        sent = true;
        socket.write(body);
      }
      if (/\r\n\r\n[\s\S]*\}$/.test(text.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, ''))) {
        clearTimeout(guard);
        socket.end();
        resolve(text);
      }
    });
    socket.on('close', () => {
      clearTimeout(guard);
      resolve(text);
    });
    socket.on('error', (error) => (text ? resolve(text) : reject(error)));
    socket.write(head);
  });
}

describe('Expect: 100-continue (RFC 9110 section 10.1.1): 100 only once the service reads the body', () => {
  const json = JSON.stringify(event);
  const headOf = (headers: string, length = Buffer.byteLength(json)) =>
    `POST /checkin/v1/api/event HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n${headers}\r\n`;
  const auth = () => `Authorization: Bearer ${alice.token}\r\nOcp-Apim-Subscription-Key: ${alice.subscriptionKey}\r\n`;

  it('a request without a token gets its 401 instead of 100 Continue: the client never uploads the body', async () => {
    const answer = await expectContinue(headOf(''), json);
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 401 Unauthorized');
    expect(answer).not.toContain('100 Continue');
  });

  it('a declared length over BODY_LIMIT gets its 413 instead of 100 Continue', async () => {
    const answer = await expectContinue(headOf(auth(), 100 * 1024 * 1024), json);
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 413 Payload Too Large');
    expect(answer).not.toContain('100 Continue');
  });

  it('an accepted request gets 100 Continue, then its answer: the event is created', async () => {
    const answer = await expectContinue(headOf(auth()), json);
    expect(answer.startsWith('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n')).toBe(true);
    expect(JSON.parse(answer.slice(answer.lastIndexOf('\r\n\r\n') + 4))).toMatchObject({ title: 'Gala' });
  });

  it('another expectation is 417 in the error shape', async () => {
    const answer = await expectContinue(headOf(auth()).replace('100-continue', 'something-else'), json);
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 417 Expectation Failed');
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({ code: 'expectation_failed' });
  });
});

describe('a request target in absolute form (RFC 9112 section 3.2.2: a server must accept it)', () => {
  it('gets the CORS headers and Vary: Origin as the same request in origin form does', async () => {
    const { port } = new URL(service.url);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1');
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString('utf8')));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
      socket.write(
        `GET http://127.0.0.1:${port}/checkin/v1/api/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nOrigin: https://app.example\r\n` +
          `Authorization: Bearer ${alice.token}\r\nOcp-Apim-Subscription-Key: ${alice.subscriptionKey}\r\nConnection: close\r\n\r\n`,
      );
    });
    const head = answer.slice(0, answer.indexOf('\r\n\r\n')).toLowerCase();
    expect(head.split('\r\n')[0]).toBe('http/1.1 200 ok');
    expect(head).toContain('access-control-allow-origin: https://app.example');
    expect(head).toMatch(/\r\nvary: origin/);
  });
});
