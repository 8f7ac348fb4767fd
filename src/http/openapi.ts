import { z } from 'zod';
import { extendZodWithOpenApi, OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';

extendZodWithOpenApi(z);

/** Every route registers its zod schemas here; /openapi.json is generated from them. */
export const registry = new OpenAPIRegistry();

export const ErrorBody = registry.register(
  'Error',
  z.object({
    code: z.string().openapi({ example: 'validation_error' }),
    message: z.string(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  }),
);

export function openApiDocument(): ReturnType<OpenApiGeneratorV31['generateDocument']> {
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Event check-in, guest communications and accounts API',
      version: 'v1',
      description: 'Generated from the zod schemas that validate each request.',
    },
    servers: [{ url: '/' }],
  });
}
