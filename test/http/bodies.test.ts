import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';

let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService({ BODY_LIMIT: '10kb' });
  alice = await createClient(service);
});
afterAll(() => service.close());

const event = { title: 'Gala', startTime: '2026-12-01T18:00:00Z', endTime: '2026-12-01T23:00:00Z' };

/** Sends raw bytes and returns the raw response text (the server closes or answers). */
function raw(bytes: Buffer | string): Promise<string> {
  const { port } = new URL(service.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let text = '';
    socket.on('data', (chunk) => (text += chunk.toString('utf8')));
    socket.on('close', () => resolve(text));
    socket.on('error', (error) => (text ? resolve(text) : reject(error)));
    socket.write(bytes);
  });
}

const bodyOf = (response: string) => JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4));

describe('request bodies and methods', () => {
  it('answers JSON sent as text/plain with 415 unsupported_media_type, and creates nothing', async () => {
    const before = (await alice.call('GET', '/checkin/v1/api/events')).body.items.length;
    const reply = await alice.call('POST', '/checkin/v1/api/event', JSON.stringify(event), { 'content-type': 'text/plain' });
    expect(reply.status).toBe(415);
    expect(reply.body).toMatchObject({ code: 'unsupported_media_type' });
    expect(reply.body.message).toContain('application/json');
    expect((await alice.call('GET', '/checkin/v1/api/events')).body.items.length).toBe(before);
  });

  it('accepts application/json with a charset and application/*+json', async () => {
    const a = await alice.call('POST', '/checkin/v1/api/event', event, { 'content-type': 'application/json; charset=utf-8' });
    expect(a.status).toBe(200);
    const b = await alice.call('POST', '/checkin/v1/api/event', event, { 'content-type': 'application/merge-patch+json' });
    expect(b.status).toBe(200);
  });

  it('refuses a body that is not valid UTF-8 with 400 instead of storing U+FFFD', async () => {
    const body = Buffer.concat([Buffer.from('{"title":"Gala '), Buffer.from([0xc3, 0x28]), Buffer.from(`","startTime":"${event.startTime}","endTime":"${event.endTime}"}`)]);
    const response = await fetch(`${service.url}/checkin/v1/api/event`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.token}`, 'ocp-apim-subscription-key': alice.subscriptionKey, 'content-type': 'application/json' },
      body,
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 'invalid_encoding', errors: [{ path: '(body)' }] });
  });

  it('answers a declared Content-Length over BODY_LIMIT with 413 at once, without waiting for the body', async () => {
    const head =
      `POST /checkin/v1/api/event HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice.token}\r\n` +
      `Ocp-Apim-Subscription-Key: ${alice.subscriptionKey}\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n{"title":`;
    // Only the head and a few body bytes are sent: an answer proves the service did not wait for 50 MB.
    const response = await raw(head);
    expect(response).toMatch(/^HTTP\/1\.1 413 /);
    expect(response.toLowerCase()).toContain('connection: close');
    expect(bodyOf(response)).toMatchObject({ code: 'payload_too_large' });
  });

  it('answers a declared Content-Length over BODY_LIMIT without a token with 401 (Authentication rule 1), at once', async () => {
    const head = `POST /checkin/v1/api/event HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n{"title":`;
    const response = await raw(head);
    expect(response).toMatch(/^HTTP\/1\.1 401 /);
    // The rest of the 50 MB is not read off the socket to be thrown away.
    expect(response.toLowerCase()).toContain('connection: close');
    expect(bodyOf(response)).toMatchObject({ code: 'unauthorized' });
  });

  it('answers request headers over the limit with 431 in the error shape', async () => {
    const response = await raw(`GET /checkin/v1/api/events HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(response).toMatch(/^HTTP\/1\.1 431 /);
    expect(bodyOf(response)).toMatchObject({ code: 'request_header_fields_too_large' });
  });

  it('answers a request line over the limit with 431 too', async () => {
    const response = await raw(`GET /checkin/v1/api/event/${'x'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(response).toMatch(/^HTTP\/1\.1 431 /);
    expect(bodyOf(response).code).toBe('request_header_fields_too_large');
  });

  it('answers OPTIONS on the export path with the methods /openapi.json documents there (the event "export" is still read by GET: test/http/route-ids.test.ts)', async () => {
    const reply = await alice.call('OPTIONS', '/checkin/v1/api/event/export');
    expect(reply.status).toBe(204);
    expect(reply.headers.get('allow')).toBe('POST, OPTIONS');
    const eventPath = await alice.call('OPTIONS', '/checkin/v1/api/event/some-event');
    expect(eventPath.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
  });

  it('answers a wrong method on a known path with 405 and a correct Allow', async () => {
    const cases: [string, string, string][] = [
      ['DELETE', '/checkin/v1/api/event', 'POST, OPTIONS'],
      ['PUT', '/checkin/v1/api/event/export', 'POST, OPTIONS'],
      ['POST', '/checkin/v1/api/guests/e1/byinfo', 'GET, HEAD, OPTIONS'],
      ['GET', '/users/v1/api/user', 'PUT, OPTIONS'],
    ];
    for (const [method, path, allow] of cases) {
      const reply = await alice.call(method, path);
      expect(reply.status, `${method} ${path}`).toBe(405);
      expect(reply.headers.get('allow'), `${method} ${path}`).toBe(allow);
      expect(reply.body).toMatchObject({ code: 'method_not_allowed' });
    }
  });

  it('still answers 404 for a path no route knows', async () => {
    const reply = await alice.call('GET', '/checkin/v1/api/nothing-here');
    expect(reply.status).toBe(404);
    expect(reply.body.code).toBe('not_found');
  });
});
