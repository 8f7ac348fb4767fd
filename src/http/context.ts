import type { Response } from 'express';
import type { Actor } from '../adapters/eventstore/port.js';
import type { CommandContext } from '../commands/handle-command.js';
import type { Clock } from '../shared/clock.js';

/** Who is calling: set by the authentication middleware. */
export interface Principal {
  tenantId: string;
  actor: Actor;
  role: 'client' | 'team_member' | 'anonymous';
}

export function principalOf(res: Response): Principal {
  const principal = res.locals.principal as Principal | undefined;
  if (!principal) throw new Error('no principal on the request: the authentication middleware did not run');
  return principal;
}

export function commandContext(res: Response, clock: Clock): CommandContext {
  const principal = principalOf(res);
  const requestId = res.locals.requestId as string;
  const idempotencySeed = res.locals.idempotencySeed as string | undefined;
  return {
    tenantId: principal.tenantId,
    actor: principal.actor,
    correlationId: (res.locals.correlationId as string | undefined) ?? requestId,
    requestId,
    now: clock.now(),
    ...(idempotencySeed ? { idempotencySeed } : {}),
    // One holder per request, whatever number of contexts its handler makes: errorHandler reads it.
    writes: (res.locals.writes ??= { recorded: false }) as { recorded: boolean },
  };
}
