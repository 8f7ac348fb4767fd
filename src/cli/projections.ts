/**
 * npm run projections -- rebuild [name ...]   rebuild read models from the event store
 * npm run projections -- status               checkpoints and lag
 *
 * With the embedded read store, stop the service first: it keeps documents in memory.
 */
import cliProgress from 'cli-progress';
import { loadConfig } from '../config.js';
import { createPlatform, projections } from '../main.js';
import { ProjectionRunner } from '../projections/runner.js';
import { createLogger } from '../shared/logger.js';

async function main(): Promise<void> {
  const [command = 'status', ...names] = process.argv.slice(2);
  const config = loadConfig();
  const logger = createLogger(process.env.LOG_LEVEL ?? 'warn');
  const platform = createPlatform(config, logger);
  try {
    const runner = new ProjectionRunner(platform.eventStore, platform.readStore, projections, logger);
    if (command === 'status') {
      for (const projection of projections) {
        const head = await platform.eventStore.headPosition(projection.filter);
        const position = (await platform.readStore.getCheckpoint(`projection:${projection.name}`)) ?? -1;
        console.log(`${projection.name.padEnd(14)} position ${position}  head ${head}  lag ${Math.max(0, head - position)}`);
      }
      return;
    }
    if (command !== 'rebuild') throw new Error(`unknown command "${command}"; use rebuild [name ...] or status`);
    const bar = new cliProgress.SingleBar(
      { format: 'rebuild {projection} [{bar}] {percentage}% | position {value}/{total} | {events} events | {eta}s left' },
      cliProgress.Presets.shades_classic,
    );
    const selected = projections.filter((p) => names.length === 0 || names.includes(p.name));
    const head = await platform.eventStore.headPosition({ streamPrefixes: selected.flatMap((p) => p.filter.streamPrefixes ?? ['']) });
    bar.start(Math.max(head, 0), 0, { projection: names.join(',') || 'all', events: 0 });
    const started = Date.now();
    let events = 0;
    await runner.rebuild(names, (progress) => {
      events = progress.events;
      bar.update(Math.min(progress.position, head), { events: progress.events });
    });
    bar.update(Math.max(head, 0));
    bar.stop();
    const seconds = (Date.now() - started) / 1000;
    console.log(`rebuilt ${names.join(', ') || 'every projection'}: ${events} events in ${seconds.toFixed(1)} s`);
  } finally {
    await platform.close();
  }
}

main().catch((error: Error) => {
  console.error(`projections: ${error.message}`);
  process.exit(1);
});
