/**
 * npm run projections -- rebuild [name ...]   rebuild read models from the event store
 * npm run projections -- status               checkpoints and lag
 *
 * `rebuild` refuses while a projections role or another rebuild holds the read store (its
 * heartbeat, see src/projections/holder.ts): stop that role first. While it runs it holds the
 * store itself, so a service started meanwhile refuses to project. docs/operations.md,
 * Operator commands.
 */
import { destination } from 'pino';
import { loadConfig } from '../config.js';
import { createPlatform, projections } from '../main.js';
import { checkpointName } from '../projections/projection.js';
import { ProjectionRunner } from '../projections/runner.js';
import { createLogger } from '../shared/logger.js';
import { claimProjections, describeHolder, type HolderDoc } from '../projections/holder.js';
import { loggedRebuild } from '../projections/rebuild-log.js';
import { recordedVersion, versionOf } from '../projections/versions.js';
import { cliStart, commandLogLevel, requireStore, type CliHelp } from './common.js';

const help: CliHelp = {
  name: 'projections',
  summary: 'Read models (projections): their checkpoints, and rebuilding them from the event store.',
  commands: [
    { usage: 'status', does: 'each projection\'s checkpoint, the event store head and the lag', example: 'status' },
    {
      usage: 'rebuild [name ...]',
      does: `empties the named projections (all when none is named) and replays every event into them. Refuses while a projections role runs on the same read store: stop it first (a killed one counts as gone after its heartbeat is 20 s old). Names: ${projections.map((p) => p.name).join(', ')}`,
      example: 'rebuild guests invitations',
    },
  ],
};

async function main(): Promise<void> {
  const { args, init } = cliStart(help, process.argv.slice(2));
  const [command = 'status', ...names] = args;
  if (command !== 'status' && command !== 'rebuild') throw new Error(`unknown command "${command}"; use rebuild [name ...] or status (--help shows examples)`);
  // `status guests` printed every projection as if the name had been read.
  if (command === 'status' && names.length > 0) {
    throw new Error(`status takes no names, it lists every projection (${names.map((n) => JSON.stringify(n)).join(' ')} given); rebuild takes names (--help shows examples)`);
  }
  const config = loadConfig();
  requireStore(config, init);
  // Logs go to stderr: stdout is the command's result (LOG_LEVEL=info would mix the platform's lines into it).
  const logger = createLogger(commandLogLevel('warn'), destination({ dest: 2, sync: true }));
  const platform = createPlatform(config, logger);
  try {
    const runner = new ProjectionRunner(platform.eventStore, platform.readStore, projections, logger);
    if (command === 'status') {
      for (const projection of projections) {
        const head = await platform.eventStore.headPosition(projection.filter);
        const position = (await platform.readStore.getCheckpoint(checkpointName(projection))) ?? -1;
        const built = position >= 0 ? ((await recordedVersion(platform.readStore, projection.name)) ?? 1) : versionOf(projection);
        const version = built === versionOf(projection) ? `version ${built}` : `version ${built}, code ${versionOf(projection)}: rebuilt at the next start`;
        console.log(`${projection.name.padEnd(14)} position ${position}  head ${head}  lag ${Math.max(0, head - position)}  ${version}`);
      }
      return;
    }
    const unknown = names.filter((name) => !projections.some((p) => p.name === name));
    if (unknown.length > 0) throw new Error(`unknown projection ${unknown.join(', ')}; known: ${projections.map((p) => p.name).join(', ')}`);
    // The rebuild holds the read store's projections as a service's projections role does, so a
    // service started meanwhile refuses to project (and a second rebuild refuses to run).
    let lost: HolderDoc | null | undefined;
    const claim = await claimProjections(platform.readStore, logger, { role: 'rebuild', onLost: (taker) => (lost = taker) });
    if ('other' in claim) throw new Error(`${describeHolder(claim.other)} holds this read store; stop it (or the whole service) first, then run rebuild again`);
    try {
      // Progress as JSON lines on stderr, as backup and reapply-erasures log theirs: a bar drawn only on a
      // terminal said nothing in a log file or a CI job.
      const progress = createLogger(commandLogLevel('info'), destination({ dest: 2, sync: true }));
      const { events, seconds } = await loggedRebuild(runner, platform.eventStore, names, progress, 'projections rebuild', () => {
        if (lost !== undefined) {
          throw new Error(
            `${lost ? describeHolder(lost) : 'another process'} took this read store's projections over while the rebuild ran (its heartbeat had gone stale); ` +
              'the read models are half rebuilt: stop that process, then run rebuild again',
          );
        }
      });
      console.log(`rebuilt ${names.join(', ') || 'every projection'}: ${events} events in ${seconds.toFixed(1)} s`);
    } finally {
      await claim.holding.stop();
    }
  } finally {
    await platform.close();
  }
}

main().catch((error: Error) => {
  console.error(`projections: ${error.message}`);
  process.exit(1);
});
