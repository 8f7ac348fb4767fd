import { createRequire } from 'node:module';
import path from 'node:path';
import express, { type Router } from 'express';
import { dashboardScript } from './client-script.js';
import { dashboardStyles } from './styles.js';

const require = createRequire(import.meta.url);
const uplot = path.dirname(require.resolve('uplot/package.json'));
/**
 * The chart library's files are kept a day by browsers: their URLs name its version, so a deploy
 * that brings another version is fetched anew, never run from an old copy beside the new script.
 */
const uplotVersion = (require('uplot/package.json') as { version: string }).version;

export interface DashboardOptions {
  /**
   * Where the page asks for a token with the password grant: a URL, or a function that finds it
   * (an external issuer's token_endpoint, by discovery). Default: the dev provider's.
   */
  tokenUrl?: string | (() => Promise<string>);
  /**
   * Where "Sign out" revokes the refresh token (RFC 7009): a URL, or a function that finds it (an
   * external issuer's revocation_endpoint). Default: the dev provider's when tokenUrl is its
   * token endpoint, else none (the page then only forgets the tokens).
   */
  revocationUrl?: string | (() => Promise<string | undefined>);
  /** Seconds between refreshes. */
  refreshSeconds?: number;
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/**
 * GET /dashboard (docs/analytics.md): the door manager's live view. The page is static HTML;
 * its script logs in with the password grant, keeps the token in memory only, and polls the
 * timeline and funnel routes. uPlot is served from node_modules, never from a CDN.
 */
export function dashboardRouter(options: DashboardOptions = {}): Router {
  const router = express.Router();
  const { tokenUrl = '/core/connect/token' } = options;
  const revocationUrl = options.revocationUrl ?? (tokenUrl === '/core/connect/token' ? '/core/connect/revocation' : undefined);
  const origins = (urls: (string | undefined)[]) => [...new Set(urls.filter((u): u is string => !!u && /^https?:/i.test(u)).map((u) => new URL(u).origin))];
  const security = (...urls: (string | undefined)[]) => ({
    // An external issuer's token (and revocation) endpoint is the one other origin the page may call.
    'Content-Security-Policy': `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'${origins(urls).map((o) => ` ${o}`).join('')}; form-action 'none'; frame-ancestors 'none'; base-uri 'none'`,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
  });
  const assets = security();
  router.get('/dashboard', async (_req, res, next) => {
    let token: string;
    let revocation: string | undefined;
    try {
      token = typeof tokenUrl === 'string' ? tokenUrl : await tokenUrl();
      revocation = typeof revocationUrl === 'function' ? await revocationUrl() : revocationUrl;
    } catch (error) {
      next(error);
      return;
    }
    res.set({ ...security(token, revocation), 'Cache-Control': 'no-store' }).type('html').send(page(token, revocation, options.refreshSeconds));
  });
  // The page's own script and stylesheet change with every deploy: asked again each time.
  const own = { ...assets, 'Cache-Control': 'no-cache' };
  router.get('/dashboard/dashboard.js', (_req, res) => void res.set(own).type('js').send(dashboardScript));
  router.get('/dashboard/dashboard.css', (_req, res) => void res.set(own).type('css').send(dashboardStyles));
  router.use('/dashboard/assets', (_req, res, next) => {
    res.set(assets);
    next();
  });
  router.use('/dashboard/assets', express.static(path.join(uplot, 'dist'), { index: false, maxAge: '1d' }));
  return router;
}

function page(tokenUrl: string, revocationUrl: string | undefined, refreshSeconds = 5): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Door dashboard</title>
  <link rel="icon" href="data:,">
  <link rel="stylesheet" href="/dashboard/assets/uPlot.min.css?v=${uplotVersion}">
  <link rel="stylesheet" href="/dashboard/dashboard.css">
</head>
<body data-token-url="${escapeHtml(tokenUrl)}" data-revocation-url="${escapeHtml(revocationUrl ?? '')}" data-refresh-seconds="${refreshSeconds}">
  <a class="skip" href="#main">Skip to the figures</a>
  <header>
    <h1>Door dashboard</h1>
    <p id="status" role="status" aria-live="polite">Not signed in.</p>
  </header>
  <main id="main">
    <section id="login" aria-labelledby="login-title">
      <h2 id="login-title">Sign in</h2>
      <p>Sign in as the client or as a team member. The token stays in this page's memory; reloading signs you out.</p>
      <form id="login-form" novalidate>
        <label for="username">User name or email</label>
        <input id="username" name="username" autocomplete="username" required>
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required>
        <label for="subscription-key">Subscription key</label>
        <input id="subscription-key" name="subscriptionKey" autocomplete="off" required>
        <button type="submit">Sign in</button>
        <p id="login-error" class="error" role="alert"></p>
      </form>
    </section>
    <section id="board" hidden aria-labelledby="board-title">
      <h2 id="board-title" class="visually-hidden">Live figures</h2>
      <div class="toolbar">
        <label for="event">Event</label>
        <select id="event"></select>
        <label for="bucket">Bucket</label>
        <select id="bucket">
          <option value="1">1 min</option><option value="5" selected>5 min</option>
          <option value="15">15 min</option><option value="60">1 hour</option>
        </select>
        <button type="button" id="logout">Sign out</button>
      </div>
      <div class="cards">
        <div class="card"><h3>Inside now</h3><output id="inside-now" aria-live="polite">–</output></div>
        <div class="card"><h3>Admitted</h3><output id="admitted">–</output></div>
        <div class="card"><h3>Exits</h3><output id="exits">–</output></div>
        <div class="card"><h3>Rejected scans</h3><output id="rejected">–</output></div>
      </div>
      <section aria-labelledby="arrivals-title">
        <h3 id="arrivals-title">Arrivals and people inside</h3>
        <div id="arrivals-chart" class="chart" role="img" aria-label="Chart of people admitted per bucket and people inside"></div>
        <details><summary>Arrivals as a table</summary><div id="arrivals-table"></div></details>
      </section>
      <div class="columns">
        <section aria-labelledby="rejects-title">
          <h3 id="rejects-title">Rejected scans by reason</h3>
          <div id="rejects"></div>
        </section>
        <section aria-labelledby="gates-title">
          <h3 id="gates-title">Throughput per gate</h3>
          <div id="gates"></div>
        </section>
      </div>
      <section aria-labelledby="funnel-title">
        <h3 id="funnel-title">Invitation funnel</h3>
        <div id="funnel"></div>
      </section>
    </section>
  </main>
  <script src="/dashboard/assets/uPlot.iife.min.js?v=${uplotVersion}"></script>
  <script src="/dashboard/dashboard.js"></script>
</body>
</html>`;
}
