/** Clients that loop on GET over kept-alive sockets, counting how each request ended. */
import http from 'node:http';

export interface LoadTally {
  ok: number;
  /** Refused before reaching the server (listener closed): the clean way to be turned away. */
  refused: number;
  /** Reset or cut-off sockets: a request that may have reached the server and got no answer. */
  resets: number;
  other: number;
  errors: string[];
  /** Answers that carried `Connection: close`. */
  closeAnswers: number;
  /** Clients that have had at least one 200 answer: the positive marker that each one is looping (docs/testing.md). */
  clientsAnswered: number;
}

export function keepAliveLoad(url: string, clients: number, path = '/healthz'): { tally: LoadTally; stop(): Promise<void>; done: Promise<void> } {
  const tally: LoadTally = { ok: 0, refused: 0, resets: 0, other: 0, errors: [], closeAnswers: 0, clientsAnswered: 0 };
  let stopped = false;
  const agents: http.Agent[] = [];
  const loop = async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    agents.push(agent);
    let answered = false;
    while (!stopped) {
      const outcome = await new Promise<'ok' | 'refused' | 'reset' | 'other'>((resolve) => {
        const req = http.get(`${url}${path}`, { agent }, (res) => {
          if (res.headers.connection === 'close') tally.closeAnswers += 1;
          res.resume();
          res.on('end', () => resolve(res.statusCode === 200 ? 'ok' : 'other'));
          res.on('error', (error) => {
            tally.errors.push(`response: ${(error as NodeJS.ErrnoException).code ?? error.message}`);
            resolve('reset');
          });
        });
        req.on('error', (error: NodeJS.ErrnoException) => {
          if (error.code === 'ECONNREFUSED') return resolve('refused');
          tally.errors.push(error.code ?? error.message);
          resolve(error.code === 'ECONNRESET' || error.code === 'EPIPE' || /hang up/.test(error.message) ? 'reset' : 'other');
        });
      });
      if (outcome === 'ok') {
        tally.ok += 1;
        if (!answered) tally.clientsAnswered += 1;
        answered = true;
      }
      else if (outcome === 'refused') {
        tally.refused += 1;
        break; // the server is gone: stop this client
      } else if (outcome === 'reset') tally.resets += 1;
      else tally.other += 1;
    }
  };
  const done = Promise.all(Array.from({ length: clients }, loop)).then(() => {
    for (const agent of agents) agent.destroy();
  });
  return {
    tally,
    done,
    stop: async () => {
      stopped = true;
      await done;
    },
  };
}
