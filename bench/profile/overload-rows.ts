/**
 * One or more rows of the overload bench alone, for quick A/B runs:
 *   ROWS=on,polite BENCH_GUESTS=5000 BENCH_SECONDS=10 TAG=label npx tsx bench/profile/overload-rows.ts
 * `on` is autocannon's closed loop with load shedding at the default threshold; `polite` is
 * clients that wait Retry-After (bench/polite-load.ts). Prints one line per row; records nothing.
 */
import { loadConfig } from '../../src/config.js';
import { scanRun } from '../overload.js';

const threshold = loadConfig({}).observability.overloadMaxEventLoopDelayMs;
for (const row of (process.env.ROWS ?? 'on,polite').split(',')) {
  const { scans } = await scanRun(threshold, row === 'polite');
  const seconds = scans.durationSec || Number(process.env.BENCH_SECONDS ?? 15);
  console.log(
    `${row} ${process.env.TAG ?? ''}: accepted ${(scans.accepted.count / seconds).toFixed(0)}/s, p50 ${scans.accepted.p50.toFixed(0)} ms, p99 ${scans.accepted.p99.toFixed(0)} ms` +
      ` | refused ${(scans.refused.count / seconds).toFixed(0)}/s, p99 ${scans.refused.p99.toFixed(0)} ms | first answers p99 ${scans.first.p99.toFixed(0)} ms`,
  );
}
