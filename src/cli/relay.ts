/**
 * npm run relay -- status
 * npm run relay -- reset <position>   re-publish every relayed event after <position> (-1: all history)
 *
 * Consumers dedupe on the event id, so re-publishing is safe. Stop the relay role first.
 */
import { relayRoutes } from '../workers/topics.js';
import { loadConfig } from '../config.js';
import { createPlatform } from '../main.js';
import { destination } from 'pino';
import { createLogger } from '../shared/logger.js';
import { relayCheckpoint } from '../workers/relay.js';
import { cliStart, commandLogLevel, requireStore, type CliHelp } from './common.js';

const help: CliHelp = {
  name: 'relay',
  summary: 'The relay (event store -> bus): its checkpoint, and re-publishing history.',
  commands: [
    { usage: 'status', does: 'the relay checkpoint and the event store head', example: 'status' },
    {
      usage: 'reset <position>',
      does: 're-publishes every event after <position> (-1: all history); consumers dedupe on the event id. Stop the relay role first',
      example: 'reset -1',
    },
  ],
};

const relayFilter = { streamPrefixes: relayRoutes.flatMap((route) => route.filter.streamPrefixes ?? ['']) };

async function main(): Promise<void> {
  const { args, init } = cliStart(help, process.argv.slice(2));
  const [command = 'status', value, ...extra] = args;
  if (command !== 'status' && command !== 'reset') throw new Error(`unknown command "${command}"; use status or reset <position> (--help shows examples)`);
  // A word past what the command takes was ignored: `relay status 42` read as status, `reset 42 43` moved to 42.
  const ignored = command === 'status' ? args.slice(1) : extra;
  if (ignored.length > 0) {
    throw new Error(`${command} does not take ${ignored.map((a) => JSON.stringify(a)).join(' ')}; use status, or reset <position> (--help shows examples). Nothing was changed`);
  }
  const config = loadConfig();
  requireStore(config, init);
  // Logs go to stderr: stdout is the command's result (LOG_LEVEL=info would mix the platform's lines into it).
  const platform = createPlatform(config, createLogger(commandLogLevel('warn'), destination({ dest: 2, sync: true })));
  try {
    const current = await platform.readStore.getCheckpoint(relayCheckpoint);
    if (command === 'status') {
      // The head the relay works towards: the last event it publishes (the events after it, other
      // streams or the server's own, never move its checkpoint; docs/eventstore.md).
      const head = await platform.eventStore.headPosition(relayFilter);
      const lag = Math.max(0, head - (current ?? -1));
      console.log(`relay checkpoint ${current ?? 'none'}; last event it publishes ${head}; ${lag === 0 ? 'caught up' : `${lag} positions behind`}`);
      return;
    }
    const position = Number(value);
    if (value === undefined || !Number.isInteger(position) || position < -1) {
      throw new Error(
        'reset needs a position: an integer >= -1 (-1 re-publishes all history), such as npm run relay -- reset -1; npm run relay -- status shows the checkpoint and the last event. Nothing was changed',
      );
    }
    // A checkpoint past the store's last event would make every role refuse to start (checkpoints ahead of the event store).
    const storeHead = await (platform.eventStore.endPosition?.() ?? platform.eventStore.headPosition());
    if (position > storeHead) {
      throw new Error(`reset ${position} is past the event store's head ${storeHead}; give a position from -1 to ${storeHead} (npm run relay -- status shows where it is). Nothing was changed`);
    }
    await platform.readStore.setCheckpoint(relayCheckpoint, position < 0 ? null : position);
    console.log(`relay checkpoint moved from ${current ?? 'none'} to ${position < 0 ? 'the beginning' : position}`);
  } finally {
    await platform.close();
  }
}

main().catch((error: Error) => {
  console.error(`relay: ${error.message}`);
  process.exit(1);
});
