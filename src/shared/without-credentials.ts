/**
 * A text (an error message) with the password of any URL in it hidden: `scheme://user:secret@host`
 * becomes `scheme://user:***@host`, and the value of an option that holds a secret becomes `***`.
 * Drivers put their connection string in some errors, and an answer that shows them (the
 * unauthenticated `/readyz`) must not carry the store's password.
 */
export function withoutCredentials(text: string): string {
  return text
    .replace(/([a-z][a-z0-9+.-]*:\/\/[^\s/:@]*):[^\s/@]*@/gi, '$1:***@')
    .replace(secretOptions, '$1***');
}

/**
 * Connection-string options that carry a secret (MongoDB's `tlsCertificateKeyFilePassword`,
 * `authMechanismProperties` with an AWS session token, any `password`/`secret`/`token` option):
 * their value, up to the next `&` or whitespace, is hidden too.
 */
const secretOptions = /([?&](?:tlsCertificateKeyFilePassword|sslPass|authMechanismProperties|[a-z_]*(?:password|secret|token)[a-z_]*)=)[^&\s]*/gi;
