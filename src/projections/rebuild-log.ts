import type { EventStore } from '../adapters/eventstore/port.js';
import type { Logger } from '../shared/logger.js';
import type { Projection } from './projection.js';
import type { ProjectionRunner, RebuildProgress } from './runner.js';

/**
 * A rebuild that logs its progress as JSON lines: `<label>: started` with the head,
 * `<label>: progress` with position, head, events and percent at most once a second and at the
 * end, `<label>: finished` with events and seconds (docs/operations.md, Operator commands).
 * `check` runs before each step and may throw to stop the rebuild (a holder lost meanwhile).
 */
export async function loggedRebuild(
  runner: ProjectionRunner,
  eventStore: EventStore,
  names: string[],
  logger: Logger,
  label: string,
  check?: () => void,
): Promise<{ events: number; seconds: number }> {
  const selected: Projection[] = runner.projections.filter((p) => names.length === 0 || names.includes(p.name));
  const head = await eventStore.headPosition({ streamPrefixes: selected.flatMap((p) => p.filter.streamPrefixes ?? ['']) });
  logger.info({ projections: selected.map((p) => p.name), head }, `${label}: started`);
  const started = Date.now();
  let events = 0;
  let logged = 0;
  let lastPosition = -1;
  await runner.rebuild(names, (step: RebuildProgress) => {
    check?.();
    if (step.position === lastPosition) return; // one call per projection per batch
    lastPosition = step.position;
    events = step.events;
    if (Date.now() - logged < 1000 && step.position < head) return;
    logged = Date.now();
    const percent = head > 0 ? Math.min(100, Math.round((Math.max(step.position, 0) / head) * 100)) : 100;
    logger.info({ position: step.position, head, events: step.events, percent }, `${label}: progress`);
  });
  const seconds = (Date.now() - started) / 1000;
  logger.info({ projections: selected.map((p) => p.name), events, seconds }, `${label}: finished`);
  return { events, seconds };
}
