import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/shared/logger.js';

/** README, Configuration: a value the service cannot use stops the start with a message naming the variable. */
describe('loadConfig', () => {
  it('refuses a LOG_LEVEL pino does not know, naming the variable, instead of crashing later in the logger', () => {
    expect(() => createLogger('verbose')).toThrow();
    expect(() => loadConfig({ LOG_LEVEL: 'verbose' })).toThrow(/invalid configuration: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"/);
  });

  it('takes every pino level and defaults to info', () => {
    for (const level of ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']) expect(loadConfig({ LOG_LEVEL: level }).logLevel).toBe(level);
    expect(loadConfig({}).logLevel).toBe('info');
  });

  it('names every invalid variable at once', () => {
    const refusal = () => loadConfig({ PORT: 'eighty', RETENTION_SWEEP_MS: '10', EXPORT_TTL_MINUTES: '0' });
    expect(refusal).toThrow(/PORT must be a non-negative integer such as 8080, got "eighty"/);
    expect(refusal).toThrow(/RETENTION_SWEEP_MS must be at least 1000/);
    expect(refusal).toThrow(/EXPORT_TTL_MINUTES must be at least 1 and at most 525600 \(minutes, a year at most.*\), such as 60, got 0/);
  });

  it('names TRUST_PROXY, BODY_LIMIT and a port out of range instead of crashing at start with a stack trace', () => {
    // Each of these used to pass loadConfig and stop the start in Express or Node (exit 1):
    // 'invalid IP address: yes', 'option limit "abc" is invalid', 'options.port should be >= 0 and < 65536'.
    expect(() => loadConfig({ TRUST_PROXY: 'yes' })).toThrow(/invalid configuration: TRUST_PROXY must be true, false, a hop count, or comma-separated proxy addresses.*got "yes"/);
    expect(() => loadConfig({ TRUST_PROXY: '10.0.0.1, proxy.example' })).toThrow(/TRUST_PROXY .*got "proxy\.example"/);
    for (const range of ['10.0.0.0/33', '::/129', '10.0.0.0/255.0.255.0', '::1/255.0.0.0']) expect(() => loadConfig({ TRUST_PROXY: range }), range).toThrow(/TRUST_PROXY/);
    expect(() => loadConfig({ BODY_LIMIT: 'abc' })).toThrow(/invalid configuration: BODY_LIMIT must be a size such as 16mb, 512kb or a number of bytes, got "abc"/);
    expect(() => loadConfig({ PORT: '70000' })).toThrow(/invalid configuration: PORT must be a port number from 0 to 65535, got 70000/);
    expect(() => loadConfig({ METRICS_PORT: '65536' })).toThrow(/METRICS_PORT must be a port number from 0 to 65535/);
  });

  it('takes what Express takes for TRUST_PROXY and BODY_LIMIT', () => {
    expect(loadConfig({ TRUST_PROXY: 'TRUE' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: 'False' }).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    for (const list of ['loopback', '10.0.0.1', '10.0.0.0/8, 192.168.0.0/255.255.0.0', 'fc00::/7,loopback,uniquelocal', '::1']) {
      expect(loadConfig({ TRUST_PROXY: list }).trustProxy).toBe(list);
    }
    for (const limit of ['16mb', '512kb', '1048576', '2 MB']) expect(loadConfig({ BODY_LIMIT: limit }).bodyLimit).toBe(limit);
    expect(loadConfig({ PORT: '65535' }).port).toBe(65535);
  });

  it('names MONGO_URL and SENDGRID_EVENT_WEBHOOK_PUBLIC_KEY when they cannot be used, instead of crashing at start', () => {
    // Both used to crash the start (exit 1): 'MongoParseError: Invalid scheme ...', 'wanted sequence (0x03), got 0x69'.
    expect(() => loadConfig({ MONGO_URL: 'foo' })).toThrow(/invalid configuration: MONGO_URL must be a MongoDB connection string such as mongodb:\/\/localhost:27017: Invalid scheme/);
    expect(() => loadConfig({ SENDGRID_EVENT_WEBHOOK_PUBLIC_KEY: 'abc' })).toThrow(/invalid configuration: SENDGRID_EVENT_WEBHOOK_PUBLIC_KEY must be the verification key SendGrid shows/);
    expect(loadConfig({ MONGO_URL: 'mongodb://user:pw@db1:27017,db2:27017/?replicaSet=rs0' }).mongoUrl).toContain('db2');
    const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const key = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    expect(loadConfig({ SENDGRID_EVENT_WEBHOOK_PUBLIC_KEY: key }).comms.sendgridEventPublicKey).toBe(key);
  });

  it('refuses an SMTP_URL without smtp:// or smtps://, which nodemailer would read as no host (localhost:587)', () => {
    for (const url of ['mail.example.com', 'mail.example.com:587', 'http://mail.example.com', 'smtp://']) {
      expect(() => loadConfig({ SMTP_URL: url }), url).toThrow(/invalid configuration: SMTP_URL must be a URL such as smtps:\/\/user:password@mail\.example\.com:465/);
    }
    for (const url of ['smtp://127.0.0.1:2525', 'smtps://user:p%40ss@mail.example.com:465', 'smtp://mail.example.com:587?requireTLS=true&socketTimeout=60000']) {
      expect(loadConfig({ SMTP_URL: url }).comms.smtpUrl).toBe(url);
    }
  });

  it('refuses a PUBLIC_URL, OIDC_ISSUER or DASHBOARD_TOKEN_URL that is not an http(s) URL', () => {
    // PUBLIC_URL=notaurl started, and every API request then answered 503 identity_provider_unavailable.
    expect(() => loadConfig({ PUBLIC_URL: 'notaurl' })).toThrow(/invalid configuration: PUBLIC_URL must be an http:\/\/ or https:\/\/ URL such as https:\/\/checkin\.example\.com, got "notaurl"/);
    expect(() => loadConfig({ PUBLIC_URL: 'checkin.example.com' })).toThrow(/PUBLIC_URL must be/);
    expect(() => loadConfig({ OIDC_ISSUER: 'login.example.com', OIDC_AUDIENCE: 'api' })).toThrow(/OIDC_ISSUER must be an http:\/\/ or https:\/\/ URL/);
    expect(() => loadConfig({ DASHBOARD_TOKEN_URL: 'ftp://x/token' })).toThrow(/DASHBOARD_TOKEN_URL must be/);
    expect(loadConfig({ PUBLIC_URL: 'https://checkin.example.com/' }).publicUrl).toBe('https://checkin.example.com');
    expect(loadConfig({ OIDC_ISSUER: 'https://tenant.auth0.com/', OIDC_AUDIENCE: 'api' }).oidcIssuer).toBe('https://tenant.auth0.com/');
  });

  it('refuses a HOST Node could not listen on, naming it, and takes addresses and host names', () => {
    // Each of these passed loadConfig and failed at listen: getaddrinfo ENOTFOUND http://0.0.0.0, exit 1, no variable named.
    for (const host of ['http://0.0.0.0', '0.0.0.0:8080', '[::]', 'my host', '10.0.0.256', '-x.example']) {
      expect(() => loadConfig({ HOST: host }), host).toThrow(/invalid configuration: HOST must be an IP address or a host name to listen on, such as 127\.0\.0\.1, 0\.0\.0\.0 or ::/);
    }
    for (const host of ['127.0.0.1', '0.0.0.0', '::', '::1', 'localhost', 'checkin-1.internal.example']) expect(loadConfig({ HOST: host }).host).toBe(host);
  });

  it('refuses KAFKA_BROKERS entries kafkajs cannot dial, naming them, and takes host:port lists', () => {
    for (const brokers of ['kafka:abc', 'http://kafka:9092', 'kafka-1:9092,,kafka-2:9092', 'kafka-1:9092,', ',', 'kafka', 'kafka:0', 'kafka:65536', '[::1]:9092']) {
      expect(() => loadConfig({ KAFKA_BROKERS: brokers }), brokers).toThrow(
        /invalid configuration: KAFKA_BROKERS must be comma-separated host:port pairs such as kafka-1:9092,kafka-2:9092 \(no scheme, no empty entries.*got "/,
      );
    }
    expect(() => loadConfig({ KAFKA_BROKERS: 'ok:9092,http://kafka:9092' })).toThrow(/got "http:\/\/kafka:9092"$/);
    expect(loadConfig({ KAFKA_BROKERS: '127.0.0.1:19092' }).kafkaBrokers).toEqual(['127.0.0.1:19092']);
    expect(loadConfig({ KAFKA_BROKERS: 'kafka-1.internal:9092, kafka-2.internal:9093' }).kafkaBrokers).toEqual(['kafka-1.internal:9092', 'kafka-2.internal:9093']);
  });

  it('refuses a SENDGRID_BASE_URL, SENDGRID_API_KEY, MONGO_DB or SPAM_BLOCKED_DOMAINS entry that cannot be used, naming it and a good value', () => {
    // SENDGRID_BASE_URL=api.sendgrid.com started and every send failed; MONGO_DB=check.in crashed the start
    // in the driver without naming the variable; SPAM_BLOCKED_DOMAINS=https://evil.example blocked nothing.
    expect(() => loadConfig({ SENDGRID_BASE_URL: 'api.sendgrid.com' })).toThrow(/invalid configuration: SENDGRID_BASE_URL must be an http:\/\/ or https:\/\/ URL such as https:\/\/api\.sendgrid\.com, got "api\.sendgrid\.com"/);
    for (const name of ['check.in', 'check in', 'a/b', 'x'.repeat(64), 'a$b']) {
      expect(() => loadConfig({ MONGO_DB: name }), name).toThrow(/invalid configuration: MONGO_DB must be a MongoDB database name such as checkin/);
    }
    for (const domains of ['https://evil.example', 'evil.example,*.spam.example', 'evil.example/path', 'evil example']) {
      expect(() => loadConfig({ SPAM_BLOCKED_DOMAINS: domains }), domains).toThrow(/invalid configuration: SPAM_BLOCKED_DOMAINS must be comma-separated domain names such as evil\.example,spam\.example .*got "/);
    }
    expect(loadConfig({ SENDGRID_BASE_URL: 'http://127.0.0.1:3030' }).comms.sendgridBaseUrl).toBe('http://127.0.0.1:3030');
    // The client only warned and every send got 401; the message does not repeat the key.
    expect(() => loadConfig({ SENDGRID_API_KEY: 'xkeysib-0123456789' })).toThrow('invalid configuration: SENDGRID_API_KEY must be a SendGrid API key, which starts with SG.');
    expect(() => loadConfig({ SENDGRID_API_KEY: 'xkeysib-0123456789' })).not.toThrow('xkeysib');
    expect(loadConfig({ SENDGRID_API_KEY: 'SG.abc.def' }).comms.sendgridApiKey).toBe('SG.abc.def');
    expect(loadConfig({ MONGO_DB: 'fault_1a2b-c3' }).mongoDb).toBe('fault_1a2b-c3');
    expect(loadConfig({ SPAM_BLOCKED_DOMAINS: 'Evil.Example, bücher.example, spam.example., 192.0.2.1' }).comms.blockedLinkDomains).toEqual([
      'evil.example',
      'bücher.example',
      'spam.example.',
      '192.0.2.1',
    ]);
  });

  it('says in every other refusal what was given and a value that works, never echoing a secret', () => {
    const refusals: [Record<string, string>, string][] = [
      [{ SQLITE_SYNCHRONOUS: 'OFF' }, 'SQLITE_SYNCHRONOUS must be FULL (the default) or NORMAL, got "OFF"'],
      [{ WORKERS_THREAD: 'yes' }, 'WORKERS_THREAD must be on, off or auto (the default: on from 3 cores), got "yes"'],
      [{ PII_ENCRYPTION: 'no' }, 'PII_ENCRYPTION must be on (the default) or off, got "no"'],
      [{ WEBHOOK_ALLOW_INSECURE: 'yes' }, 'WEBHOOK_ALLOW_INSECURE must be true or false (the default), got "yes"'],
      // An empty entry read as a 0 ms retry.
      [{ WEBHOOK_RETRY_DELAYS_MS: '5000,,60000' }, 'WEBHOOK_RETRY_DELAYS_MS must be comma-separated non-negative integers (milliseconds) such as 5000,30000,120000, got "5000,,60000"'],
      [{ SEND_RETRY_DELAYS_MS: '2s,10s' }, 'SEND_RETRY_DELAYS_MS must be comma-separated non-negative integers (milliseconds) such as 2000,10000, got "2s,10s"'],
      [{ INVITES_SENDING_ADDRESS: 'invites' }, 'INVITES_SENDING_ADDRESS must be an email address such as invites@example.com, got "invites"'],
      [{ READ_STORE_MISMATCH: 'drop' }, 'READ_STORE_MISMATCH must be refuse (the default) or rebuild, got "drop"'],
      [{ KAFKA_NAMESPACE: 'staging eu' }, 'such as staging-eu, got "staging eu"'],
      [{ PII_MASTER_KEYS: 'k1:tooshort' }, 'PII_MASTER_KEYS: each entry must be <id>:<32-byte key in base64 or hex>, such as k1:<output of openssl rand -base64 32>; the key of "k1" is not 32 bytes'],
      [{ PII_MASTER_KEYS: `k1:${'a'.repeat(64)}`, PII_MASTER_KEY_ID: 'k2' }, 'PII_MASTER_KEY_ID must name a key in PII_MASTER_KEYS ("k1"), got "k2"'],
      [{ WEBHOOK_ENCRYPTION_KEY_ID: 'k2' }, 'WEBHOOK_ENCRYPTION_KEY_ID must name a key in WEBHOOK_ENCRYPTION_KEYS, which is not set, got "k2"'],
      [{ ADMIN_API_KEY: 'short-secret' }, 'ADMIN_API_KEY must be at least 16 characters, such as the output of openssl rand -hex 32'],
      [{ METRICS_TOKEN: 'short-secret' }, 'METRICS_TOKEN must be at least 16 characters, such as the output of openssl rand -hex 32'],
    ];
    for (const [env, message] of refusals) expect(() => loadConfig(env), JSON.stringify(env)).toThrow(message);
    // A key written before its id (`<key>:k1`) is not repeated in the message.
    const key = Buffer.alloc(32, 7).toString('base64');
    expect(() => loadConfig({ WEBHOOK_ENCRYPTION_KEYS: `${key}:k1` })).toThrow(/WEBHOOK_ENCRYPTION_KEYS: .*; an entry is not <id>:<key>$/);
    expect(() => loadConfig({ WEBHOOK_ENCRYPTION_KEYS: `${key}:k1` })).not.toThrow(key);
    expect(() => loadConfig({ ADMIN_API_KEY: 'short-secret' })).not.toThrow('short-secret"');
  });

  it('refuses a DATA_DIR, OUTBOX_DIR or EXPORT_DIR that is a file, and takes a folder yet to be created', () => {
    // Before, the start stopped in mkdir: "EEXIST: file already exists, mkdir '...'", exit 1, no variable named.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'config-folders-'));
    try {
      const file = path.join(dir, 'a-file');
      fs.writeFileSync(file, '');
      for (const name of ['DATA_DIR', 'OUTBOX_DIR', 'EXPORT_DIR']) {
        expect(() => loadConfig({ [name]: file }), name).toThrow(`invalid configuration: ${name} must be a folder, or a path where one can be created, such as ./data`);
      }
      expect(() => loadConfig({ DATA_DIR: path.join(file, 'data') })).toThrow(`DATA_DIR must be a folder, or a path where one can be created, such as ./data; ${file} is a file`);
      expect(loadConfig({ DATA_DIR: path.join(dir, 'not-yet', 'data') }).dataDir).toBe(path.join(dir, 'not-yet', 'data'));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses numbers that parse but make no sense, naming the bound and a good value', () => {
    const refusals: [Record<string, string>, RegExp][] = [
      // 0 made every send attempt stale at once: another worker took it over and the email could go out twice.
      [{ SEND_LEASE_MS: '0' }, /SEND_LEASE_MS must be at least 1000 and at most 2147483647 \(milliseconds; a shorter lease lapses between heartbeats.*\), such as 10000, got 0/],
      // 0 switched the sweep off: a killed worker's sends were never taken over.
      [{ WORKER_SWEEP_MS: '0' }, /WORKER_SWEEP_MS must be at least 100 .*such as 5000, got 0/],
      [{ TOKEN_TTL_SECONDS: '0' }, /TOKEN_TTL_SECONDS must be at least 1 and at most 31536000 \(seconds, a year at most; a token of 0 s is expired when issued\), such as 3600, got 0/],
      // An expiry past the calendar's end (8.64e15 ms) made every export a 500 (RangeError: Invalid time value).
      [{ EXPORT_TTL_MINUTES: '1000000000000' }, /EXPORT_TTL_MINUTES must be at least 1 and at most 525600 \(minutes, a year at most.*\), such as 60, got 1000000000000/],
      [{ TOKEN_TTL_SECONDS: '99999999999' }, /TOKEN_TTL_SECONDS must be at least 1 and at most 31536000/],
      // 0 exited 1 at once on SIGTERM, and one under the drain cut every drain short.
      [{ SHUTDOWN_TIMEOUT_MS: '0' }, /SHUTDOWN_TIMEOUT_MS must be at least 1 /],
      [{ SHUTDOWN_TIMEOUT_MS: '5000' }, /SHUTDOWN_TIMEOUT_MS must be more than SHUTDOWN_DRAIN_TIMEOUT_MS .*such as 14000 with 8000, got 5000 with 8000/],
      [{ OVERLOAD_MIN_IN_FLIGHT: '64' }, /OVERLOAD_MIN_IN_FLIGHT must be at most OVERLOAD_MAX_IN_FLIGHT .*got 64 with 32/],
      // Past the longest timer Node fires it after 1 ms: a sweep a thousand times a second.
      [{ RETENTION_SWEEP_MS: '3000000000' }, /RETENTION_SWEEP_MS must be at least 1000 and at most 2147483647 \(milliseconds\), such as 3600000, got 3000000000/],
      [{ WEBHOOK_TIMEOUT_MS: '0' }, /WEBHOOK_TIMEOUT_MS must be at least 1 and at most 2147483647 \(milliseconds\), such as 10000, got 0/],
      [{ READ_YOUR_WRITES_TIMEOUT_MS: '9999999999' }, /READ_YOUR_WRITES_TIMEOUT_MS must be at least 0 and at most 2147483647/],
      [{ SEND_CONCURRENCY: 'eight' }, /SEND_CONCURRENCY must be a non-negative integer such as 8, got "eight"/],
      [{ METRICS_PORT: 'x' }, /METRICS_PORT must be a non-negative integer such as 9464, got "x"/],
      // Number() reads these as 1000, 16, 1 and 2: a whole-number setting takes decimal digits only.
      [{ SEND_CONCURRENCY: '1e3' }, /SEND_CONCURRENCY must be a non-negative integer such as 8, got "1e3"/],
      [{ PORT: '0x1f90' }, /PORT must be a non-negative integer such as 8080, got "0x1f90"/],
      [{ RATE_LIMIT_PER_MINUTE: '0b1' }, /RATE_LIMIT_PER_MINUTE must be a non-negative integer/],
      [{ METRICS_PORT: '2.0' }, /METRICS_PORT must be a non-negative integer such as 9464, got "2.0"/],
      [{ WEBHOOK_RETRY_DELAYS_MS: '5e3,3e4' }, /WEBHOOK_RETRY_DELAYS_MS must be comma-separated non-negative integers/],
      [{ SEND_RETRY_DELAYS_MS: '0x7d0' }, /SEND_RETRY_DELAYS_MS must be comma-separated non-negative integers/],
    ];
    for (const [env, message] of refusals) expect(() => loadConfig(env), JSON.stringify(env)).toThrow(message);
  });

  it('takes the documented zeros that switch something off, and the bounds themselves', () => {
    const config = loadConfig({
      RATE_LIMIT_PER_MINUTE: '0',
      SEND_RATE_LIMIT_PER_MINUTE: '0',
      OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0',
      OVERLOAD_MAX_IN_FLIGHT: '0',
      OVERLOAD_MIN_IN_FLIGHT: '64',
      SHUTDOWN_IDLE_GRACE_MS: '0',
      SHUTDOWN_DRAIN_TIMEOUT_MS: '0',
      SHUTDOWN_TIMEOUT_MS: '1',
      SEND_LEASE_MS: '1000',
      WORKER_SWEEP_MS: '100',
      PORT: '0',
      METRICS_PORT: '0',
    });
    expect(config).toMatchObject({ rateLimitPerMinute: 0, sendRateLimitPerMinute: 0, port: 0, comms: { sendLeaseMs: 1000, sweepMs: 100 } });
    expect(config.observability).toMatchObject({ overloadMaxInFlight: 0, overloadMinInFlight: 64, metricsPort: 0 });
    expect(config.shutdown).toEqual({ idleGraceMs: 0, drainTimeoutMs: 0, timeoutMs: 1 });
  });
});

/** The process, as an operator starts it: the same refusal, exit 2 (README, Configuration). */
describe('the start with a value it cannot use', () => {
  it('exits 2 naming the variable before it opens anything', async () => {
    const { MONGO_URL: _m, KAFKA_BROKERS: _k, EVENTSTORE_URL: _e, ...env } = process.env;
    const dataDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'config-start-')), 'data');
    try {
      const started = promisify(execFile)(process.execPath, ['--import', 'tsx', path.join('src', 'main.ts')], {
        env: { ...env, HOST: 'http://0.0.0.0', DATA_DIR: dataDir, LOG_LEVEL: 'silent' },
      });
      await expect(started).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('invalid configuration: HOST must be an IP address or a host name') });
      expect(fs.existsSync(dataDir)).toBe(false);
    } finally {
      fs.rmSync(path.dirname(dataDir), { recursive: true, force: true });
    }
  }, 120_000);

  it('names ROLE when the role came from it', async () => {
    // Before: 'unknown role "bogus"', which an operator who set ROLE in a unit file could not place.
    const { MONGO_URL: _m, KAFKA_BROKERS: _k, EVENTSTORE_URL: _e, ...env } = process.env;
    const started = promisify(execFile)(process.execPath, ['--import', 'tsx', path.join('src', 'main.ts')], { env: { ...env, ROLE: 'bogus', LOG_LEVEL: 'silent' } });
    await expect(started).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('invalid configuration: ROLE must be one of api, projections, relay, workers, all, such as api, got "bogus"'),
    });
  }, 120_000);
});

/** docs/operations.md "Browsers (CORS)" and "Compression". */
describe('loadConfig: CORS_ORIGINS and HTTP_COMPRESSION', () => {
  it('reads origins as browsers send them: a trailing slash dropped, scheme and host lowercased, the default port left out', () => {
    expect(loadConfig({}).http.corsOrigins).toEqual([]);
    expect(loadConfig({ CORS_ORIGINS: ' https://Door.Example.com/ ,http://localhost:5173,https://x.example:443,capacitor://localhost,' }).http.corsOrigins).toEqual([
      'https://door.example.com',
      'http://localhost:5173',
      'https://x.example',
      'capacitor://localhost',
    ]);
  });

  it('refuses what is no origin, a wildcard or null, naming each entry', () => {
    for (const entry of ['*', 'null', 'door.example.com', 'https://door.example.com/app', 'https://door.example.com?x=1', 'https://user@door.example.com', 'https://']) {
      expect(() => loadConfig({ CORS_ORIGINS: `https://ok.example,${entry}` }), entry).toThrow(
        new RegExp(`invalid configuration: CORS_ORIGINS must be comma-separated origins such as https://door.example.com,http://localhost:5173 .*got ${JSON.stringify(entry).replace(/[.*?/]/g, '\\$&')}$`),
      );
    }
  });

  it('takes HTTP_COMPRESSION on (the default) or off', () => {
    expect(loadConfig({}).http.compression).toBe(true);
    expect(loadConfig({ HTTP_COMPRESSION: 'OFF' }).http.compression).toBe(false);
    expect(() => loadConfig({ HTTP_COMPRESSION: 'gzip' })).toThrow(/HTTP_COMPRESSION must be on or off, such as on \(the default\), got "gzip"/);
  });
});
