// Loads the workers' thread entry (thread-entry.ts) when the service runs from source under tsx
// (npm start, tests): in a worker thread on Node 20 only tsx's require hook is in place, not its
// import hooks, so the TypeScript entry is required, as piscina does with its tasks.
const { workerData } = require('node:worker_threads');
require(workerData.entryFile);
