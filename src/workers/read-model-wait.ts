import type { Services } from '../commands/services.js';
import { checkpointName, type Projection } from '../projections/projection.js';
import type { Logger } from '../shared/logger.js';

/**
 * Waits (up to `timeoutMs`) until the projection has caught up with the event store's head,
 * so a worker resuming its queue from that read model sees everything recorded before it.
 */
export async function readModelCatchesUp(
  services: Services,
  projection: Pick<Projection, 'name' | 'filter'>,
  options: { logger: Logger; isStopped: () => boolean; timeoutMs?: number },
): Promise<void> {
  // The last event this projection reads: the events after it never move its checkpoint on every store.
  const position = await services.eventStore.headPosition(projection.filter);
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  while (Date.now() < deadline && !options.isStopped()) {
    const checkpoint = await services.readStore.getCheckpoint(checkpointName(projection));
    if ((checkpoint ?? -1) >= position) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  options.logger.warn({ projection: projection.name, position }, 'the read model is behind the event store; resuming from what it has');
}
