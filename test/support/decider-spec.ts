import { expect } from 'vitest';
import type { Decider } from '../../src/domain/decider.js';

/** Given past events, when a command, then these events (or this error code): see STYLE.md. */
export function deciderSpec<S, C, E extends { type: string; data: unknown }>(decider: Decider<S, C, E>) {
  return (given: E[]) => ({
    when: (command: C) => {
      const run = () => decider.decide(command, given.reduce(decider.evolve, decider.initialState()));
      return {
        then: (expected: { type: E['type']; data?: Record<string, unknown> }[]) => expect(run()).toMatchObject(expected),
        thenFails: (code: string) => {
          let error: unknown;
          try {
            run();
          } catch (e) {
            error = e;
          }
          expect(error, 'expected the decider to refuse').toBeDefined();
          const { code: domainCode, details } = error as { code: string; details?: { code?: string } };
          expect(details?.code ?? domainCode).toBe(code);
        },
      };
    },
  });
}
