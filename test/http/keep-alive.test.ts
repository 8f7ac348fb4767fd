import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startTestService } from '../support/service.js';

/**
 * docs/operations.md "Keep-alive behind a load balancer": Node must keep an idle connection
 * longer than the balancer in front does, or the balancer's reuse of a connection Node is
 * closing is a 502. What is checked here is that the setting reaches the server (no timing).
 */
describe('HTTP_KEEP_ALIVE_TIMEOUT_MS', () => {
  it('defaults to 65 s, past the 60 s idle timeout of AWS ALB and nginx, with the header timeout a second above it', async () => {
    const service = await startTestService();
    try {
      expect(service.server!.keepAliveTimeout).toBe(65_000);
      expect(service.server!.headersTimeout).toBe(66_000);
    } finally {
      await service.close();
    }
  });

  it('takes a longer one (Google Cloud load balancers keep connections 600 s): the header timeout follows', async () => {
    const service = await startTestService({ HTTP_KEEP_ALIVE_TIMEOUT_MS: '620000' });
    try {
      expect(service.server!.keepAliveTimeout).toBe(620_000);
      expect(service.server!.headersTimeout).toBe(621_000);
    } finally {
      await service.close();
    }
  });

  it('never takes the header timeout below Node\'s own 60 s, whatever the keep-alive', async () => {
    const service = await startTestService({ HTTP_KEEP_ALIVE_TIMEOUT_MS: '5000' });
    try {
      expect(service.server!.keepAliveTimeout).toBe(5000);
      expect(service.server!.headersTimeout).toBe(60_000);
    } finally {
      await service.close();
    }
  });

  it('does not hold up the shutdown drain: an idle kept-alive connection is closed by the service when it stops', async () => {
    const service = await startTestService();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const socket = await new Promise<import('node:net').Socket>((resolve, reject) => {
        const get = http.get(`${service.url}/healthz`, { agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(get.socket!));
        });
        get.on('error', reject);
      });
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      // Without the drain closing it, the socket would stay open for the whole 65 s keep-alive.
      await service.close();
      await closed;
      expect(socket.destroyed).toBe(true);
    } finally {
      agent.destroy();
    }
  });

  it('refuses a value that is not a whole number of milliseconds from 1000, naming the variable', () => {
    expect(() => loadConfig({ HTTP_KEEP_ALIVE_TIMEOUT_MS: '65s' })).toThrow(/invalid configuration: HTTP_KEEP_ALIVE_TIMEOUT_MS must be a non-negative integer such as 65000, got "65s"/);
    // 0 would keep idle connections forever in Node; under a second is no keep-alive worth the name.
    expect(() => loadConfig({ HTTP_KEEP_ALIVE_TIMEOUT_MS: '0' })).toThrow(
      /HTTP_KEEP_ALIVE_TIMEOUT_MS must be at least 1000 and at most 2147482647 \(milliseconds, longer than the idle timeout of the load balancer in front: AWS ALB and nginx 60 s, Google Cloud 600 s\), such as 65000, got 0/,
    );
    expect(() => loadConfig({ HTTP_KEEP_ALIVE_TIMEOUT_MS: '3000000000' })).toThrow(/HTTP_KEEP_ALIVE_TIMEOUT_MS must be at least 1000 and at most 2147482647/);
    expect(loadConfig({}).http.keepAliveTimeoutMs).toBe(65_000);
  });
});
