import { accountDecider, accountStream, isPathlessUserName, pathlessUserNameMessage, type AccountCommand, type AccountProfile } from '../domain/account.js';
import { DomainError } from '../domain/decider.js';
import { checkPasswordPolicy } from '../domain/password-policy.js';
import { reservationDecider, reservationKey, usernameStream, type ReservationCommand } from '../domain/reservation.js';
import { teamMemberIdOf, type AccountDoc, type TeamMemberDoc } from '../projections/accounts.js';
import { exactKey, newId } from '../shared/ids.js';
import { hashPassword, newSecret, sha256, verifyPassword } from '../shared/secrets.js';
import { caselessKey } from '../shared/text-key.js';
import { handleCommand, handleCommands, lastPosition, type BatchItem, type CommandContext } from './handle-command.js';
import type { Services } from './services.js';

/** The spec's User object as responses show it: never a password or any hash. */
export interface UserView extends AccountProfile {
  id: string;
  commsApiEnabled: boolean;
  senderTrusted: boolean;
}

export const toUserView = (doc: AccountDoc): UserView => ({
  id: doc._id,
  email: doc.email,
  userName: doc.userName,
  ...(doc.firstName !== undefined ? { firstName: doc.firstName } : {}),
  ...(doc.lastName !== undefined ? { lastName: doc.lastName } : {}),
  ...(doc.companyName !== undefined ? { companyName: doc.companyName } : {}),
  ...(doc.timeZoneId !== undefined ? { timeZoneId: doc.timeZoneId } : {}),
  ...(doc.customData !== undefined ? { customData: doc.customData } : {}),
  ...(typeof doc.retentionDays === 'number' ? { retentionDays: doc.retentionDays } : {}),
  commsApiEnabled: doc.commsApiEnabled,
  senderTrusted: doc.senderTrusted,
});

const accounts = (services: Services) => services.readStore.collection<AccountDoc>('accounts');

export interface RegisterAccountInput extends Partial<AccountProfile> {
  email: string;
  password: string;
  commsApiEnabled?: boolean;
  senderTrusted?: boolean;
}

export interface RegisteredAccount extends UserView {
  /** Shown once: the client secret for the client_credentials grant. */
  clientSecret: string;
  /** Shown once: the first subscription key. */
  subscriptionKey: string;
  subscriptionKeyId: string;
}

/** Admin: open an account. The user name (default: the email) is reserved service-wide first. */
export async function registerAccount(
  services: Services,
  context: CommandContext,
  input: RegisterAccountInput,
): Promise<RegisteredAccount> {
  const clientId = newId();
  const profile: AccountProfile = { ...input, userName: input.userName ?? input.email };
  delete (profile as Partial<RegisterAccountInput>).password;
  delete (profile as Partial<RegisterAccountInput>).commsApiEnabled;
  delete (profile as Partial<RegisterAccountInput>).senderTrusted;
  checkPasswordPolicy(input.password, profile);
  const clientSecret = newSecret('cs');
  const subscriptionKey = newSecret('sk');
  const subscriptionKeyId = newId();
  const register: BatchItem = {
    streamName: accountStream(clientId),
    decider: accountDecider,
    command: {
      type: 'RegisterAccount',
      clientId,
      profile,
      passwordHash: await hashPassword(input.password),
      clientSecretHash: sha256(clientSecret),
      subscriptionKey: { keyId: subscriptionKeyId, keyHash: sha256(subscriptionKey) },
      commsApiEnabled: input.commsApiEnabled ?? false,
      senderTrusted: input.senderTrusted ?? false,
    },
  };
  await checkUsernameFree(services, profile.userName, clientId);
  // The user name is claimed in the same batch, before the account (src/commands/batch-intents.ts).
  const results = await withUsername(profile.userName, () =>
    handleCommands(services.eventStore, [usernameClaim(profile.userName, 'account', clientId, 1), register], { ...context, tenantId: clientId }),
  );
  await services.readYourWrites(lastPosition(results));
  return {
    id: clientId,
    ...profile,
    commsApiEnabled: input.commsApiEnabled ?? false,
    senderTrusted: input.senderTrusted ?? false,
    clientSecret,
    subscriptionKey,
    subscriptionKeyId,
  };
}

/** A user name is unique service-wide: a claim on its reservation stream, given back if the batch aborts. */
export function usernameClaim(userName: string, ownerType: 'account' | 'team_member', ownerId: string, partOf: number): BatchItem {
  return {
    streamName: usernameStream(userName),
    decider: reservationDecider,
    command: { type: 'Reserve', key: userName, ownerType, ownerId } satisfies ReservationCommand,
    stage: 'claim',
    partOf,
    undo: { type: 'Release', key: userName, ownerId } satisfies ReservationCommand,
  };
}

/**
 * A user name that another account or team member holds in the read models (keyed by caselessKey
 * since user names are one in either Unicode form) is taken, whatever its reservation stream says:
 * a name reserved before then has its reservation under the earlier key (the name lower-cased as
 * sent, decomposed say), which a claim of the other form does not meet (docs/operations.md, Upgrades).
 * `ownerId` is the claim's owner (the client id, or the client and team member id scoped).
 */
export async function checkUsernameFree(services: Services, userName: string, ownerId: string): Promise<void> {
  const key = caselessKey(userName.trim());
  const account = await accounts(services).findOne({ userNameLower: key });
  const member = await services.readStore.collection<TeamMemberDoc>('team_members').findOne({ userNameLower: key });
  if ((account && account._id !== ownerId) || (member && exactKey(member.clientId, teamMemberIdOf(member)) !== ownerId)) {
    throw new DomainError('conflict', `the user name ${userName} is taken`, { code: 'username_taken' });
  }
}

/** Runs a batch with a user name claim; a taken name is the spec's 409 username_taken. */
export async function withUsername<T>(userName: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof DomainError && error.code === 'conflict' && error.details?.code === 'already_taken') {
      throw new DomainError('conflict', `the user name ${userName} is taken`, { code: 'username_taken' });
    }
    throw error;
  }
}

/**
 * The caller's own user, when `email` is theirs; anything else is not found. A plus address
 * (`ops+checkin@…`) put in the query without percent-encoding arrives with a space for its `+`:
 * that is read as the `+` too. Only the caller's own email is compared, so it names no one else.
 */
export async function getUserByEmail(services: Services, clientId: string, email: string): Promise<UserView> {
  const doc = await accounts(services).get(clientId);
  // In any case and either Unicode form (docs/identifiers.md, Equivalent text).
  const wanted = caselessKey(email.trim());
  // User.email is any string, kept as given: white space around it (a CRM cell) is not part of the address asked for.
  const own = doc ? caselessKey(doc.email.trim()) : undefined;
  if (!doc || (own !== wanted && own !== wanted.replaceAll(' ', '+'))) throw new DomainError('not_found', 'user not found');
  return toUserView(doc);
}

export async function getAccount(services: Services, clientId: string): Promise<AccountDoc> {
  const doc = await accounts(services).get(clientId);
  if (!doc) throw new DomainError('not_found', 'account not found');
  return doc;
}

/** PUT user: a client changes only itself. A new user name is reserved before the old one is released. */
export async function updateUser(
  services: Services,
  context: CommandContext,
  input: Partial<AccountProfile> & { id: string },
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await updateUserOnce(services, context, input);
    } catch (error) {
      // Renamed by a concurrent request after this one read the name: nothing was applied; plan it again.
      if (error instanceof DomainError && error.details?.code === 'account_changed' && attempt < 5) continue;
      throw error;
    }
  }
}

async function updateUserOnce(services: Services, context: CommandContext, input: Partial<AccountProfile> & { id: string }): Promise<void> {
  const { id, ...changes } = input;
  if (id.toLowerCase() !== context.tenantId.toLowerCase()) throw new DomainError('not_found', 'user not found');
  await getAccount(services, context.tenantId);
  // The user name as the account's stream has it: the read model may not show a rename yet.
  let state = accountDecider.initialState();
  for (const event of await services.eventStore.readStream(accountStream(context.tenantId))) state = accountDecider.evolve(state, event as never);
  if (state.status !== 'registered') throw new DomainError('not_found', 'user not found');
  const current = state.profile;
  // Renamed when the reservation changes: the same name in another case or Unicode form keeps it (claiming and then releasing one key would free it).
  const renamed = changes.userName !== undefined && reservationKey(changes.userName) !== reservationKey(current.userName);
  const update: BatchItem = {
    streamName: accountStream(context.tenantId),
    decider: accountDecider,
    command: {
      type: 'UpdateProfile',
      clientId: context.tenantId,
      changes,
      ...(changes.userName !== undefined ? { plannedOn: reservationKey(current.userName) } : {}),
    } satisfies AccountCommand,
  };
  // Only a new name: an account named `.` or `..` before they were refused keeps its own.
  if (renamed && isPathlessUserName(changes.userName!)) {
    throw new DomainError('validation_error', `userName ${pathlessUserNameMessage}`, { errors: [{ path: 'userName', message: pathlessUserNameMessage }] });
  }
  if (renamed) await checkUsernameFree(services, changes.userName!, context.tenantId);
  // A new user name is claimed before the profile changes; the old one is released after.
  const items: BatchItem[] = renamed
    ? [
        usernameClaim(changes.userName!, 'account', context.tenantId, 1),
        update,
        {
          streamName: usernameStream(current.userName),
          decider: reservationDecider,
          command: { type: 'Release', key: current.userName, ownerId: context.tenantId } satisfies ReservationCommand,
          stage: 'release',
          partOf: 1,
        },
      ]
    : [update];
  const results = await withUsername(changes.userName ?? current.userName, () => handleCommands(services.eventStore, items, context));
  await services.readYourWrites(lastPosition(results));
}

export async function changePassword(
  services: Services,
  context: CommandContext,
  input: { id: string; oldPassword: string; newPassword: string; signOutAllSessions?: boolean },
): Promise<void> {
  if (input.id.toLowerCase() !== context.tenantId.toLowerCase()) throw new DomainError('not_found', 'user not found');
  const current = await getAccount(services, context.tenantId);
  const oldPasswordMatches = await verifyPassword(input.oldPassword, current.passwordHash);
  if (oldPasswordMatches) {
    checkPasswordPolicy(input.newPassword, current, 'newPassword');
    if (input.newPassword === input.oldPassword) {
      throw new DomainError('validation_error', 'the new password must differ from the old one', {
        code: 'weak_password',
        errors: [{ path: 'newPassword', message: 'must differ from oldPassword' }],
      });
    }
  }
  const result = await handleCommand(services.eventStore, accountDecider, accountStream(context.tenantId), {
    type: 'ChangePassword',
    clientId: context.tenantId,
    oldPasswordMatches,
    newPasswordHash: oldPasswordMatches ? await hashPassword(input.newPassword) : '',
    signOutAllSessions: input.signOutAllSessions ?? false,
    at: context.now.toISOString(),
  }, context);
  await services.readYourWrites(result.position);
}

/** Admin: switch comms API access and sender trust. */
export async function setAccountAccess(
  services: Services,
  context: CommandContext,
  clientId: string,
  access: { commsApiEnabled?: boolean; senderTrusted?: boolean },
): Promise<UserView> {
  const result = await handleCommand(services.eventStore, accountDecider, accountStream(clientId), {
    type: 'SetAccess',
    clientId,
    ...access,
  }, { ...context, tenantId: clientId });
  await services.readYourWrites(result.position);
  if (result.state.status !== 'registered') throw new DomainError('not_found', 'account not found');
  const { profile, commsApiEnabled, senderTrusted } = result.state;
  return { id: clientId, ...profile, commsApiEnabled, senderTrusted };
}

/** Admin: a new subscription key, shown once. */
export async function issueSubscriptionKey(
  services: Services,
  context: CommandContext,
  clientId: string,
): Promise<{ subscriptionKeyId: string; subscriptionKey: string }> {
  const subscriptionKey = newSecret('sk');
  const keyId = newId();
  const result = await handleCommand(services.eventStore, accountDecider, accountStream(clientId), {
    type: 'IssueSubscriptionKey',
    clientId,
    keyId,
    keyHash: sha256(subscriptionKey),
  }, { ...context, tenantId: clientId });
  await services.readYourWrites(result.position);
  return { subscriptionKeyId: keyId, subscriptionKey };
}

export async function revokeSubscriptionKey(
  services: Services,
  context: CommandContext,
  clientId: string,
  keyId: string,
): Promise<void> {
  const result = await handleCommand(services.eventStore, accountDecider, accountStream(clientId), {
    type: 'RevokeSubscriptionKey',
    clientId,
    keyId,
  }, { ...context, tenantId: clientId });
  await services.readYourWrites(result.position);
}
