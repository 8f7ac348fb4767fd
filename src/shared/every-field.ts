/**
 * A view with every field of the spec's object, in the spec's order: docs/api.md, Answers ("all fields"
 * means every field, null when unset). A field the view lacks is `null`; fields of ours that the
 * spec does not list (canForce, erased, created) follow as they are.
 */
export type WithEveryField<T, F extends string> = Omit<T, F> & {
  [K in F]-?: K extends keyof T ? Exclude<T[K], undefined> | null : null;
};

export function withEveryField<T extends object, F extends string>(view: T, fields: readonly F[]): WithEveryField<T, F> {
  const given = view as Record<string, unknown>;
  const whole: Record<string, unknown> = {};
  for (const field of fields) whole[field] = given[field] ?? null;
  for (const [field, value] of Object.entries(given)) if (!(field in whole) && value !== undefined) whole[field] = value;
  return whole as WithEveryField<T, F>;
}
