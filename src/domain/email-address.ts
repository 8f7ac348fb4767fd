/**
 * What the service takes to be an email address it can send to. Account, team member and
 * template addresses are checked against it when given; a guest's `email` is any string (the
 * spec types it so), and an invitation to one that is not an address fails at send time.
 */
export const EMAIL_PATTERN = /^([A-Za-z0-9_'+-]+\.)*[A-Za-z0-9_'+-]*[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9-]*\.)+[A-Za-z]{2,}$/;

export const isEmailAddress = (value: string): boolean => value.length <= 320 && EMAIL_PATTERN.test(value.trim());
