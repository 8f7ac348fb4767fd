/**
 * A text (an error message) with the password of any URL in it hidden: `scheme://user:secret@host`
 * becomes `scheme://user:***@host`. Drivers put their connection string in some errors, and an
 * answer that shows them (the unauthenticated `/readyz`) must not carry the store's password.
 */
export function withoutCredentials(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/[^\s/:@]*):[^\s/@]*@/gi, '$1:***@');
}
