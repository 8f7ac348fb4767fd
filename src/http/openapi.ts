import { z } from 'zod';
import { extendZodWithOpenApi, OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';

extendZodWithOpenApi(z);
// Messages in our words where zod's would puzzle a client: a field left out is "required" (not
// "expected string, received undefined"), a null is named as such, an empty text is "empty".
z.config({
  customError: (issue) => {
    if (issue.code === 'invalid_type' && issue.input === undefined) return 'required';
    if (issue.code === 'invalid_type' && issue.input === null) {
      return `must be ${/^[aeiou]/.test(issue.expected) ? 'an' : 'a'} ${issue.expected}, not null (a required field needs a value; an optional one that takes no null is left out)`;
    }
    if (issue.code === 'too_small' && issue.origin === 'string' && Number(issue.minimum) === 1) return 'must not be empty';
    return undefined;
  },
});

/** Every route registers its zod schemas here; /openapi.json is generated from them. */
export const registry = new OpenAPIRegistry();

registry.registerComponent('securitySchemes', 'bearer', {
  type: 'http',
  scheme: 'bearer',
  bearerFormat: 'JWT',
  description: 'An access token from the identity provider (`/core/connect/token` with the dev provider)',
});
registry.registerComponent('securitySchemes', 'subscriptionKey', {
  type: 'apiKey',
  in: 'header',
  name: 'Ocp-Apim-Subscription-Key',
  description: 'A live subscription key of the token’s client',
});

registry.registerComponent('securitySchemes', 'adminKey', {
  type: 'http',
  scheme: 'bearer',
  description: 'The operator key (`ADMIN_API_KEY`): `Authorization: Bearer <ADMIN_API_KEY>`. Only the /admin/v1 routes take it.',
});

export const ErrorBody = registry.register(
  'Error',
  z.object({
    code: z.string().openapi({ example: 'validation_error' }),
    message: z.string(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  }),
);

/** The groups of operations, in the order the docs page shows them; every operation's tag is one of them (redocly.yaml). */
const tags: [string, string][] = [
  ['Events', 'Create, read and list the client’s events'],
  ['Guests', 'Register, update, list and read guests of an event, with their audit history'],
  ['Door', 'Check-in, check-out, undo and blocks at the door; the scans and live counts of an event'],
  ['Team members', 'Door accounts of the client and their per-event counts'],
  ['Tickets', 'Signed ticket codes: the event’s public keys, offline sync, reissue and revoke'],
  ['Users', 'The client’s own account: email lookup, profile and password'],
  ['Templates', 'Invitation email templates of an event'],
  ['Invitations', 'Send invitation emails and follow each one'],
  ['Sending domain', 'The client’s own sending domain for invitation emails'],
  ['Webhooks', 'The client’s webhook: configuration, deliveries, and the comms events it is sent'],
  ['Export', 'Guest list exports of an event (CSV or Excel)'],
  ['Analytics', 'Arrivals timeline of an event and the invitation funnel, with their exports'],
  ['Personal data', 'A guest’s personal data: access (GDPR art. 15) and erasure (art. 17)'],
  ['Admin', 'The operator API (`ADMIN_API_KEY`): accounts and subscription keys'],
];

export function openApiDocument(): ReturnType<OpenApiGeneratorV31['generateDocument']> {
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Event check-in, guest communications and accounts API',
      version: 'v1',
      description: 'Generated from the zod schemas that validate each request.',
    },
    servers: [{ url: '/' }],
    tags: tags.map(([name, description]) => ({ name, description })),
  });
}
