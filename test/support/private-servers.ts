/**
 * Private Kafka and FerretDB instances for fault tests that stop a server (the shared ones from
 * scripts/test-servers.sh serve other tests meanwhile): the same scripts, with a runtime dir of
 * their own (CHECKIN_SERVERS_RUNTIME_DIR) and free ports. `stop` and `resume` keep the data.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const scripts = path.resolve(import.meta.dirname, '..', '..', 'scripts');

export interface PrivateServer {
  url: string;
  stop(): Promise<void>;
  resume(): Promise<void>;
  /** Stops it and removes its runtime dir. */
  remove(): Promise<void>;
}

export async function startPrivate(server: 'kafka' | 'ferretdb'): Promise<PrivateServer> {
  const runtime = fs.mkdtempSync(path.join(os.tmpdir(), `private-${server}-`));
  const env: NodeJS.ProcessEnv = { ...process.env, CHECKIN_SERVERS_RUNTIME_DIR: runtime };
  // A plain broker, whatever the run's environment asks of the shared ones (CI exports the SASL
  // broker's users, which kafka.sh would take as its opt-in to SASL).
  for (const name of ['KAFKA_SASL_USERS', 'KAFKA_ACLS', 'KAFKA_PORT', 'KAFKA_CONTROLLER_PORT', 'FERRETDB_PORT', 'FERRETDB_DEBUG_PORT']) delete env[name];
  // Ports of the shared instance are busy: the script picks free ones.
  const script = path.join(scripts, `${server}.sh`);
  const call = (command: string) => run(script, [command], { env, timeout: 240_000, maxBuffer: 10_000_000 });
  const { stdout } = await call('start');
  const url = (/^(?:KAFKA_BROKERS|MONGO_URL)=(.+)$/m.exec(stdout) ?? [])[1];
  if (!url) {
    // Started but unusable here (another mode): stop it, or it outlives the run.
    await call('stop').catch(() => {});
    fs.rmSync(runtime, { recursive: true, force: true });
    throw new Error(`${server}.sh start printed no URL: ${stdout}`);
  }
  return {
    url,
    stop: async () => void (await call('stop')),
    resume: async () => void (await call('resume')),
    remove: async () => {
      await call('stop').catch(() => {});
      fs.rmSync(runtime, { recursive: true, force: true });
    },
  };
}

export async function freePort(): Promise<number> {
  const net = await import('node:net');
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
