import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.js';

/** What the browser pages' answers carry (docs/api.md, docs/analytics.md "The dashboard"). */
const require = createRequire(import.meta.url);
const versionOf = (name: string) => (require(`${name}/package.json`) as { version: string }).version;

let service: TestService;
beforeAll(async () => {
  service = await startTestService({});
});
afterAll(async () => {
  await service?.close();
});

const get = (path: string) => fetch(`${service.url}${path}`);

describe('/docs security headers', () => {
  it.each(['/docs', '/docs/init.js', '/docs/assets/swagger-ui-bundle.js', '/docs/assets/swagger-ui.css'])(
    '%s may be framed by no site, loads from this origin only, and is never sniffed',
    async (path) => {
      const reply = await get(path);
      expect(reply.status).toBe(200);
      const csp = reply.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self';");
      expect(csp).toContain("connect-src 'self';");
      expect(reply.headers.get('x-content-type-options')).toBe('nosniff');
      expect(reply.headers.get('referrer-policy')).toBe('no-referrer');
    },
  );
});

describe('a deploy never runs a new page with an old cached library', () => {
  it("/dashboard names uPlot's version in the URLs of the files browsers keep a day, and has its own script asked again", async () => {
    const html = await (await get('/dashboard')).text();
    const v = versionOf('uplot');
    expect(html).toContain(`src="/dashboard/assets/uPlot.iife.min.js?v=${v}"`);
    expect(html).toContain(`href="/dashboard/assets/uPlot.min.css?v=${v}"`);
    for (const own of ['/dashboard/dashboard.js', '/dashboard/dashboard.css']) expect((await get(own)).headers.get('cache-control'), own).toBe('no-cache');
    const library = await get(`/dashboard/assets/uPlot.iife.min.js?v=${v}`);
    expect(library.headers.get('cache-control')).toBe('public, max-age=86400');
    expect(library.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it("/docs names Swagger UI's version in the URLs of the files browsers keep a day, and has the page and its init asked again", async () => {
    const page = await get('/docs');
    const html = await page.text();
    const v = versionOf('swagger-ui-dist');
    expect(html).toContain(`src="/docs/assets/swagger-ui-bundle.js?v=${v}"`);
    expect(html).toContain(`href="/docs/assets/swagger-ui.css?v=${v}"`);
    expect(page.headers.get('cache-control')).toBe('no-cache');
    expect((await get('/docs/init.js')).headers.get('cache-control')).toBe('no-cache');
    expect((await get(`/docs/assets/swagger-ui-bundle.js?v=${v}`)).headers.get('cache-control')).toBe('public, max-age=86400');
  });
});
