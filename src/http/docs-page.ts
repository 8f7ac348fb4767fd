import { createRequire } from 'node:module';
import path from 'node:path';
import express, { type Router } from 'express';

const require = createRequire(import.meta.url);
const assets = path.dirname(require.resolve('swagger-ui-dist/package.json'));
/** Swagger UI's files are kept a day by browsers: their URLs name its version, so an upgrade is fetched anew. */
const version = (require('swagger-ui-dist/package.json') as { version: string }).version;

/**
 * What every answer under /docs carries (docs/api.md): the page, its script and the Swagger UI
 * files may load and call this origin only (the page is where a token gets typed into
 * "Authorize"), no other site may frame it, and no file is taken for another type.
 */
const security = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

/** GET /docs: Swagger UI (served from the swagger-ui-dist package, no CDN) over /openapi.json. */
export function docsRouter(specUrl: string): Router {
  const router = express.Router();
  router.use('/docs', (_req, res, next) => {
    res.set(security);
    next();
  });
  // The page and its init script are asked again each time; the versioned assets are kept a day.
  router.get('/docs', (_req, res) => {
    res.set('Cache-Control', 'no-cache').type('html').send(`<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Check-in service API</title>
  <link rel="icon" href="data:,">
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css?v=${version}">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js?v=${version}"></script>
  <script src="/docs/init.js"></script>
</body>
</html>`);
  });
  router.get('/docs/init.js', (_req, res) => {
    res.set('Cache-Control', 'no-cache').type('js').send(`window.ui = SwaggerUIBundle({ url: ${JSON.stringify(specUrl)}, dom_id: '#swagger-ui' });`);
  });
  router.use('/docs/assets', express.static(assets, { index: false, maxAge: '1d' }));
  return router;
}
