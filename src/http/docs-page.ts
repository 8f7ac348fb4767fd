import { createRequire } from 'node:module';
import path from 'node:path';
import express, { type Router } from 'express';

const require = createRequire(import.meta.url);
const assets = path.dirname(require.resolve('swagger-ui-dist/package.json'));

/** GET /docs: Swagger UI (served from the swagger-ui-dist package, no CDN) over /openapi.json. */
export function docsRouter(specUrl: string): Router {
  const router = express.Router();
  router.get('/docs', (_req, res) => {
    res.type('html').send(`<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Check-in service API</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>`);
  });
  router.get('/docs/init.js', (_req, res) => {
    res.type('js').send(`window.ui = SwaggerUIBundle({ url: ${JSON.stringify(specUrl)}, dom_id: '#swagger-ui' });`);
  });
  router.use('/docs/assets', express.static(assets, { index: false, maxAge: '1d' }));
  return router;
}
