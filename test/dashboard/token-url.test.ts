import http from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.js';

const started: TestService[] = [];
afterAll(async () => {
  for (const service of started) await service.close();
});

async function dashboardOf(env: Record<string, string>) {
  const service = await startTestService(env);
  started.push(service);
  const reply = await fetch(`${service.url}/dashboard`);
  return { status: reply.status, csp: reply.headers.get('content-security-policy') ?? '', text: await reply.text() };
}

/** A stand-in OpenID issuer that serves only its discovery document. */
async function issuer(tokenEndpoint: string): Promise<{ url: string; close(): void }> {
  const server = http.createServer((req, res) => {
    if (req.url === '/.well-known/openid-configuration') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ issuer: 'x', token_endpoint: tokenEndpoint }));
    } else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, close: () => server.close() };
}

describe('GET /dashboard: where the page asks for a token', () => {
  it('uses the dev provider by default, and calls no other origin', async () => {
    const page = await dashboardOf({});
    expect(page.status).toBe(200);
    expect(page.text).toContain('data-token-url="/core/connect/token"');
    expect(page.csp).toContain("connect-src 'self';");
  });

  it('uses DASHBOARD_TOKEN_URL when set, and lets the page call that origin only', async () => {
    const page = await dashboardOf({ DASHBOARD_TOKEN_URL: 'https://login.example.com/oauth2/token' });
    expect(page.text).toContain('data-token-url="https://login.example.com/oauth2/token"');
    expect(page.csp).toContain("connect-src 'self' https://login.example.com;");
  });

  it("finds an external issuer's token endpoint by discovery", async () => {
    const provider = await issuer('https://id.example.org/connect/token');
    try {
      const page = await dashboardOf({ OIDC_ISSUER: provider.url, OIDC_AUDIENCE: 'checkin-api' });
      expect(page.status).toBe(200);
      expect(page.text).toContain('data-token-url="https://id.example.org/connect/token"');
      expect(page.csp).toContain("connect-src 'self' https://id.example.org;");
    } finally {
      provider.close();
    }
  });

  it('answers 503 naming the way out when the issuer cannot be asked', async () => {
    const provider = await issuer('https://unused.example');
    provider.close(); // nothing listens there any more
    const page = await dashboardOf({ OIDC_ISSUER: provider.url, OIDC_AUDIENCE: 'checkin-api' });
    expect(page.status).toBe(503);
    const body = JSON.parse(page.text);
    expect(body.code).toBe('unavailable');
    expect(body.message).toContain('DASHBOARD_TOKEN_URL');
  });
});
