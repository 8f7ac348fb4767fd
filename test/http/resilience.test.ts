import { describe, expect, it } from 'vitest';
import { refusedPort } from '../support/ports.js';
import { request, startTestService } from '../support/service.js';

describe('a real server that is down at start', () => {
  it('keeps the process up, fails /readyz naming the adapter, and keeps retrying', async () => {
    const service = await startTestService({
      MONGO_URL: `mongodb://127.0.0.1:${refusedPort}/?serverSelectionTimeoutMS=300&connectTimeoutMS=300`,
      KAFKA_BROKERS: `127.0.0.1:${refusedPort}`,
    });
    try {
      expect((await request(service.url, 'GET', '/healthz')).status).toBe(200);
      const ready = await request(service.url, 'GET', '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.ready).toBe(false);
      expect(ready.body.checks.readStore.ok).toBe(false);
      expect(ready.body.checks.bus.ok).toBe(false);
      expect(ready.body.checks.eventStore.ok).toBe(true);
      // Still answering a while later: nothing exited.
      await new Promise((r) => setTimeout(r, 500));
      expect((await request(service.url, 'GET', '/healthz')).status).toBe(200);
    } finally {
      await service.close();
    }
  }, 120_000);

  it('refuses a corrupt embedded store file at start with an error naming the path', async () => {
    const fs = await import('node:fs');
    const os = await import('node:os');
    const path = await import('node:path');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corrupt-'));
    fs.writeFileSync(path.join(dir, 'events.sqlite'), 'not a database at all'.repeat(200));
    await expect(startTestService({}, { dataDir: dir })).rejects.toThrow(path.join(dir, 'events.sqlite'));
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
