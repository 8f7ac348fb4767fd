/** The one clock. Tests replace it through the composition root, never by patching Date. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
