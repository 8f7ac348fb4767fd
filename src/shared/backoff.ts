/** Exponential backoff for retrying a loop that failed `failures` times in a row (capped). */
export const backoffMs = (failures: number, baseMs = 200, maxMs = 30_000): number =>
  Math.min(maxMs, baseMs * 2 ** Math.min(failures, 8));

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
