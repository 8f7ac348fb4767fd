/**
 * Kafka as a production operator runs it (docs/operations.md: Kafka consumer offsets, Kafka topics
 * the service creates, Kafka TLS and SASL):
 * - a client certificate for mutual TLS (KAFKA_SSL_CERT_FILE, KAFKA_SSL_KEY_FILE), from the
 *   environment to the TLS connection, checked against a TLS listener that requires one (no Kafka);
 * - a topic creation the cluster's policy refuses, named with what to do (stand-in admin client);
 * - on a real broker (KAFKA_BROKERS, as the other Kafka tests): an existing topic with settings the
 *   service does not work well with is named in a warning; a consumer group whose offsets are gone
 *   (deleted here as the broker drops them after offsets.retention.minutes) reads the topic again
 *   from the beginning and says so; the whole service restarted on such groups sends no email
 *   twice and delivers no webhook twice (one comms.skipped per sent invitation read again).
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { ConfigResourceTypes } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaBus } from '../../src/adapters/bus/kafka.js';
import type { BusMessage } from '../../src/adapters/bus/port.js';
import { loadConfig } from '../../src/config.js';
import { createPlatform } from '../../src/main.js';
import { createLogger } from '../../src/shared/logger.js';
import { kafkaBuses } from '../support/kafka-buses.js';
import { startSendGridDouble } from '../support/sendgrid-double.js';
import { createClient, startTestService, type TestService } from '../support/service.js';
import { eventually as until, startReceiver } from '../webhooks/receiver.js';

/** Hang guard, far above any real figure. */
const WAIT_MS = 60_000;
const eventually = (condition: () => boolean | Promise<boolean>, what: string) => until(async () => (await condition()) || undefined, WAIT_MS, what);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaops-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));
const file = (name: string, text: string): string => {
  const at = path.join(tmp, name);
  fs.writeFileSync(at, text);
  return at;
};

/** Every line a logger wrote, parsed. */
function capturedLogger() {
  const lines: { level: number; msg: string; [field: string]: unknown }[] = [];
  const logger = createLogger('debug', { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { lines, logger };
}

function configProblems(env: NodeJS.ProcessEnv): string {
  try {
    loadConfig(env);
    return '';
  } catch (error) {
    return (error as Error).message;
  }
}

const pem = (kind: string) => `-----BEGIN ${kind}-----\nMIIB\n-----END ${kind}-----\n`;

describe('KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE (no broker needed)', () => {
  it('pass the client certificate and key to TLS, beside the CA file', () => {
    const [cert, key, ca] = [pem('CERTIFICATE'), pem('PRIVATE KEY'), pem('CERTIFICATE')];
    const env = { KAFKA_SSL: 'true', KAFKA_SSL_CERT_FILE: file('client.crt', cert), KAFKA_SSL_KEY_FILE: file('client.key', key) };
    expect(loadConfig(env).kafkaSsl).toEqual({ cert, key });
    expect(loadConfig({ ...env, KAFKA_SSL_CA_FILE: file('ca.pem', ca) }).kafkaSsl).toEqual({ ca, cert, key });
    // A traditional RSA or EC key, as openssl and the managed services hand them out, is taken too.
    const rsa = pem('RSA PRIVATE KEY');
    expect(loadConfig({ ...env, KAFKA_SSL_KEY_FILE: file('rsa.key', rsa) }).kafkaSsl).toEqual({ cert, key: rsa });
  });

  it('refuses one without the other, either without KAFKA_SSL=true, and a file that holds no such PEM, never showing the key', () => {
    const secretKey = '-----BEGIN ENCRYPTED PRIVATE KEY-----\nS3cr3tKeyMaterial\n-----END ENCRYPTED PRIVATE KEY-----\n';
    const cert = file('c.crt', pem('CERTIFICATE'));
    const key = file('c.key', pem('PRIVATE KEY'));
    const cases: [NodeJS.ProcessEnv, RegExp][] = [
      [{ KAFKA_SSL: 'true', KAFKA_SSL_CERT_FILE: cert }, /KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE go together .*only KAFKA_SSL_CERT_FILE is set/],
      [{ KAFKA_SSL: 'true', KAFKA_SSL_KEY_FILE: key }, /KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE go together .*only KAFKA_SSL_KEY_FILE is set/],
      [{ KAFKA_SSL_CERT_FILE: cert, KAFKA_SSL_KEY_FILE: key }, /KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE are set but KAFKA_SSL is not true/],
      [{ KAFKA_SSL: 'true', KAFKA_SSL_CERT_FILE: key, KAFKA_SSL_KEY_FILE: key }, /KAFKA_SSL_CERT_FILE must be a PEM file of this service's client certificate/],
      [{ KAFKA_SSL: 'true', KAFKA_SSL_CERT_FILE: cert, KAFKA_SSL_KEY_FILE: cert }, /KAFKA_SSL_KEY_FILE must be a PEM file of the client certificate's private key/],
      [{ KAFKA_SSL: 'true', KAFKA_SSL_CERT_FILE: cert, KAFKA_SSL_KEY_FILE: file('enc.key', secretKey) }, /KAFKA_SSL_KEY_FILE must hold an unencrypted PEM private key/],
      [{ KAFKA_SSL: 'true', KAFKA_SSL_CERT_FILE: cert, KAFKA_SSL_KEY_FILE: path.join(tmp, 'none.key') }, /KAFKA_SSL_KEY_FILE must name a readable file, ".*none.key": ENOENT/],
    ];
    for (const [env, problem] of cases) {
      const message = configProblems(env);
      expect(message).toMatch(problem);
      expect(message).not.toContain('S3cr3tKeyMaterial');
    }
  });
});

/** A CA, a server certificate for 127.0.0.1 and a client certificate `CN=checkin-service` signed by the CA (openssl); the reason when it cannot. */
function certificates(): Record<'ca' | 'serverKey' | 'serverCert' | 'clientKey' | 'clientCert', string> | string {
  try {
    const at = (name: string) => path.join(tmp, name);
    const run = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
    run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=test-ca', '-keyout', at('ca.key'), '-out', at('ca.crt'));
    run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', at('server.key'), '-out', at('server.crt'));
    run('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=checkin-service', '-keyout', at('client.key'), '-out', at('client.csr'));
    run('x509', '-req', '-in', at('client.csr'), '-CA', at('ca.crt'), '-CAkey', at('ca.key'), '-CAcreateserial', '-days', '1', '-out', at('client.crt'));
    const read = (name: string) => fs.readFileSync(at(name), 'utf8');
    return { ca: read('ca.crt'), serverKey: read('server.key'), serverCert: read('server.crt'), clientKey: read('client.key'), clientCert: read('client.crt') };
  } catch (error) {
    return `openssl could not make the certificates: ${(error as Error).message}`;
  }
}
const certs = certificates();

if (typeof certs === 'string') {
  describe.skip(`mutual TLS against a TLS listener (skipped: ${certs})`, () => {
    it('needs openssl', () => {});
  });
} else {
  /**
   * A TLS listener that requires a client certificate signed by the test CA stands in for a broker
   * of a cluster with TLS client authentication (Aiven, MSK): it records the subject of each client
   * certificate it accepted and closes the connection. What is checked is that the settings reach
   * the connection from the environment through the composition root, not Kafka over TLS.
   */
  describe('mutual TLS against a TLS listener that requires a client certificate (no Kafka)', () => {
    let server: tls.Server;
    let port = 0;
    const accepted: string[] = [];
    beforeAll(async () => {
      server = tls.createServer({ key: certs.serverKey, cert: certs.serverCert, ca: certs.ca, requestCert: true, rejectUnauthorized: true }, (socket) => {
        accepted.push(String(socket.getPeerCertificate().subject?.CN));
        socket.destroy();
      });
      server.on('tlsClientError', () => {});
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as { port: number }).port;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    async function pingWith(env: NodeJS.ProcessEnv): Promise<void> {
      const platform = createPlatform(loadConfig({ DATA_DIR: fs.mkdtempSync(path.join(tmp, 'data-')), KAFKA_BROKERS: `127.0.0.1:${port}`, ...env }), createLogger('silent'));
      try {
        await expect(platform.bus.ping()).rejects.toThrow();
      } finally {
        await platform.close();
      }
    }

    const serverCa = () => file('server-ca.pem', certs.serverCert);

    it('presents the client certificate of KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE, and the listener accepts it', async () => {
      const before = accepted.length;
      await pingWith({ KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: serverCa(), KAFKA_SSL_CERT_FILE: file('svc.crt', certs.clientCert), KAFKA_SSL_KEY_FILE: file('svc.key', certs.clientKey) });
      expect(accepted.slice(before)).toContain('checkin-service');
    });

    it('without them presents none, and the listener refuses the connection', async () => {
      const before = accepted.length;
      await pingWith({ KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: serverCa() });
      expect(accepted.length).toBe(before);
    });
  });
}

describe('Kafka bus: a topic creation the cluster refuses by policy (stand-in admin client)', () => {
  it('names the topics, the answer and what an operator does', async () => {
    const bus = new KafkaBus({ brokers: ['127.0.0.1:1'], clientId: 'kafkaops', namespace: 'prod', logger: createLogger('silent') });
    const refusal = Object.assign(new Error('Topic creation failed'), {
      name: 'KafkaJSAggregateError',
      errors: [Object.assign(new Error('Partitions must be at most 6'), { type: 'POLICY_VIOLATION' })],
    });
    const admin = {
      listTopics: async () => [],
      createTopics: async () => {
        throw refusal;
      },
      disconnect: async () => {},
    };
    (bus as unknown as { admin: Promise<unknown> }).admin = Promise.resolve(admin);
    const error = await bus.ensureTopics(['comms.invitations.v1']).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(/^kafka bus: the cluster refused to create the topics prod\.comms\.invitations\.v1 with 8 partitions and its default replication factor \(POLICY_VIOLATION: Partitions must be at most 6\)\. /);
    expect(error?.message).toMatch(/an operator must create them as it allows, under exactly these names \(KAFKA_NAMESPACE included\), with cleanup\.policy=delete and a retention\.ms of at least 7 days/);
    expect(error?.cause).toBe(refusal);
  });
});

const { kafka, open, consumers } = await kafkaBuses({ clientId: 'kafkaops', partitions: 2 });

if (!kafka.url) {
  // Runs whenever a real server is reachable; under CI=true realServer() throws instead of skipping.
  describe.skip(`kafka topics and offsets as an operator has them (skipped: ${kafka.skipReason})`, () => {
    it('needs KAFKA_BROKERS or a container runtime', () => {});
  });
} else {
  describe('kafka topics and offsets as an operator has them (real broker)', () => {
    it('names each setting of an existing topic the service does not work well with, once, and uses the topic', async () => {
      const run = randomUUID().slice(0, 8);
      const { lines, logger } = capturedLogger();
      const bus = open({ namespace: `ops-${run}`, logger });
      const admin = bus.kafka.admin();
      await admin.connect();
      try {
        await admin.createTopics({
          topics: [
            { topic: `ops-${run}.compacted`, numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }, { name: 'retention.ms', value: '3600000' }] },
            { topic: `ops-${run}.fine`, numPartitions: 2 },
          ],
          waitForLeaders: true,
        });
        const [described] = (await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: `ops-${run}.compacted`, configNames: ['cleanup.policy'] }] })).resources;
        expect(described!.configEntries[0]!.configValue).toBe('compact');
      } finally {
        await admin.disconnect();
      }
      await bus.publish('compacted', [{ key: 'k', value: 'v' }]);
      await bus.publish('fine', [{ key: 'k', value: 'v' }]);
      await bus.publish('compacted', [{ key: 'k', value: 'v2' }]);
      const warnings = lines.filter((line) => line.level === 40 && line.msg.startsWith('kafka bus: the existing topic'));
      expect(warnings).toHaveLength(1);
      const [warning] = warnings;
      expect(warning).toMatchObject({ topic: 'compacted', serverTopic: `ops-${run}.compacted` });
      expect(warning!.msg).toContain(`the existing topic ops-${run}.compacted has 1 partition(s), fewer than the 2 the service creates`);
      expect(warning!.msg).toContain('has cleanup.policy=compact: the broker keeps only the latest message of each key');
      expect(warning!.msg).toContain('has retention.ms=3600000 (1.0 h), below 7 days');
      expect(await bus.heldMessages('compacted')).toBe(2);
    }, 120_000);

    it('a group whose offsets are gone reads its topic again from the beginning, and says so', async () => {
      const run = randomUUID().slice(0, 8);
      const namespace = `offsets-${run}`;
      const topic = 'comms.invitations.v1';
      const bus = open({ namespace });
      const seen: BusMessage[] = [];
      const first = await bus.consume({ groupId: 'send-worker', topics: [topic] }, async (message) => void seen.push(message));
      consumers.push(first);
      await bus.publish(topic, [1, 2, 3].map((n) => ({ key: `guest-${n}`, value: `request ${n}` })));
      await eventually(() => seen.length === 3, 'the three messages handled');
      await eventually(async () => (await bus.consumerLag('send-worker', [topic]))[0]!.messages === 0, 'their offsets committed');
      await first.close();

      // The service is stopped; the broker drops the empty group's offsets (offsets.retention.minutes).
      const admin = bus.kafka.admin();
      await admin.connect();
      try {
        await admin.deleteGroups([`${namespace}.send-worker`]);
      } finally {
        await admin.disconnect();
      }

      const { lines, logger } = capturedLogger();
      const restarted = open({ namespace, logger });
      const again: BusMessage[] = [];
      consumers.push(await restarted.consume({ groupId: 'send-worker', topics: [topic] }, async (message) => void again.push(message)));
      await eventually(() => again.length === 3, 'the three messages handled again');
      expect(again.map((m) => m.value).sort()).toEqual(['request 1', 'request 2', 'request 3']);
      const warning = lines.find((line) => line.level === 40 && line.msg.startsWith('kafka bus: consumer group'));
      expect(warning).toMatchObject({ groupId: 'send-worker', serverGroupId: `${namespace}.send-worker`, topics: [{ topic, messages: 3 }] });
      expect(warning!.msg).toContain(`consumer group ${namespace}.send-worker has no committed offset on ${namespace}.${topic}: it reads the 3 message(s) held there from the beginning`);
      expect(warning!.msg).toContain('offsets.retention.minutes');

      // A group that has its offsets starts where it left off, without the warning.
      const { lines: quiet, logger: quietLogger } = capturedLogger();
      await eventually(async () => (await restarted.consumerLag('send-worker', [topic]))[0]!.messages === 0, 'the offsets committed again');
      await consumers.pop()!.close();
      const third = open({ namespace, logger: quietLogger });
      consumers.push(await third.consume({ groupId: 'send-worker', topics: [topic] }, async (message) => void again.push(message)));
      expect(quiet.filter((line) => line.msg.startsWith('kafka bus: consumer group'))).toEqual([]);
    }, 180_000);

    it('the service restarted after its groups lost their offsets sends no email twice and delivers no webhook twice', async () => {
      const namespace = `restart-${randomUUID().slice(0, 8)}`;
      const dataDir = fs.mkdtempSync(path.join(tmp, 'service-'));
      const sendgrid = await startSendGridDouble();
      const receiver = await startReceiver();
      const env = {
        KAFKA_BROKERS: kafka.url!,
        KAFKA_NAMESPACE: namespace,
        SENDGRID_API_KEY: sendgrid.apiKey,
        SENDGRID_BASE_URL: sendgrid.url,
        WEBHOOK_ALLOW_INSECURE: 'true',
      };
      let service: TestService | undefined;
      try {
        service = await startTestService(env, { dataDir });
        const client = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
        receiver.secret = (await client.call('POST', '/comms/v1/api/comms/webhook', { url: receiver.url })).body.secret;
        const event = await client.call('POST', '/checkin/v1/api/event', { title: 'Gala', startTime: '2026-01-01T10:00:00Z', endTime: '2027-01-01T10:00:00Z' });
        const template = await client.call('POST', '/comms/v1/api/comms/template', { eventId: event.body.id, name: 'Invite', subject: 'Hello {{firstName}}', html: '<p>Hi {{firstName}}</p>' });
        const guests = [];
        for (const name of ['Ada', 'Alan']) {
          const guest = await client.call('POST', '/checkin/v1/api/guest', { eventId: event.body.id, firstName: name, email: `${name.toLowerCase()}@example.com`, commsTemplateId: template.body.id });
          expect(guest.status).toBe(200);
          guests.push(guest.body.id);
        }
        const sent = await receiver.waitFor(2, WAIT_MS);
        expect(sent.map((d) => d.body.type)).toEqual(['comms.sent', 'comms.sent']);
        // A redelivery asked for, so comms.webhook-redeliveries.v1 holds a message too.
        const redeliver = await client.call('POST', `/comms/v1/api/comms/webhook/deliveries/${sent[0]!.body.id}/redeliver`);
        expect(redeliver.status).toBe(200);
        await receiver.waitFor(3, WAIT_MS);
        const bus = service.platform.bus as KafkaBus;
        await eventually(
          async () => (await bus.consumerLag('send-worker', ['comms.invitations.v1']))[0]!.messages === 0 && (await bus.consumerLag('webhook-dispatcher', ['comms.events.v1', 'comms.webhook-redeliveries.v1'])).every((t) => t.messages === 0),
          'both groups caught up',
        );
        await service.stop();
        service = undefined;

        // Down longer than offsets.retention.minutes: the broker dropped both groups' offsets.
        const admin = open().kafka.admin();
        await admin.connect();
        try {
          await admin.deleteGroups([`${namespace}.send-worker`, `${namespace}.webhook-dispatcher`]);
        } finally {
          await admin.disconnect();
        }

        service = await startTestService(env, { dataDir });
        const again = service.platform.bus as KafkaBus;
        // Each sent invitation whose request was read again is reported comms.skipped, once.
        const all = await receiver.waitFor(5, WAIT_MS);
        await eventually(
          async () => (await again.consumerLag('send-worker', ['comms.invitations.v1']))[0]!.messages === 0 && (await again.consumerLag('webhook-dispatcher', ['comms.events.v1', 'comms.webhook-redeliveries.v1'])).every((t) => t.messages === 0),
          'both groups read everything again',
        );
        await eventually(() => service!.workers.every((worker) => ((worker as { backlog?: number }).backlog ?? 0) === 0), 'the workers idle');
        expect(sendgrid.accepted).toHaveLength(2);
        const byType = (type: string) => receiver.deliveries.filter((d) => d.body.type === type);
        // The two sends and the one redelivery asked for: nothing delivered again.
        expect(byType('comms.sent')).toHaveLength(3);
        expect(new Set(byType('comms.sent').map((d) => d.body.id)).size).toBe(2);
        expect(byType('comms.skipped').map((d) => d.body.data.attendeeId).sort()).toEqual([...guests].sort());
        expect(all).toHaveLength(5);
        expect(receiver.deliveries).toHaveLength(5);
      } finally {
        await service?.stop();
        await receiver.close();
        await sendgrid.close();
      }
    }, 240_000);
  });
}
