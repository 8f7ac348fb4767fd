import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, request, startTestService, type Client, type TestService } from '../support/service.js';

let service: TestService;
let client: Client;

beforeAll(async () => {
  service = await startTestService();
  client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
});
afterAll(() => service.close());

describe('OpenAPI document', () => {
  it('describes only routes that exist: every documented method and path reaches a handler', async () => {
    const doc = (await request(service.url, 'GET', '/openapi.json')).body;
    const uuid = '00000000-0000-4000-8000-000000000000';
    const operations = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
      Object.keys(item).map((method) => ({ method: method.toUpperCase(), path })),
    );
    expect(operations.length).toBeGreaterThan(30);
    for (const { method, path } of operations) {
      const concrete = path.replace(/\{(\w+)\}/g, (_m, name: string) => (name === 'username' ? 'nobody' : uuid));
      const reply = await client.call(method, concrete, method === 'GET' ? undefined : {}, {
        authorization: path.startsWith('/admin') ? 'Bearer test-admin-key-0123456789' : `Bearer ${client.token}`,
      });
      const unrouted = reply.status === 404 && String(reply.body?.message ?? '').startsWith('no route for');
      expect(unrouted, `${method} ${path} is documented but not routed`).toBe(false);
    }
  });

  it('documents the error shape and the two security schemes’ headers on secured routes', async () => {
    const doc = (await request(service.url, 'GET', '/openapi.json')).body;
    expect(doc.components.schemas.Error.properties).toHaveProperty('code');
    const post = doc.paths['/checkin/v1/api/guest'].post;
    expect(post.responses).toHaveProperty('401');
    expect(post.requestBody.content['application/json'].schema).toBeDefined();
    expect(post.security).toEqual([{ bearer: [], subscriptionKey: [] }]);
    expect(doc.components.securitySchemes.subscriptionKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'Ocp-Apim-Subscription-Key' });
  });
});
