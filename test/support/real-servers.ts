/**
 * Decides, once per test file, where each real server comes from:
 * an env URL when set, else a testcontainers container when a container runtime answers,
 * else "skipped" with the reason. Under CI=true a missing Kafka or MongoDB fails the run.
 */
import type { StartedTestContainer } from 'testcontainers';

export type RealServer = 'kafka' | 'mongo' | 'eventstore';

export interface Availability {
  /** Connection string (MONGO_URL / KAFKA_BROKERS / EVENTSTORE_URL form), when available. */
  url?: string;
  /** Why the suite is skipped, when it is. */
  skipReason?: string;
  /** Stops what this helper started (containers). */
  stop: () => Promise<void>;
}

const envName: Record<RealServer, string> = {
  kafka: 'KAFKA_BROKERS',
  mongo: 'MONGO_URL',
  eventstore: 'EVENTSTORE_URL',
};

/** Servers that CI must provide: their suites may never be skipped under CI=true. */
const requiredInCi: RealServer[] = ['kafka', 'mongo'];

let runtimeAnswer: Promise<boolean> | undefined;

/** Asks testcontainers for a container runtime; it rejects within milliseconds when none exists. */
async function containerRuntimeAnswers(): Promise<boolean> {
  runtimeAnswer ??= (async () => {
    try {
      const { getContainerRuntimeClient } = await import('testcontainers');
      await Promise.race([
        getContainerRuntimeClient(),
        new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 3000)),
      ]);
      return true;
    } catch {
      return false;
    }
  })();
  return runtimeAnswer;
}

async function startContainer(server: RealServer): Promise<{ url: string; container: StartedTestContainer }> {
  const { GenericContainer, Wait } = await import('testcontainers');
  if (server === 'mongo') {
    const container = await new GenericContainer('mongo:7').withExposedPorts(27017).start();
    return { url: `mongodb://${container.getHost()}:${container.getMappedPort(27017)}/`, container };
  }
  if (server === 'eventstore') {
    const container = await new GenericContainer('eventstore/eventstore:24.10.0-bookworm-slim')
      .withEnvironment({ EVENTSTORE_INSECURE: 'true', EVENTSTORE_RUN_PROJECTIONS: 'None', EVENTSTORE_MEM_DB: 'true' })
      .withExposedPorts(2113)
      .withWaitStrategy(Wait.forHttp('/health/live', 2113).forStatusCode(204))
      .start();
    return { url: `esdb://${container.getHost()}:${container.getMappedPort(2113)}?tls=false`, container };
  }
  const container = await new GenericContainer('apache/kafka:3.9.1')
    .withExposedPorts({ container: 9092, host: 39092 })
    .withEnvironment({
      KAFKA_NODE_ID: '1',
      KAFKA_PROCESS_ROLES: 'broker,controller',
      KAFKA_LISTENERS: 'PLAINTEXT://:9092,CONTROLLER://:9093',
      KAFKA_ADVERTISED_LISTENERS: 'PLAINTEXT://localhost:39092',
      KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
      KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
    })
    .start();
  return { url: 'localhost:39092', container };
}

export async function realServer(server: RealServer): Promise<Availability> {
  const fromEnv = process.env[envName[server]];
  if (fromEnv) return { url: fromEnv, stop: async () => {} };
  if (await containerRuntimeAnswers()) {
    const { url, container } = await startContainer(server);
    return { url, stop: async () => void (await container.stop()) };
  }
  const reason = `${envName[server]} is not set and no container runtime answers`;
  if (process.env.CI === 'true' && requiredInCi.includes(server)) {
    throw new Error(`CI=true requires a real ${server}: ${reason}. Start it with scripts/test-servers.sh.`);
  }
  return { skipReason: reason, stop: async () => {} };
}
