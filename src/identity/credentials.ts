/** Who a token is about: the account (tenant) and the kind of caller acting in it. */
export interface TokenSubject {
  sub: string;
  tenant: string;
  role: 'client' | 'team_member';
}

/**
 * The dev identity provider's port for checking credentials. The composition root
 * implements it against the accounts read model; it owns hashing, so a wrong or unknown
 * name must cost about as much time as a right one.
 */
export interface CredentialVerifier {
  /** client_credentials grant: client_id = account id, client_secret. null when wrong. */
  verifyClient(clientId: string, clientSecret: string): Promise<TokenSubject | null>;
  /** password grant: username + password of an account user (role client) or a team member (role team_member). null when wrong. */
  verifyPassword(username: string, password: string): Promise<TokenSubject | null>;
  /**
   * refresh_token grant: whether a password sign-in made at `signedInAtMs` still stands: its
   * subject exists (the account; the team member, not removed since) and no sign-out-all password
   * change came after it. Read as the store holds it now, not from a process's old copy.
   */
  signInStands(subject: TokenSubject, signedInAtMs: number): Promise<boolean>;
}
