/**
 * A receiver that closes a kept-alive connection just as the next delivery goes out on it (it
 * keeps idle connections shorter than we do and sends no Keep-Alive hint: gunicorn's 2 s, many
 * proxies) resets that request. The sender sends it once more at once, on a new connection,
 * instead of failing the attempt (a retry some seconds later).
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebhookSender } from '../../src/workers/webhook-sender.js';

const servers: net.Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

/** A bare HTTP/1.1 receiver: answers the first request on each connection 200 (keeping it open, no hint), resets the second. */
async function resettingReceiver(): Promise<{ port: number; requests: () => number; connections: () => number }> {
  let requests = 0;
  let connections = 0;
  const server = net.createServer((socket) => {
    connections += 1;
    let onThisSocket = 0;
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      // One request per chunk here: headers, then the body its Content-Length names.
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/content-length: *(\d+)/i.exec(buffered.slice(0, end))?.[1] ?? 0);
      if (buffered.length < end + 4 + length) return;
      buffered = buffered.slice(end + 4 + length);
      onThisSocket += 1;
      if (onThisSocket === 1) {
        requests += 1;
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n');
      } else {
        socket.resetAndDestroy();
      }
    });
    socket.on('error', () => {});
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as net.AddressInfo).port, requests: () => requests, connections: () => connections };
}

describe('a kept-alive connection the receiver resets', () => {
  it('sends the delivery again on a new connection, and it is delivered', async () => {
    const receiver = await resettingReceiver();
    const sender = new WebhookSender({ policy: { allowInsecure: true }, resolver: async () => [{ address: '127.0.0.1', family: 4 }], timeoutMs: 10_000 });
    const request = (n: number) => ({
      url: `http://127.0.0.1:${receiver.port}/hook`,
      body: JSON.stringify({ n }),
      secret: 's',
      webhookId: `w${n}`,
      eventType: 'comms.test',
      unixTime: Math.floor(Date.now() / 1000),
    });
    try {
      expect(await sender.send(request(1))).toEqual({ kind: 'response', statusCode: 200 });
      // The same kept-alive connection: the receiver resets it; a new one answers.
      expect(await sender.send(request(2))).toEqual({ kind: 'response', statusCode: 200 });
      expect(receiver.requests()).toBe(2);
      expect(receiver.connections()).toBe(2);
    } finally {
      sender.close();
    }
  });
});
