/** npm run bench -- <suite ...>: store, auth, checkin, byinfo, export, webhooks, sends, overload, analytics, real-servers (default: store auth checkin). */
import { storeBench } from './store.js';

const suites: Record<string, () => Promise<void>> = {
  store: storeBench,
  auth: async () => (await import('./auth.js')).authBench(),
  checkin: async () => (await import('./checkin.js')).checkinBench(),
  byinfo: async () => (await import('./byinfo.js')).byinfoBench(),
  export: async () => (await import('./export.js')).exportBench(),
  sends: async () => (await import('./sends.js')).sendsBench(),
  overload: async () => (await import('./overload.js')).overloadBench(),
  analytics: async () => (await import('./analytics.js')).analyticsBench(),
  'real-servers': async () => (await import('./real-servers.js')).realServersBench(),
  webhooks: async () => {
    await import('./webhooks.js');
  },
};

const chosen = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['store', 'auth', 'checkin'];
for (const name of chosen) {
  const suite = suites[name];
  if (!suite) {
    console.error(`unknown suite "${name}"; use: ${Object.keys(suites).join(', ')}`);
    process.exit(2);
  }
  console.log(`\n== ${name} ==`);
  await suite();
}
process.exit(0);
