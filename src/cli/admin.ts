/**
 * Operator command line (the same commands as /admin/v1):
 *   npm run admin -- create-account --email a@b.c (--password '...' | --password-stdin) [--user-name x] [--first-name x]
 *                    [--last-name x] [--company-name x] [--time-zone-id x] [--comms-api-enabled true|false]
 *                    [--sender-trusted true|false]
 *   npm run admin -- set-access <accountId> [--comms-api-enabled true|false] [--sender-trusted true|false]
 *   npm run admin -- list-accounts
 *   npm run admin -- issue-key <accountId>
 *   npm run admin -- revoke-key <accountId> <keyId>
 *   npm run admin -- rewrap-personal-data-keys
 *   npm run admin -- reencrypt-secrets
 *   npm run admin -- backup <dir> [--include-key-files] [--pages-per-step n] [--pause-ms n]
 *   npm run admin -- reapply-erasures [--from <file>]
 *   npm run admin -- hold-pending-sends [--dry-run]
 *   npm run admin -- dead-letters list [--topic T] [--limit N]
 *   npm run admin -- dead-letters replay [--topic T] (--ids id,... | --all) [--dry-run]
 * Prints JSON. Secrets are shown once. backup, reapply-erasures, hold-pending-sends, reencrypt-secrets and dead-letters replay log progress on stderr
 * (docs/operations.md, Backups and restores).
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { issueSubscriptionKey, registerAccount, revokeSubscriptionKey, setAccountAccess } from '../commands/accounts.js';
import { findAccount, listAccounts, type AccountSummary } from '../commands/list-accounts.js';
import { AccountCreateBody } from '../http/schemas/account.js';
import type { Config } from '../config.js';
import type { CommandContext } from '../commands/handle-command.js';
import type { Services } from '../commands/services.js';
import { loadConfig } from '../config.js';
import { createBus, createPlatform, masterKeyProblem, personalDataSettings } from '../main.js';
import { systemClock } from '../shared/clock.js';
import { newId } from '../shared/ids.js';
import { createLogger } from '../shared/logger.js';
import { destination } from 'pino';
import { holdPendingSends } from '../commands/hold-pending-sends.js';
import { projectionsHolder } from '../projections/holder.js';
import { reapplyErasures } from '../commands/reapply-erasures.js';
import { reencryptSecrets } from '../commands/reencrypt-secrets.js';
import { webhookSettings } from '../commands/webhooks.js';
import { backupDataDir, restoreDataDir, type RestoreSummary } from './backup.js';
import { deadLetterSources, listDeadLetters, replayDeadLetters, sourceTopicOf } from '../commands/dead-letters.js';
import { cliStart, commandLogLevel, helpText, requireStore, type CliHelp } from './common.js';

const help: CliHelp = {
  name: 'admin',
  summary: 'Accounts, as the admin API (/admin/v1) manages them. Prints JSON; secrets are shown once.',
  commands: [
    {
      usage: 'create-account --email <email> (--password <password> | --password-stdin) [--user-name x] [--first-name x] [--last-name x] [--company-name x] [--time-zone-id x] [--comms-api-enabled true|false] [--sender-trusted true|false]',
      does:
        'opens an account; prints its id, client secret and subscription key. --password-stdin reads the password from standard input ' +
        '(npm prints a script\'s arguments, and the process list shows them: a password given as an argument is seen)',
      example: "create-account --email ops@example.com --password-stdin --comms-api-enabled true < passphrase.txt",
    },
    {
      usage: 'list-accounts',
      does: 'lists every account: id, email, user name, company name, access and the ids of its subscription keys (no secrets)',
      example: 'list-accounts',
    },
    {
      usage: 'set-access <accountId> [--comms-api-enabled true|false] [--sender-trusted true|false]',
      does: 'switches the comms API and sender trust of an account',
      example: 'set-access 3f2a... --sender-trusted true',
    },
    { usage: 'issue-key <accountId>', does: 'issues a new subscription key', example: 'issue-key 3f2a...' },
    { usage: 'revoke-key <accountId> <keyId>', does: 'revokes a subscription key', example: 'revoke-key 3f2a... key_1' },
    {
      usage: 'rewrap-personal-data-keys',
      does: "re-wraps every guest's data key with the current master key (PII_MASTER_KEY_ID); then the old master key can be removed (docs/personal-data.md)",
      example: 'rewrap-personal-data-keys',
    },
    {
      usage: 'reencrypt-secrets',
      does:
        'encrypts every webhook signing secret and every event\'s current ticket signing key again with the current secrets key (WEBHOOK_ENCRYPTION_KEY_ID); ' +
        'then the old key can be removed from WEBHOOK_ENCRYPTION_KEYS (docs/webhooks.md). Progress as JSON lines on stderr; safe to stop and run again. ' +
        'Exits 1 naming each key id that stored secrets still need and the keyring lacks',
      example: 'reencrypt-secrets',
    },
    {
      usage: 'backup <dir> [--include-key-files] [--pages-per-step n] [--pause-ms n]',
      does:
        'copies the embedded SQLite files of DATA_DIR into <dir> (new or empty, outside DATA_DIR) while the service runs, with SQLite\'s online backup: ' +
        'read models, bus and rate limits first, the event store (with the data keys) last; writes manifest.json last. Progress as JSON lines on stderr. ' +
        '--pages-per-step (default 1000 pages of 4 kB) and --pause-ms (default 0) pace the copy on a busy host. ' +
        'Development key files (personal-data/master-keys.json, ...) only with --include-key-files. With EVENTSTORE_URL or MONGO_URL it names the servers\' own backup tools instead',
      example: 'backup /backups/checkin-2026-11-24',
    },
    {
      usage: 'restore <backup> [--from <file>]',
      does:
        'puts a backup admin backup made into an empty DATA_DIR, then holds its pending sends (hold-pending-sends) and erases again the guests whose erasure it undid (reapply-erasures; ' +
        '--from: the erasure list kept outside the backups). Refuses, changing nothing, a folder without manifest.json, a file whose SHA-256 differs from it, a DATA_DIR holding data ' +
        '(a running service, or newer data), and a backup whose master key PII_MASTER_KEYS or the key file does not hold. Then start the service',
      example: 'restore /backups/checkin-2026-11-24 --from erasures-since-backup.jsonl',
    },
    {
      usage: 'reapply-erasures [--from <file>]',
      does:
        'after a restore, before users come back: erases again every guest whose erasure the restore undid: the guests of the event store\'s GuestErased events whose data key is back, ' +
        'and (--from) the guests of an erasure list kept outside the backups (the service\'s "guest personal data erased" log lines, or guest ids, one a line). Idempotent',
      example: 'reapply-erasures --from erasures-since-backup.jsonl',
    },
    {
      usage: 'hold-pending-sends [--dry-run]',
      does:
        'after a restore, before the service starts: fails as outcome_unknown (comms.failed) every invitation email the restored event store shows requested, retrying or being sent: ' +
        'it may have gone out after the backup was taken, and sending it again could email the guest twice. Check the provider activity for the listed invitations, then send again with ' +
        'POST /comms/v1/api/comms/send. Prints how many were held and which; --dry-run lists them and changes nothing. Idempotent',
      example: 'hold-pending-sends --dry-run',
    },
    {
      usage: 'dead-letters list [--topic T] [--limit N]',
      does:
        'what the bus consumers dead-lettered (<topic>.dlq), per topic: how many are held, replayed and waiting, and the newest N (default 100) with their id, source topic, ' +
        'partition and offset, key, event id and type, when, attempts and last error (email addresses redacted); never a message\'s value. ' +
        'Default topics: ' + deadLetterSources.join(', ') + '. Embedded bus in DATA_DIR, or Kafka with KAFKA_BROKERS',
      example: 'dead-letters list --topic comms.invitations.v1 --limit 20',
    },
    {
      usage: 'dead-letters replay [--topic T] (--ids id,... | --all) [--dry-run]',
      does:
        'publishes dead letters back to their source topic so the consumers handle them again (they drop a message they handled before: no second email), ' +
        'and records each in <topic>.dlq.replayed so a second replay leaves it alone. --ids takes ids from dead-letters list, comma-separated. ' +
        'Progress as JSON lines on stderr; prints what was replayed, already replayed and skipped (webhook deliveries: redeliver them). --dry-run changes nothing',
      example: 'dead-letters replay --topic comms.invitations.v1 --all --dry-run',
    },
  ],
  notes: [
    'backup, restore, reapply-erasures and hold-pending-sends: docs/operations.md, Backups and restores.',
    'dead-letters: docs/operations.md, Dead letters.',
  ],
};

const commands = ['create-account', 'list-accounts', 'set-access', 'issue-key', 'revoke-key', 'rewrap-personal-data-keys', 'reencrypt-secrets', 'backup', 'restore', 'reapply-erasures', 'hold-pending-sends', 'dead-letters'];

/** backup, reapply-erasures and hold-pending-sends log their progress as JSON lines on stderr (info unless LOG_LEVEL says otherwise); stdout keeps the result. */
const progressLogger = () => createLogger(commandLogLevel('info'), destination({ dest: 2, sync: true }));

/** A true|false option: anything else is refused, naming the option (a `yes` read as false would switch access off). */
const flag = (name: string, value: string | undefined): boolean | undefined => {
  if (value === undefined) return undefined;
  if (value === 'true' || value === 'false') return value === 'true';
  throw new Error(`--${name} takes true or false, not "${value}"; nothing was changed`);
};

/** How many positionals (the command's included) each command takes: more is a mistyped option (`set-access <id> sender-trusted true`). */
const positionalCount: Record<string, number> = { 'set-access': 2, 'issue-key': 2, 'revoke-key': 3, backup: 2, restore: 2, 'dead-letters': 2 };

/** The options each command reads; another is refused (`issue-key <id> --sender-trusted true` switched nothing and exited 0). */
const optionsOf: Record<string, string[]> = {
  'create-account': ['email', 'password', 'password-stdin', 'user-name', 'first-name', 'last-name', 'company-name', 'time-zone-id', 'comms-api-enabled', 'sender-trusted'],
  'set-access': ['comms-api-enabled', 'sender-trusted'],
  backup: ['include-key-files', 'pages-per-step', 'pause-ms'],
  restore: ['from'],
  'reapply-erasures': ['from'],
  'hold-pending-sends': ['dry-run'],
  'dead-letters': ['topic', 'limit', 'ids', 'all', 'dry-run'],
};

/** The options of each dead-letters subcommand. */
const deadLetterOptions: Record<string, string[]> = { list: ['topic', 'limit'], replay: ['topic', 'ids', 'all', 'dry-run'] };

/** Where the commands look for accounts, for a message about one that is not there (the wrong DATA_DIR is the usual cause). */
const storeDescription = (config: Config): string =>
  config.eventStoreUrl ? 'the event store at EVENTSTORE_URL' : `the event store in DATA_DIR (${config.dataDir})`;

/** The account an operator named, or a message that says it is not known here and how to list the accounts. */
async function knownAccount(eventStore: Parameters<typeof findAccount>[0], config: Config, accountId: string): Promise<AccountSummary> {
  const account = await findAccount(eventStore, accountId);
  if (!account) {
    throw new Error(
      `no account "${accountId}" is known in ${storeDescription(config)}; npm run admin -- list-accounts lists the accounts with their ids. Nothing was changed`,
    );
  }
  return account;
}

/** The command-line option of a field of the admin API's body (`timeZoneId` -> `time-zone-id`). */
const optionName = (field: string): string => field.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);

/** The password on standard input, without the line break that ends it (`echo`, a file, a secret manager's pipe). */
async function passwordFromStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

async function main(): Promise<void> {
  const { args, init } = cliStart(help, process.argv.slice(2));
  const parse = () => parseArgs({
    args,
    allowPositionals: true,
    options: {
      email: { type: 'string' },
      password: { type: 'string' },
      'password-stdin': { type: 'boolean' },
      'user-name': { type: 'string' },
      'first-name': { type: 'string' },
      'last-name': { type: 'string' },
      'company-name': { type: 'string' },
      'time-zone-id': { type: 'string' },
      'comms-api-enabled': { type: 'string' },
      'sender-trusted': { type: 'string' },
      'include-key-files': { type: 'boolean' },
      'pages-per-step': { type: 'string' },
      'pause-ms': { type: 'string' },
      from: { type: 'string' },
      'dry-run': { type: 'boolean' },
      topic: { type: 'string' },
      limit: { type: 'string' },
      ids: { type: 'string' },
      all: { type: 'boolean' },
    },
  });
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse();
  } catch (error) {
    // parseArgs names an unknown option or a missing value; say where the options are listed.
    throw new Error(`${(error as Error).message} (npm run admin -- --help lists each command's options). Nothing was changed`);
  }
  const { positionals, values } = parsed;
  const [command, accountId, keyId] = positionals;
  const accountIdHint = ' (npm run admin -- list-accounts shows the ids)';
  if (!command) {
    // No command at all: the operator is asking what there is (projections and relay default to status).
    process.stderr.write(`admin: no command given\n\n${helpText(help)}`);
    process.exit(1);
  }
  // Only events are written here; the service's projections pick them up (they poll the store).
  // Logs go to stderr: stdout is the command's JSON result (LOG_LEVEL=info would mix the platform's lines into it).
  // The config first: it names a LOG_LEVEL pino does not know, which the logger would refuse in its own words.
  const config = loadConfig();
  const logger = createLogger(commandLogLevel('warn'), destination({ dest: 2, sync: true }));
  if (!command || !commands.includes(command)) {
    throw new Error(`unknown command "${command ?? ''}"; use ${commands.slice(0, -1).join(', ')} or ${commands.at(-1)!} (--help shows examples)`);
  }
  const foreign = Object.keys(values).filter((option) => !(optionsOf[command] ?? []).includes(option));
  if (foreign.length > 0) {
    const takes = optionsOf[command]?.map((o) => `--${o}`).join(', ');
    throw new Error(`${command} does not take ${foreign.map((o) => `--${o}`).join(', ')}; ${takes ? `it takes ${takes}` : 'it takes no options'} (npm run admin -- --help). Nothing was changed`);
  }
  const extra = positionals.slice(positionalCount[command] ?? 1);
  if (extra.length > 0) {
    throw new Error(`${command} does not take ${extra.map((a) => JSON.stringify(a)).join(' ')}; options are written --name value (npm run admin -- --help shows each command's). Nothing was changed`);
  }
  if (command === 'backup') {
    // Reads the files only: no platform is opened (it would start the service's own connections).
    if (!accountId) throw new Error('backup needs the folder to copy into: npm run admin -- backup <dir>');
    const pagesPerStep = values['pages-per-step'] === undefined ? undefined : Number(values['pages-per-step']);
    if (pagesPerStep !== undefined && (!Number.isInteger(pagesPerStep) || pagesPerStep < 1)) throw new Error(`--pages-per-step needs a positive integer such as 1000 (pages of 4 kB a step), not "${values['pages-per-step']}"`);
    const pauseMs = values['pause-ms'] === undefined ? undefined : Number(values['pause-ms']);
    if (pauseMs !== undefined && (!Number.isInteger(pauseMs) || pauseMs < 0)) throw new Error(`--pause-ms needs a whole number of milliseconds such as 10, not "${values['pause-ms']}"`);
    const manifest = await backupDataDir(config, accountId, progressLogger(), {
      ...(pauseMs ? { pauseMs } : {}),
      ...(values['include-key-files'] ? { includeKeyFiles: true } : {}),
      ...(pagesPerStep !== undefined ? { pagesPerStep } : {}),
    });
    console.log(JSON.stringify(manifest, null, 2));
    return;
  }
  let restored: RestoreSummary | undefined;
  if (command === 'restore') {
    if (init) throw new Error('admin restore fills an empty DATA_DIR from a backup, so --init does not apply to it. Nothing was changed');
    if (!accountId) throw new Error('restore needs the backup folder: npm run admin -- restore <backup> (DATA_DIR: an empty folder to restore into)');
    restored = await restoreDataDir(config, accountId, progressLogger());
  }
  if (command === 'dead-letters') {
    requireStore(config, init, { command: 'admin dead-letters', initApplies: false });
    await deadLetters(config, accountId, values);
    return;
  }
  requireStore(config, init, { command: `admin ${command}`, initApplies: !['restore', 'reapply-erasures', 'hold-pending-sends', 'list-accounts', 'reencrypt-secrets'].includes(command) });
  const platform = createPlatform(config, logger);
  const services: Services = {
    eventStore: platform.eventStore,
    readStore: platform.readStore,
    clock: systemClock,
    logger,
    readYourWrites: async () => {},
  };
  const context: CommandContext = {
    tenantId: 'admin',
    actor: { type: 'system', id: 'admin-cli' },
    correlationId: newId(),
    now: new Date(),
  };
  const reapply = async () => {
    const progress = progressLogger();
    const done = await reapplyErasures(
      { ...services, logger: progress, ...(platform.dataKeys ? { dataKeys: platform.dataKeys, storedEvents: platform.sealedEventStore } : {}) },
      personalDataSettings(config),
      {
        ...(values.from ? { from: values.from } : {}),
        onProgress: (p) => progress.info(p, `reapply-erasures: ${p.phase}`),
      },
    );
    progress.info({ reErased: done.reErased }, 'reapply-erasures: finished');
    return done;
  };
  const holdSends = async (dryRun: boolean) => {
    const progress = progressLogger();
    const held = await holdPendingSends(services, {
      ...(dryRun ? { dryRun: true } : {}),
      onProgress: (p) => progress.info(p, `hold-pending-sends: ${p.phase}`),
    });
    progress.info(
      { held: held.held, checked: held.checked, dryRun: held.dryRun },
      held.dryRun ? `hold-pending-sends: ${held.held} pending sends would be held (dry run: nothing changed)` : `hold-pending-sends: ${held.held} pending sends held as outcome_unknown`,
    );
    return held;
  };
  try {
    if (command === 'reapply-erasures' || command === 'hold-pending-sends' || command === 'restore') {
      // Run on a restored DATA_DIR: with a master key file made anew (the copy's not put back) they would go on with keys that open nothing.
      const problem = await masterKeyProblem(platform, logger);
      if (problem) {
        throw new Error(
          command === 'restore'
            ? `${problem}. The files are in DATA_DIR; sends were not held and erasures not reapplied: put the right key back, then run hold-pending-sends and reapply-erasures before starting the service`
            : `${problem}. Nothing was changed`,
        );
      }
    }
    let result: unknown;
    switch (command) {
      case 'create-account': {
        const password = values['password-stdin'] ? await passwordFromStdin() : values.password;
        if (!values.email || !password) throw new Error('create-account needs --email and --password (or --password-stdin with the password on standard input)');
        // The admin API's own schema: without it the command opened accounts the API refuses (an email
        // 'notanemail', a 300-character name), found wrong only later and far from the cause.
        const input = AccountCreateBody.safeParse({
          email: values.email,
          password,
          ...(values['user-name'] ? { userName: values['user-name'] } : {}),
          ...(values['first-name'] ? { firstName: values['first-name'] } : {}),
          ...(values['last-name'] ? { lastName: values['last-name'] } : {}),
          ...(values['company-name'] ? { companyName: values['company-name'] } : {}),
          ...(values['time-zone-id'] ? { timeZoneId: values['time-zone-id'] } : {}),
          commsApiEnabled: flag('comms-api-enabled', values['comms-api-enabled']) ?? false,
          senderTrusted: flag('sender-trusted', values['sender-trusted']) ?? false,
        });
        if (!input.success) {
          const wrong = input.error.issues.map((issue) => `--${optionName(String(issue.path[0]))} ${issue.message}`);
          throw new Error(`create-account: ${wrong.join('; ')} (npm run admin -- --help shows an example). Nothing was changed`);
        }
        result = await registerAccount(services, context, input.data);
        break;
      }
      case 'list-accounts':
        result = await listAccounts(platform.eventStore);
        break;
      case 'set-access':
        if (!accountId) throw new Error(`set-access needs the account id: npm run admin -- set-access <accountId> --sender-trusted true${accountIdHint}`);
        if (values['comms-api-enabled'] === undefined && values['sender-trusted'] === undefined) {
          throw new Error('set-access needs what to switch: --comms-api-enabled true|false and/or --sender-trusted true|false. Nothing was changed');
        }
        await knownAccount(platform.eventStore, config, accountId);
        result = await setAccountAccess(services, context, accountId, {
          ...(values['comms-api-enabled'] !== undefined ? { commsApiEnabled: flag('comms-api-enabled', values['comms-api-enabled']) } : {}),
          ...(values['sender-trusted'] !== undefined ? { senderTrusted: flag('sender-trusted', values['sender-trusted']) } : {}),
        });
        break;
      case 'issue-key':
        if (!accountId) throw new Error(`issue-key needs the account id: npm run admin -- issue-key <accountId>${accountIdHint}`);
        await knownAccount(platform.eventStore, config, accountId);
        result = await issueSubscriptionKey(services, context, accountId);
        break;
      case 'revoke-key':
        if (!accountId || !keyId) {
          throw new Error(`revoke-key needs the account id and the key id: npm run admin -- revoke-key <accountId> <keyId> (npm run admin -- list-accounts shows both)`);
        }
        if (!(await knownAccount(platform.eventStore, config, accountId)).subscriptionKeyIds.includes(keyId)) {
          throw new Error(
            `account "${accountId}" has no live subscription key "${keyId}" (never issued to it, or revoked already); npm run admin -- list-accounts shows each account's key ids. Nothing was changed`,
          );
        }
        await revokeSubscriptionKey(services, context, accountId, keyId);
        result = { revoked: keyId };
        break;
      case 'restore': {
        // DATA_DIR was empty and is the copy's now: no service runs on it (a holder the copy may show is an old backup's).
        const held = await holdSends(false);
        const reapplied = await reapply();
        result = { restored, holdPendingSends: held, reapplyErasures: reapplied };
        progressLogger().info(
          { held: held.held, reErased: reapplied.reErased },
          'restore: finished; start the service on this DATA_DIR (the projections and the relay catch up from the copied checkpoints)',
        );
        break;
      }
      case 'reapply-erasures': {
        result = await reapply();
        break;
      }
      case 'hold-pending-sends': {
        // On a running service it would fail sends in progress as outcome_unknown although they go out.
        const holder = values['dry-run'] ? undefined : await projectionsHolder(platform.readStore);
        if (holder) {
          throw new Error(
            `the service runs on this store (its projections role, pid ${holder.pid} on ${holder.host}, last heartbeat ${holder.heartbeatAt}): ` +
              'hold-pending-sends would fail sends in progress. Stop every role of the service first (a heartbeat older than 20 s counts as gone), ' +
              'then run it again; --dry-run lists the pending sends without changing anything. Nothing was changed',
          );
        }
        result = await holdSends(values['dry-run'] ?? false);
        break;
      }
      case 'rewrap-personal-data-keys':
        if (!platform.dataKeys) throw new Error('personal data is not encrypted here (PII_ENCRYPTION=off): there are no data keys to re-wrap');
        {
          // Progress on stderr: a store of a million guests takes minutes, and a stopped run resumes where it left off.
          const progress = progressLogger();
          const before = await platform.dataKeys.missingMasterKeys();
          progress.info({ toRewrap: await platform.dataKeys.countNotUnderCurrent() }, 'rewrap-personal-data-keys: started');
          if (before.length > 0) {
            const which = before.map((m) => `"${m.masterKeyId}" (${m.count} data keys)`).join(', ');
            throw new Error(`data keys are wrapped under master keys PII_MASTER_KEYS does not hold: ${which}; add them back next to the current key and run again. Nothing was changed`);
          }
          result = { rewrapped: await platform.dataKeys.rotate(500, (p) => progress.info(p, 'rewrap-personal-data-keys: progress')) };
        }
        break;
      case 'reencrypt-secrets': {
        const progress = progressLogger();
        const done = await reencryptSecrets(services, webhookSettings(config).keyring, context, {
          onProgress: (p) => progress.info(p, 'reencrypt-secrets: progress'),
        });
        console.log(JSON.stringify(done, null, 2));
        if (done.missingKeys.length > 0 || done.failed.length > 0) {
          const missing = done.missingKeys.map((m) => `"${m.keyId}" (${m.webhookSecrets} webhook secrets, ${m.ticketKeys} ticket keys)`);
          throw new Error(
            [
              missing.length > 0
                ? `stored secrets are encrypted under key ids the keyring does not hold: ${missing.join(', ')}. Put those keys back into WEBHOOK_ENCRYPTION_KEYS and run reencrypt-secrets again; ` +
                  'without them those webhooks cannot be signed until the account rotates its secret, and those events issue no tickets until their ticket keys are rotated'
                : '',
              done.failed.length > 0 ? `${done.failed.length} secrets did not decrypt (a different key under the same id?): ${done.failed.map((f) => f.stream).join(', ')}` : '',
            ].filter(Boolean).join('; '),
          );
        }
        return;
      }
      default:
        throw new Error(`unknown command "${command ?? ''}" (--help shows examples)`);
    }
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await platform.close();
  }
}

/** `dead-letters list|replay`: only the bus is opened (docs/operations.md, Dead letters). */
async function deadLetters(
  config: Config,
  sub: string | undefined,
  values: { topic?: string; limit?: string; ids?: string; all?: boolean; 'dry-run'?: boolean },
): Promise<void> {
  if (!sub || !(sub in deadLetterOptions)) {
    throw new Error(`dead-letters needs list or replay${sub ? `, not "${sub}"` : ''}: npm run admin -- dead-letters list (npm run admin -- --help). Nothing was changed`);
  }
  const foreign = Object.keys(values).filter((option) => !deadLetterOptions[sub]!.includes(option));
  if (foreign.length > 0) {
    throw new Error(`dead-letters ${sub} does not take ${foreign.map((o) => `--${o}`).join(', ')}; it takes ${deadLetterOptions[sub]!.map((o) => `--${o}`).join(', ')} (npm run admin -- --help). Nothing was changed`);
  }
  const limit = values.limit === undefined ? 100 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 0) throw new Error(`--limit needs a whole number of dead letters to show such as 20, not "${values.limit}"`);
  const ids = values.ids?.split(',').map((id) => id.trim()).filter(Boolean);
  if (sub === 'replay' && !values.all && !ids?.length) {
    throw new Error('dead-letters replay needs --all or --ids <id,...> (the ids dead-letters list prints). Nothing was changed');
  }
  if (values.all && ids) throw new Error('dead-letters replay takes --all or --ids, not both. Nothing was changed');
  const topic = values.topic ? sourceTopicOf(values.topic) : undefined;
  // With --ids and no --topic, the topics the ids name.
  const idTopics = ids && !topic ? [...new Set(ids.map((id) => sourceTopicOf(id.split(':')[0]!)))] : undefined;
  const topicsToRead = topic ? [topic] : (idTopics ?? deadLetterSources);
  if (!config.kafkaBrokers && !fs.existsSync(path.join(config.dataDir, 'bus.sqlite'))) {
    // Opening it would create an empty one; the service creates it on its first start.
    throw new Error(`no embedded bus at ${path.join(config.dataDir, 'bus.sqlite')} (DATA_DIR=${config.dataDir}): the service never ran on this DATA_DIR, so nothing was dead-lettered here. Nothing was changed`);
  }
  const bus = createBus(config, createLogger(commandLogLevel('warn'), destination({ dest: 2, sync: true })));
  try {
    if (sub === 'list') {
      console.log(JSON.stringify(await listDeadLetters(bus, { topics: topicsToRead, limit }), null, 2));
      return;
    }
    const progress = progressLogger();
    const dryRun = values['dry-run'] ?? false;
    const summary = await replayDeadLetters(bus, {
      topics: topicsToRead,
      ...(ids ? { ids } : {}),
      dryRun,
      onProgress: (p) => progress.info(p, 'dead-letters replay: progress'),
    });
    progress.info(
      { replayed: summary.replayed.length, alreadyReplayed: summary.alreadyReplayed.length, skipped: summary.skipped.length, dryRun },
      dryRun
        ? `dead-letters replay: ${summary.replayed.length} dead letters would be replayed (dry run: nothing changed)`
        : `dead-letters replay: ${summary.replayed.length} dead letters replayed, ${summary.alreadyReplayed.length} replayed before, ${summary.skipped.length} skipped`,
    );
    console.log(JSON.stringify(summary, null, 2));
  } finally {
    await bus.close();
  }
}

main().catch((error: Error) => {
  console.error(`admin: ${error.message}`);
  process.exit(1);
});
