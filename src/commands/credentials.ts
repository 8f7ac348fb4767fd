import type { CredentialVerifier, TokenSubject } from '../identity/credentials.js';
import { teamMemberIdOf, type AccountDoc, type TeamMemberDoc, type TeamMemberRemovalDoc } from '../projections/accounts.js';
import { exactKey } from '../shared/ids.js';
import { dummyPasswordHash, sameSecret, verifyPassword } from '../shared/secrets.js';
import { caselessKey } from '../shared/text-key.js';
import type { Services } from './services.js';

/** Accounts sharing one email that a sign-in by that email tries (emails are not reserved; user names are). */
const MAX_ACCOUNTS_PER_EMAIL = 10;

const clientSubject = (account: AccountDoc): TokenSubject => ({ sub: account._id, tenant: account._id, role: 'client' });

/** Checks the dev identity provider's grants against the accounts and team_members read models. */
export function accountCredentials(services: Services): CredentialVerifier {
  const accounts = services.readStore.collection<AccountDoc>('accounts');
  const members = services.readStore.collection<TeamMemberDoc>('team_members');
  const removals = services.readStore.collection<TeamMemberRemovalDoc>('team_member_removals');
  return {
    async verifyClient(clientId, clientSecret) {
      const account = await accounts.get(clientId.toLowerCase());
      if (!account || !sameSecret(clientSecret, account.clientSecretHash)) return null;
      return clientSubject(account);
    },
    async verifyPassword(username, password) {
      // As the read models key them: in any case and either Unicode form (docs/identifiers.md, Equivalent text).
      const key = caselessKey(username.trim());
      // A user name first (an account's, then a team member's: both reserved service-wide), then
      // the accounts holding it as their email. Emails are not reserved, and a user name may be
      // anything, so either kind can be copied: whoever holds the name, the account or door account
      // whose password matches signs in, and a copy shadows no one's sign-in.
      const account = await accounts.findOne({ userNameLower: key });
      const member = account ? null : await members.findOne({ userNameLower: key });
      if (account && (await verifyPassword(password, account.passwordHash))) return clientSubject(account);
      if (member && (await verifyPassword(password, member.passwordHash))) {
        return { sub: teamMemberIdOf(member), tenant: member.clientId, role: 'team_member' };
      }
      const byEmail = (await accounts.find({ emailLower: key }, { limit: MAX_ACCOUNTS_PER_EMAIL })).items.filter((a) => a._id !== account?._id);
      if (byEmail.length === 0) {
        // Hash even when nobody has this name, so the answer takes as long either way.
        if (!account && !member) await verifyPassword(password, dummyPasswordHash);
        return null;
      }
      const matching: AccountDoc[] = [];
      for (const candidate of byEmail) if (await verifyPassword(password, candidate.passwordHash)) matching.push(candidate);
      // Two accounts with this email and this password: whose sign-in it is cannot be told.
      return matching.length === 1 ? clientSubject(matching[0]!) : null;
    },
    async signInStands(subject, signedInAtMs) {
      // swap(id, null, null) changes nothing and answers the document as stored: an api process
      // beside the projecting one on an embedded read store holds an old copy in memory.
      const account = (await accounts.swap(subject.tenant, null, null)).current;
      if (!account) return false;
      if (subject.role === 'client') {
        // As authentication does (src/http/auth.ts): a sign-out-all password change ends the account user's sign-ins made before it.
        return subject.sub === account._id && !(account.sessionsValidAfter && signedInAtMs < Date.parse(account.sessionsValidAfter));
      }
      const id = exactKey(subject.tenant, subject.sub);
      const removal = (await removals.swap(id, null, null)).current;
      if (removal && signedInAtMs < Date.parse(removal.removedAt)) return false;
      return (await members.swap(id, null, null)).current !== null;
    },
  };
}
