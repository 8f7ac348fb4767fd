/** Self time of a V8 CPU profile grouped into the areas of a request (by the source file of each frame). */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples?: number[];
  timeDeltas?: number[];
}

/** First matching rule names the area of a frame (by its own file, innermost first up the stack). */
const areas: [string, RegExp][] = [
  ['auth (jose, tokens, keys)', /jose|src\/identity|auth/],
  ['validation (zod)', /zod|src\/http\/schemas|validate/],
  ['personal-data codec (sealing, keys, ciphers)', /src\/personal-data|src\/shared\/encryption|adapters\/keystore|src\/domain\/personal-data/],
  ['decide (domain)', /src\/domain/],
  ['event store append (sqlite)', /adapters\/eventstore|better-sqlite3/],
  ['projections + read store', /src\/projections|adapters\/readstore/],
  ['read-your-writes / command loop', /handle-command|read-your-writes|services\.ts/],
  // Client libraries before the code that calls them: a frame of the driver is the driver's time.
  ['MongoDB driver (bson, wire protocol)', /node_modules\/(mongodb|bson)\//],
  ['Kafka client (kafkajs)', /node_modules\/kafkajs\//],
  ['mailer (outbox files, SendGrid, SMTP) + message rendering', /adapters\/mailer|src\/comms/],
  ['bus / workers', /adapters\/bus|src\/workers/],
  ['door command', /src\/commands/],
  ['metrics / logging', /prom-client|pino|observability/],
  ['express + HTTP (node:http, body parsing)', /express|body-parser|router|on-finished|raw-body|_http|node:http|node:net|src\/http/],
  ['JSON', /JSON/],
];

export function summarise(profile: Profile): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfTime = new Map<number, number>();
  (profile.samples ?? []).forEach((id, i) => selfTime.set(id, (selfTime.get(id) ?? 0) + (profile.timeDeltas?.[i] ?? 0)));
  const totals = new Map<string, number>();
  let all = 0;
  for (const [id, micros] of selfTime) {
    all += micros;
    let area: string | undefined;
    const own = byId.get(id)!.callFrame;
    if (own.functionName === '(idle)') area = 'idle';
    else if (own.functionName === '(garbage collector)') area = 'GC';
    else if (own.functionName === '(program)') area = 'V8 / native (program)';
    for (let at: number | undefined = id; !area && at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)!.callFrame;
      const key = `${frame.url} ${frame.functionName}`;
      area = areas.find(([, rule]) => rule.test(key))?.[0];
    }
    area ??= 'other';
    totals.set(area, (totals.get(area) ?? 0) + micros);
  }
  const busy = all - (totals.get('idle') ?? 0);
  return [...totals]
    .sort((a, b) => b[1] - a[1])
    .map(([area, micros]) => `${area.padEnd(45)} ${(micros / 1000).toFixed(0).padStart(7)} ms  ${area === 'idle' ? '' : `${((micros / busy) * 100).toFixed(1)}% of busy`}`)
    .join('\n');
}

/** The functions with the most self time: "name (file:line)  ms". */
export function heaviest(profile: Profile, count: number): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  (profile.samples ?? []).forEach((id, i) => {
    const frame = byId.get(id)!.callFrame as ProfileNode['callFrame'] & { lineNumber?: number };
    const key = `${frame.functionName || '(anonymous)'} (${frame.url.replace(/^.*\/(node_modules|src)\//, '$1/')}:${(frame.lineNumber ?? 0) + 1})`;
    self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas?.[i] ?? 0));
  });
  return [...self]
    .filter(([key]) => !key.startsWith('(idle)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([key, micros]) => `${(micros / 1000).toFixed(0).padStart(7)} ms  ${key}`)
    .join('\n');
}


interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

/**
 * A sampling heap profile's bytes per operation: the total and the 40 largest allocation sites
 * (function, file and line), each per `operations` (a guest imported, a scan answered).
 */
export function allocationPerOperation(profile: unknown, operations: number, unit: string): string {
  const bySite = new Map<string, number>();
  let total = 0;
  const walk = (node: HeapNode): void => {
    const frame = node.callFrame;
    const site = `${frame.functionName || '(anonymous)'} (${frame.url.replace(/^.*\/(node_modules|src)\//, '$1/')}:${frame.lineNumber + 1})`;
    bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
    total += node.selfSize;
    node.children.forEach(walk);
  };
  walk((profile as { head: HeapNode }).head);
  const per = Math.max(operations, 1);
  const lines = [`allocated: ${(total / 1e6).toFixed(0)} MB, ${(total / per / 1024).toFixed(1)} kB per ${unit}`];
  for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, 40)) lines.push(`${(bytes / per / 1024).toFixed(2).padStart(8)} kB/${unit}  ${site}`);
  return lines.join('\n');
}
