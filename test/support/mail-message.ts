import { randomUUID } from 'node:crypto';
import type { MailMessage } from '../../src/adapters/mailer/port.js';

/** A message as the send worker hands it to a mailer, with a fresh messageKey. */
export const mailMessage = (overrides: Partial<MailMessage> = {}): MailMessage => ({
  messageKey: randomUUID(),
  from: { email: 'events@example.com', name: 'Example Events' },
  to: { email: 'guest@example.org' },
  subject: 'Your invitation',
  html: '<p>Welcome</p>',
  ...overrides,
});
