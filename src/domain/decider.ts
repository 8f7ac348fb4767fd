/** A decider: pure functions that decide what happens to one stream (see STYLE.md). */
export interface Decider<State, Command, Event extends { type: string; data: unknown }> {
  initialState(): State;
  evolve(state: State, event: Event): State;
  /** Events to append (none is a valid answer), or a thrown DomainError. */
  decide(command: Command, state: State): Event[];
}

/** A rule of the domain said no. The HTTP error mapper turns `code` into a status. */
export class DomainError extends Error {
  override readonly name = 'DomainError';
  constructor(
    readonly code: DomainErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export type DomainErrorCode =
  | 'not_found'
  | 'validation_error'
  | 'conflict'
  | 'forbidden'
  /** The request is well formed but a rule refuses it (spec: the 422 codes). */
  | 'unprocessable'
  /** A service we depend on (the email provider) did not answer; retry later. */
  | 'unavailable';
