import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestService, type TestService } from '../support/service.js';

/**
 * docs/webhooks.md writes out the shapes the webhook API answers. The OpenAPI document is what
 * typed clients are generated from: each field the page names must be in it, optional (`?`)
 * or required as the page says, and the document must name nothing the page leaves out.
 */
const page = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'webhooks.md'), 'utf8');

/** `{a, b?, c: [{d, e?}]}` as written on the page: the top-level names and the nested list's. */
function shape(text: string): { fields: Map<string, boolean>; nested: Map<string, boolean> } {
  const flat = text.replace(/\s+/g, ' ');
  const inner = /\[\{([^}]*)\}\]/.exec(flat);
  const read = (list: string) =>
    new Map(
      list
        .split(',')
        .map((part) => part.trim())
        .filter(Boolean)
        .map((part) => [part.replace(/[?:].*$/, '').trim(), part.includes('?')] as [string, boolean]),
    );
  return { fields: read(flat.replace(/^\{|\}$/g, '').replace(/\[\{[^}]*\}\]/, '')), nested: read(inner?.[1] ?? '') };
}

interface Schema {
  properties: Record<string, Schema>;
  required?: string[];
  items?: Schema;
}

function expectSameFields(schema: Schema, fields: Map<string, boolean>, what: string): void {
  expect(Object.keys(schema.properties).sort(), what).toEqual([...fields.keys()].sort());
  for (const [name, optional] of fields) expect(!(schema.required ?? []).includes(name), `${what}: ${name} optional`).toBe(optional);
}

let service: TestService;
let schemas: Record<string, Schema>;
beforeAll(async () => {
  service = await startTestService();
  schemas = (await request(service.url, 'GET', '/openapi.json')).body.components.schemas;
}, 120_000);
afterAll(() => service?.close());

describe('docs/webhooks.md: the shapes it writes out are the OpenAPI document\'s', () => {
  it('a delivery and its attemptLog entries (WebhookDelivery)', () => {
    const written = /A delivery: `(\{[^`]*\})`/.exec(page)?.[1];
    expect(written).toBeDefined();
    const { fields, nested } = shape(written!);
    expect(fields.has('leaseUntil')).toBe(true);
    expectSameFields(schemas.WebhookDelivery!, fields, 'WebhookDelivery');
    expectSameFields(schemas.WebhookDelivery!.properties.attemptLog!.items!, nested, 'WebhookDelivery.attemptLog[]');
  });

  it('GET /webhook (Webhook) and GET /events items (CommsEvent)', () => {
    const webhook = /\| GET \| `\/webhook` \| \| 200 `(\{[^`]*\})`/.exec(page)?.[1];
    const event = /\| GET \| `\/events` \|[^|]*\| 200 `\{items: \[(\{[^`\]]*\})\]/.exec(page)?.[1];
    expect(webhook).toBeDefined();
    expect(event).toBeDefined();
    expectSameFields(schemas.Webhook!, shape(webhook!).fields, 'Webhook');
    expectSameFields(schemas.CommsEvent!, shape(event!).fields, 'CommsEvent');
  });
});
