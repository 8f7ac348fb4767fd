/** A background process of the `workers` role (bus consumers, schedulers). */
export interface Worker {
  name: string;
  start(): Promise<void>;
  /** Stops taking work; work in flight is abandoned to redelivery, never half-committed. */
  stop(): Promise<void>;
}
