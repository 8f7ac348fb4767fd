/**
 * The Kafka bus on managed and production clusters: TLS (KAFKA_SSL, KAFKA_SSL_CA_FILE), SASL
 * (KAFKA_SASL_*: PLAIN, SCRAM-SHA-256/512) without the password in any log line or error,
 * KAFKA_REPLICATION_FACTOR, and topics an operator created for a principal without CREATE
 * (Kafka answers CreateTopics for an existing topic with TOPIC_AUTHORIZATION_FAILED then: KAFKA-6250).
 *
 * The SASL tests need a broker started with SASL users, which no default setup starts:
 *   CHECKIN_SERVERS_RUNTIME_DIR=/tmp/kafka-sasl KAFKA_PORT=29094 KAFKA_CONTROLLER_PORT=29095 \
 *     KAFKA_SASL_USERS=admin:admin-secret,app:app-secret KAFKA_ACLS=on scripts/kafka.sh start
 *   set -a; . /tmp/kafka-sasl/kafka.env; set +a   # KAFKA_SASL_BROKERS, KAFKA_SASL_USERS, KAFKA_ACLS
 * The first user is the super user; the second is the service's, allowed by ACLs made here.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { AclOperationTypes, AclPermissionTypes, AclResourceTypes, Kafka, ResourcePatternTypes, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaBus, type KafkaBusOptions, type KafkaSaslMechanism } from '../../src/adapters/bus/kafka.js';
import type { BusMessage, Consumer } from '../../src/adapters/bus/port.js';
import { loadConfig } from '../../src/config.js';
import { createPlatform } from '../../src/main.js';
import { createLogger } from '../../src/shared/logger.js';
import { realServer } from '../support/real-servers.js';
import { eventually as until } from '../webhooks/receiver.js';

/** Hang guard for a delivery, far above any real figure. */
const WAIT_MS = 30_000;
const eventually = (condition: () => boolean | Promise<boolean>, what: string) => until(async () => (await condition()) || undefined, WAIT_MS, what);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkasec-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));
const file = (name: string, text: string): string => {
  const at = path.join(tmp, name);
  fs.writeFileSync(at, text);
  return at;
};

/** Every line a logger wrote, as written (JSON). */
function capturedLogger() {
  const lines: string[] = [];
  const logger = createLogger('debug', { write: (line: string) => void lines.push(line) });
  return { lines, logger };
}

/** The problems loadConfig reports for `env`, as its error message ('' when none). */
function configProblems(env: NodeJS.ProcessEnv): string {
  try {
    loadConfig(env);
    return '';
  } catch (error) {
    return (error as Error).message;
  }
}

describe('Kafka security settings (no broker needed)', () => {
  const secret = 'hunter2-Do-Not-Log';

  it('reads SASL from the environment, the password from KAFKA_SASL_PASSWORD or a file (one line end dropped)', () => {
    expect(loadConfig({}).kafkaSasl).toBeUndefined();
    expect(loadConfig({ KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512', KAFKA_SASL_USERNAME: 'svc', KAFKA_SASL_PASSWORD: secret }).kafkaSasl).toEqual({
      mechanism: 'scram-sha-512',
      username: 'svc',
      password: secret,
    });
    const passwordFile = file('password', `${secret}\n`);
    expect(loadConfig({ KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'svc', KAFKA_SASL_PASSWORD_FILE: passwordFile }).kafkaSasl).toEqual({
      mechanism: 'plain',
      username: 'svc',
      password: secret,
    });
  });

  it('refuses incomplete or wrong SASL settings naming the variable, never showing the password', () => {
    const cases: [NodeJS.ProcessEnv, RegExp][] = [
      [{ KAFKA_SASL_MECHANISM: 'gssapi', KAFKA_SASL_USERNAME: 'svc', KAFKA_SASL_PASSWORD: secret }, /KAFKA_SASL_MECHANISM must be one of plain, scram-sha-256, scram-sha-512, got "gssapi"/],
      [{ KAFKA_SASL_USERNAME: 'svc', KAFKA_SASL_PASSWORD: secret }, /KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD are set but KAFKA_SASL_MECHANISM is not/],
      [{ KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_PASSWORD: secret }, /KAFKA_SASL_USERNAME must be set with KAFKA_SASL_MECHANISM/],
      [{ KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'svc' }, /KAFKA_SASL_PASSWORD or KAFKA_SASL_PASSWORD_FILE must be set/],
      [
        { KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'svc', KAFKA_SASL_PASSWORD: secret, KAFKA_SASL_PASSWORD_FILE: file('p2', secret) },
        /KAFKA_SASL_PASSWORD and KAFKA_SASL_PASSWORD_FILE are both set/,
      ],
      [{ KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'svc', KAFKA_SASL_PASSWORD_FILE: path.join(tmp, 'none') }, /KAFKA_SASL_PASSWORD_FILE must name a readable file, ".*none": ENOENT/],
      [{ KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'svc', KAFKA_SASL_PASSWORD_FILE: file('empty', '\n') }, /KAFKA_SASL_PASSWORD_FILE must name a file holding the password/],
    ];
    for (const [env, problem] of cases) {
      const message = configProblems(env);
      expect(message).toMatch(problem);
      expect(message).not.toContain(secret);
    }
  });

  it('reads KAFKA_SSL and KAFKA_SSL_CA_FILE, and refuses a CA file that holds no certificate without showing it', () => {
    expect(loadConfig({}).kafkaSsl).toBeUndefined();
    expect(loadConfig({ KAFKA_SSL: 'false' }).kafkaSsl).toBeUndefined();
    expect(loadConfig({ KAFKA_SSL: 'TRUE' }).kafkaSsl).toBe(true);
    const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    expect(loadConfig({ KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: file('ca.pem', pem) }).kafkaSsl).toEqual({ ca: pem });
    expect(configProblems({ KAFKA_SSL: 'yes' })).toMatch(/KAFKA_SSL must be true or false \(the default\), got "yes"/);
    expect(configProblems({ KAFKA_SSL_CA_FILE: file('ca2.pem', pem) })).toMatch(/KAFKA_SSL_CA_FILE is set but KAFKA_SSL is not true/);
    // The password file given where the CA belongs: named, not shown.
    const wrong = configProblems({ KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: file('not-a-ca', secret) });
    expect(wrong).toMatch(/KAFKA_SSL_CA_FILE must be a PEM file of the CA certificates/);
    expect(wrong).not.toContain(secret);
  });

  it('reads KAFKA_REPLICATION_FACTOR: unset leaves it to the cluster, 0 or a word is refused', () => {
    expect(loadConfig({}).kafkaReplicationFactor).toBeUndefined();
    expect(loadConfig({ KAFKA_REPLICATION_FACTOR: '3' }).kafkaReplicationFactor).toBe(3);
    expect(configProblems({ KAFKA_REPLICATION_FACTOR: '0' })).toMatch(/KAFKA_REPLICATION_FACTOR must be at least 1/);
    expect(configProblems({ KAFKA_REPLICATION_FACTOR: 'three' })).toMatch(/KAFKA_REPLICATION_FACTOR must be a non-negative integer such as 3/);
  });
});

/** A self-signed certificate for 127.0.0.1, made with openssl; undefined (with the reason) without it. */
function selfSigned(): { key: string; cert: string } | string {
  try {
    const [keyFile, certFile] = [path.join(tmp, 'tls.key'), path.join(tmp, 'tls.crt')];
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', keyFile, '-out', certFile], { stdio: 'ignore' });
    return { key: fs.readFileSync(keyFile, 'utf8'), cert: fs.readFileSync(certFile, 'utf8') };
  } catch (error) {
    return `openssl could not make a certificate: ${(error as Error).message}`;
  }
}
const certificate = selfSigned();

if (typeof certificate === 'string') {
  describe.skip(`KAFKA_SSL against a TLS listener (skipped: ${certificate})`, () => {
    it('needs openssl', () => {});
  });
} else {
  /**
   * A TLS listener with a self-signed certificate stands in for a broker: it records each TLS
   * handshake that completes and closes the connection. What is checked is that the settings reach
   * the connection (from the environment through the composition root), not Kafka over TLS.
   */
  describe('KAFKA_SSL against a TLS listener (self-signed certificate, no Kafka)', () => {
    let server: tls.Server;
    let port = 0;
    let handshakes = 0;
    beforeAll(async () => {
      server = tls.createServer({ key: certificate.key, cert: certificate.cert }, (socket) => {
        handshakes++;
        socket.destroy();
      });
      server.on('tlsClientError', () => {});
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as { port: number }).port;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    /** The platform of `env` (on a scratch DATA_DIR) pings Kafka once; what it logged. */
    async function pingWith(env: NodeJS.ProcessEnv): Promise<string[]> {
      const { lines, logger } = capturedLogger();
      const platform = createPlatform(loadConfig({ DATA_DIR: fs.mkdtempSync(path.join(tmp, 'data-')), KAFKA_BROKERS: `127.0.0.1:${port}`, ...env }), logger);
      try {
        await expect(platform.bus.ping()).rejects.toThrow();
      } finally {
        await platform.close();
      }
      return lines;
    }

    it('with KAFKA_SSL=true and the CA in KAFKA_SSL_CA_FILE, connects over TLS and checks the certificate against that CA', async () => {
      const before = handshakes;
      await pingWith({ KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: file('listener-ca.pem', certificate.cert) });
      expect(handshakes).toBeGreaterThan(before);
    });

    it('with KAFKA_SSL=true alone, refuses a certificate no known CA signed', async () => {
      const before = handshakes;
      const lines = await pingWith({ KAFKA_SSL: 'true' });
      expect(handshakes).toBe(before);
      expect(lines.join('\n')).toMatch(/self[- ]signed certificate/);
    });
  });
}

const plain = await realServer('kafka');
afterAll(() => plain.stop());

if (!plain.url) {
  describe.skip(`KAFKA_REPLICATION_FACTOR on a real broker (skipped: ${plain.skipReason})`, () => {
    it('needs KAFKA_BROKERS or a container runtime', () => {});
  });
} else {
  describe('KAFKA_REPLICATION_FACTOR on a real broker (one node)', () => {
    const buses: KafkaBus[] = [];
    afterAll(() => Promise.allSettled(buses.map((bus) => bus.close())));
    const open = (options: Partial<KafkaBusOptions>) => {
      const bus = new KafkaBus({ brokers: plain.url!.split(','), clientId: 'kafkasec', partitions: 2, logger: createLogger('silent'), ...options });
      buses.push(bus);
      return bus;
    };

    it('creates topics with the replicas asked for, and names the variable when the cluster has fewer brokers', async () => {
      const run = randomUUID().slice(0, 8);
      const one = open({ replicationFactor: 1, namespace: `rf-${run}` });
      await one.publish('one', [{ key: 'k', value: 'v' }]);
      const admin = one.kafka.admin();
      await admin.connect();
      try {
        const { topics } = await admin.fetchTopicMetadata({ topics: [`rf-${run}.one`] });
        expect(topics[0]!.partitions.map((p) => p.replicas.length)).toEqual([1, 1]);
      } finally {
        await admin.disconnect();
      }
      const three = open({ replicationFactor: 3, namespace: `rf-${run}` });
      await expect(three.publish('three', [{ key: 'k', value: 'v' }])).rejects.toThrow(
        `kafka bus: the cluster refused to create the topics rf-${run}.three with KAFKA_REPLICATION_FACTOR=3 (INVALID_REPLICATION_FACTOR): it must be at most the number of brokers`,
      );
    });
  });
}

const saslBrokers = process.env.KAFKA_SASL_BROKERS;
const saslUsers = (process.env.KAFKA_SASL_USERS ?? '').split(',').filter(Boolean).map((entry) => {
  const cut = entry.indexOf(':');
  return { username: entry.slice(0, cut), password: entry.slice(cut + 1) };
});
const [superUser, appUser] = saslUsers;

if (!saslBrokers || !superUser || !appUser || process.env.KAFKA_ACLS !== 'on') {
  const reason = !saslBrokers
    ? 'KAFKA_SASL_BROKERS is not set: no broker with SASL users runs (scripts/kafka.sh start with KAFKA_SASL_USERS and KAFKA_ACLS=on, see the top of this file)'
    : 'the SASL broker needs two users in KAFKA_SASL_USERS (a super user, then the service\'s) and KAFKA_ACLS=on';
  describe.skip(`Kafka bus with SASL and ACLs (skipped: ${reason})`, () => {
    it('needs a SASL broker', () => {});
  });
} else {
  const brokers = saslBrokers.split(',');
  const namespace = 'kafkasec';
  const run = randomUUID().slice(0, 8);

  describe('Kafka bus with SASL and ACLs (real broker, SASL_PLAINTEXT)', () => {
    const buses: KafkaBus[] = [];
    const consumers: Consumer[] = [];
    afterAll(async () => {
      await Promise.allSettled(consumers.map((consumer) => consumer.close()));
      await Promise.allSettled(buses.map((bus) => bus.close()));
    });
    const open = (mechanism: KafkaSaslMechanism, password: string, logger = createLogger('silent')) => {
      const bus = new KafkaBus({ brokers, clientId: 'kafkasec', partitions: 2, namespace, logger, logLevel: 'debug', sasl: { mechanism, username: appUser.username, password } });
      buses.push(bus);
      return bus;
    };
    const superAdmin = new Kafka({ brokers, clientId: 'kafkasec-operator', logLevel: logLevel.NOTHING, sasl: { mechanism: 'plain', ...superUser } }).admin();

    // The service's user may read, write and describe the namespace's topics and use its groups;
    // it may create only the topics under `kafkasec.made-`. The operator creates `kafkasec.given-<run>`.
    beforeAll(async () => {
      await superAdmin.connect();
      const allow = (resourceType: AclResourceTypes, resourceName: string, operation: AclOperationTypes) => ({
        resourceType,
        resourceName,
        resourcePatternType: ResourcePatternTypes.PREFIXED,
        principal: `User:${appUser.username}`,
        host: '*',
        operation,
        permissionType: AclPermissionTypes.ALLOW,
      });
      await superAdmin.createAcls({
        acl: [
          allow(AclResourceTypes.TOPIC, `${namespace}.`, AclOperationTypes.READ),
          allow(AclResourceTypes.TOPIC, `${namespace}.`, AclOperationTypes.WRITE),
          allow(AclResourceTypes.TOPIC, `${namespace}.`, AclOperationTypes.DESCRIBE),
          allow(AclResourceTypes.GROUP, `${namespace}.`, AclOperationTypes.READ),
          allow(AclResourceTypes.TOPIC, `${namespace}.made-`, AclOperationTypes.CREATE),
        ],
      });
      await superAdmin.createTopics({ topics: [{ topic: `${namespace}.given-${run}`, numPartitions: 2 }] });
    });
    afterAll(() => superAdmin.disconnect());

    for (const mechanism of ['plain', 'scram-sha-256', 'scram-sha-512'] as const) {
      it(`publishes and consumes with SASL ${mechanism}, logging no password`, async () => {
        const { lines, logger } = capturedLogger();
        const bus = open(mechanism, appUser.password, logger);
        const topic = `made-${mechanism}-${run}`;
        await bus.publish(topic, [{ key: 'k', value: mechanism }]);
        const seen: BusMessage[] = [];
        consumers.push(await bus.consume({ groupId: `g-${mechanism}-${run}`, topics: [topic] }, async (message) => void seen.push(message)));
        await eventually(() => seen.length >= 1, `a message over ${mechanism}`);
        expect(seen.map((m) => m.value)).toEqual([mechanism]);
        // kafkajs at debug level logged the SASL exchange and every request; none of it is the password.
        expect(lines.some((line) => /SASL|SCRAM/.test(line))).toBe(true);
        expect(lines.filter((line) => line.includes(appUser.password))).toEqual([]);
      });
    }

    it('fails on a wrong password with kafkajs\'s SASL error, the password in no log line or error', async () => {
      const wrong = `wrong-${randomUUID()}`;
      const { lines, logger } = capturedLogger();
      const bus = open('scram-sha-256', wrong, logger);
      const error = await bus.ensureTopics(['anything']).then(() => undefined, (failure: Error) => failure);
      expect(error?.message).toMatch(/SASL SCRAM SHA256 authentication failed/);
      const everything = [...lines, error!.message, error!.stack ?? '', JSON.stringify(error)].join('\n');
      expect(everything).toMatch(/authentication failed/);
      expect(everything).not.toContain(wrong);
    });

    it('runs on a topic an operator created, without the CREATE permission', async () => {
      const bus = open('plain', appUser.password);
      await bus.publish(`given-${run}`, [{ key: 'k', value: 'given' }]);
      const seen: BusMessage[] = [];
      consumers.push(await bus.consume({ groupId: `g-given-${run}`, topics: [`given-${run}`] }, async (message) => void seen.push(message)));
      await eventually(() => seen.length >= 1, 'the message on the operator\'s topic');
      expect(seen.map((m) => m.value)).toEqual(['given']);
    });

    it('names the missing topics, their partitions and the operator\'s part when it may not create them', async () => {
      const bus = open('plain', appUser.password);
      await expect(bus.consume({ groupId: `g-denied-${run}`, topics: [`denied-a-${run}`, `given-${run}`, `denied-b-${run}`] }, async () => {})).rejects.toThrow(
        `kafka bus: not allowed to create the Kafka topics ${namespace}.denied-a-${run}, ${namespace}.denied-b-${run} (TOPIC_AUTHORIZATION_FAILED: this service's principal lacks the CREATE permission). ` +
          'An operator must create them, each with 2 partitions and the replication factor the cluster needs, under exactly these names (KAFKA_NAMESPACE included), or grant this principal CREATE on them',
      );
    });
  });
}
