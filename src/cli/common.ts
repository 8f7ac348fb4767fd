/**
 * What every operator command shares (issue 12, item 7): `--help`, and the check that
 * DATA_DIR holds a store before anything opens it (opening would create an empty one).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';

export interface CliHelp {
  /** `npm run <name> --` */
  name: string;
  summary: string;
  commands: { usage: string; does: string; example: string }[];
  notes?: string[];
}

export function helpText(help: CliHelp): string {
  const lines = [`${help.summary}`, '', `usage: npm run ${help.name} -- <command> [options]`, '', 'commands:'];
  for (const command of help.commands) {
    lines.push(`  ${command.usage}`, `      ${command.does}`, `      example: npm run ${help.name} -- ${command.example}`);
  }
  lines.push(
    '',
    'options for every command:',
    '  --help    this text',
    '  --init    create an empty store in DATA_DIR when it holds none (otherwise the command refuses)',
    '',
    'configuration: the service\'s environment (DATA_DIR, EVENTSTORE_URL, MONGO_URL, KAFKA_BROKERS, ...); see README.md.',
  );
  if (help.notes) lines.push('', ...help.notes);
  return `${lines.join('\n')}\n`;
}

/** Prints the help and exits 0 when asked for; strips `--init` and returns whether it was given. */
export function cliStart(help: CliHelp, argv: string[]): { args: string[]; init: boolean } {
  if (argv.includes('--help') || argv.includes('-h') || argv[0] === 'help') {
    process.stdout.write(helpText(help));
    process.exit(0);
  }
  return { args: argv.filter((a) => a !== '--init'), init: argv.includes('--init') };
}

/**
 * With the embedded event store, the store is DATA_DIR/events.sqlite: a command run against
 * a folder without it (a typo, the wrong working directory) would create an empty store and
 * report on nothing. Refuse, naming the path, unless `--init` says to create one. A command that
 * has nothing to do on an empty store (`initApplies: false`: backup, reapply-erasures,
 * hold-pending-sends) refuses with or without `--init`, and its message does not offer it.
 */
export function requireStore(config: Config, init: boolean, options: { command?: string; initApplies?: boolean } = {}): void {
  if (config.eventStoreUrl) return;
  const file = path.join(config.dataDir, 'events.sqlite');
  const initApplies = options.initApplies ?? true;
  if (fs.existsSync(file) || (init && initApplies)) return;
  throw new Error(
    `no event store at ${file} (DATA_DIR=${config.dataDir}). Point DATA_DIR at the service's data folder` +
      (initApplies
        ? ', or pass --init to create an empty store there.'
        : `; ${options.command ?? 'this command'} has nothing to do on an empty store, so --init does not apply to it.`),
  );
}

/**
 * The commands' log level: LOG_LEVEL, else theirs (`warn`, or `info` for progress lines). Empty counts
 * as unset, as it does for the service: `LOG_LEVEL=` made pino refuse ('default level: must be included').
 */
export const commandLogLevel = (fallback: 'warn' | 'info'): string => process.env.LOG_LEVEL || fallback;
