/**
 * What the service takes to be an email address it can send to. Account, team member and
 * template addresses are checked against it when given; a guest's `email` is any string (the
 * spec types it so), and an invitation to one that is not an address fails at send time.
 */
export const EMAIL_PATTERN = /^([A-Za-z0-9_'+-]+\.)*[A-Za-z0-9_'+-]*[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9-]*\.)+[A-Za-z]{2,}$/;

export const isEmailAddress = (value: string): boolean => value.length <= 320 && EMAIL_PATTERN.test(value.trim());

/** The part of EMAIL_PATTERN before the `@`: dot-separated atoms, no quotes, commas or brackets. */
const LOCAL_PART_PATTERN = new RegExp(`^${EMAIL_PATTERN.source.slice(1, EMAIL_PATTERN.source.indexOf('@'))}$`);

/** Whether `value` is a local part this service sends from (the domain is checked on its own). */
export const isEmailLocalPart = (value: string): boolean => value.length <= 64 && LOCAL_PART_PATTERN.test(value);
