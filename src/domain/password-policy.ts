import { DomainError } from './decider.js';
import { caselessKey } from '../shared/text-key.js';

/**
 * Password policy (README "Passwords"): 10 to 200 characters, not only one repeated
 * character, and not the user's name or email.
 */
export function checkPasswordPolicy(password: string, user: { userName?: string; email?: string }, path = 'password'): void {
  const problems: string[] = [];
  // Characters as a person counts them (code points): an emoji is one, not two UTF-16 units.
  const length = [...password].length;
  if (length < 10) problems.push('must be at least 10 characters');
  if (length > 200) problems.push('must be at most 200 characters');
  if (/^(.)\1*$/su.test(password)) problems.push('must not be one repeated character');
  const key = caselessKey(password);
  if ([user.userName, user.email].some((v) => v && caselessKey(v) === key)) {
    problems.push('must not be the user name or email');
  }
  if (problems.length > 0) {
    throw new DomainError('validation_error', `the password does not meet the policy: ${problems.join(', ')}`, {
      code: 'weak_password',
      errors: problems.map((message) => ({ path, message })),
    });
  }
}
