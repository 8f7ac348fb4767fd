import { z } from 'zod';
import { registry } from '../openapi.js';
import { Email, Guid, nullAsAbsent, PlainId, RefId, retentionDays, TimeZoneId, timeZoneName, VisibleText, named } from './common.js';
import { isPathlessUserName, pathlessUserNameMessage } from '../../domain/account.js';
import { ex } from './example-values.js';

/** Spec: User and Team member fields typed string take any string, kept as given. */
const name = z.string();
/** An account's email (admin create) is where the operator reaches the client: an address. */
const email = Email;
/** Spec: User.email and TeamMember.email are strings (never used to send mail): any string. */
const anyEmail = z.string().openapi({ example: 'organizer@example.com' });

/**
 * The password policy (src/domain/password-policy.ts) as the document states it: the domain
 * checks it and answers 400 `weak_password`, naming each rule that failed.
 */
const password = z
  .string()
  .min(1)
  .max(1000)
  .openapi({
    minLength: 10,
    maxLength: 200,
    not: { pattern: '^(.)\\1*$' },
    description: 'Password policy: 10 to 200 characters, not one repeated character, not the user name or email (else 400 `weak_password`).',
    example: 'correct horse battery staple',
  });
const userExample = {
  id: ex.clientId,
  firstName: 'Olive',
  lastName: 'Organizer',
  userName: 'organizer@example.com',
  email: 'organizer@example.com',
  timeZoneId: 'Europe/Amsterdam',
  companyName: 'Gala Events Ltd',
  customData: '{"plan":"pro"}',
};

/** Spec: User, in its order, without `password`: no password or hash is ever answered (docs/api.md, Team members). */
export const userFields = ['id', 'firstName', 'lastName', 'userName', 'email', 'timeZoneId', 'companyName', 'customData'] as const;
/** Every field of the spec's object is answered; a text not set is null (docs/api.md, Answers). */
const unsetIsNull = (description?: string) =>
  z.string().nullable().openapi({ description: `${description ? `${description}; ` : ''}null when not set` });

export const UserResponse = registry.register(
  'User',
  z.object({
    id: z.string(),
    firstName: unsetIsNull(),
    lastName: unsetIsNull(),
    userName: z.string(),
    email: z.string(),
    timeZoneId: unsetIsNull(),
    companyName: unsetIsNull(),
    customData: unsetIsNull(),
    retentionDays: z.number().int().optional().openapi({ description: "The client's retention default for events without their own (absent: none)" }),
  }).openapi({
    description: 'The spec’s User object: every field but `password`, which is never answered (change it with PUT /users/v1/api/user/changepassword).',
    example: userExample,
  }),
);

/** A new user name (a client's or a team member's): visible text, and not `.` or `..` (isPathlessUserName). */
const UserName = (max?: number) =>
  VisibleText(max).refine((v) => !isPathlessUserName(v), { message: pathlessUserNameMessage }).openapi({ not: { enum: ['.', '..'] } });

export const UserEmailQuery = z.object({ email: VisibleText().openapi({ description: 'The calling user’s email (compared without case)' }) });

export const UserUpdateBody = registry.register(
  'UserUpdate',
  z.object({
    id: RefId,
    // null is "not given", as a field left out: a User read back answers its unset fields as null,
    // and .NET and Java serializers write null for every property left unset (docs/api.md, Bodies).
    firstName: nullAsAbsent(name),
    lastName: nullAsAbsent(name),
    // `.` and `..` are refused by updateUser only as a new name: an account that holds one from
    // before they were refused sends its read-back answer unchanged (docs/api.md, Bodies).
    userName: nullAsAbsent(VisibleText().openapi({
      not: { enum: ['.', '..'] },
      description: 'Not `.` or `..` (400), unless it is the name the account already has (an account named so before they were refused)',
    })),
    // Not empty: GET /users/v1/api/users/email finds the user by it.
    email: nullAsAbsent(anyEmail.min(1)),
    timeZoneId: nullAsAbsent(timeZoneName()),
    companyName: nullAsAbsent(name),
    customData: nullAsAbsent(z.string()),
    retentionDays: retentionDays(
      "Default for the client's events that have no `retentionDays` of their own: erase their guests' personal data this many days after the event's endTime (0: right after it); `\"\"` removes the default; `null` or absent keeps it (docs/personal-data.md)",
    ),
    // Not changed here (changepassword checks the old password); a password sent would otherwise
    // be acknowledged and dropped. "" is a blank form field: not given.
    password: nullAsAbsent(
      z.string().max(0, { error: 'is not changed by PUT user: use PUT /users/v1/api/user/changepassword (with oldPassword); send null or leave it out here' }),
    ).openapi({ description: 'Not changed here: absent, null or "" only (anything else is 400); change a password with PUT /users/v1/api/user/changepassword' }),
  }).openapi({
    description: 'Changes the fields sent and keeps the others; a field that is null is not sent (send "" to empty a text). `id` is the caller’s own id (another is 404).',
    example: { id: ex.clientId, companyName: 'Gala Events Ltd', timeZoneId: 'Europe/Amsterdam' },
  }),
);

export const PasswordChangeBody = registry.register(
  'PasswordChangeRequest',
  z.object({
    id: RefId,
    oldPassword: z.string().min(1).max(1000).openapi({ description: 'The current password (a wrong one is 400 `invalid_old_password`)' }),
    newPassword: password.openapi({ description: 'Password policy, and different from the old password' }),
    signOutAllSessions: nullAsAbsent(z.boolean()).openapi({ description: 'Refuse every password sign-in (dashboard, mobile app) made before the change; client_credentials tokens stay (absent, null or false: other sessions stay)' }),
  }).openapi({
    example: { id: ex.clientId, oldPassword: 'correct horse battery staple', newPassword: 'a new and longer passphrase', signOutAllSessions: true },
  }),
);

export const TeamMemberBody = registry.register(
  'TeamMember',
  z.object({
    userName: UserName().openapi({ description: 'Unique across the service, case-insensitively (a taken one is 409)' }),
    password,
    // Required, and any string: "" too (nothing looks a team member up by email).
    email: anyEmail.openapi({ example: 'door3@example.com' }),
    id: nullAsAbsent(PlainId).openapi({ type: ['string', 'null'], description: 'Team member id, any string of 1-128 characters; generated when absent or null' }),
    firstName: nullAsAbsent(name),
    lastName: nullAsAbsent(name),
    canForce: nullAsAbsent(z.boolean())
      .openapi({ description: 'May this team member force a scan past a block or validity window (default false)' }),
  }).openapi({
    example: { userName: 'door-three', password: 'north gate scanner 7', email: 'door3@example.com', firstName: 'Dora', lastName: 'Door', canForce: false },
  }),
);

/** Spec: Team member, in its order, without `password` (docs/api.md, Team members). */
export const teamMemberFields = ['userName', 'email', 'id', 'firstName', 'lastName'] as const;

export const TeamMemberResponse = registry.register(
  'TeamMemberResponse',
  z.object({
    userName: z.string(),
    email: z.string(),
    id: z.string(),
    firstName: unsetIsNull(),
    lastName: unsetIsNull(),
    canForce: z.boolean(),
  }).openapi({
    description: 'The spec’s Team member object: every field but `password`, which is stored only as a hash and never answered.',
    example: { userName: 'door-three', email: 'door3@example.com', id: ex.teamMemberId, firstName: 'Dora', lastName: 'Door', canForce: false },
  }),
);

export const UsernameParams = z.object({
  username: z.string().min(1).openapi({ description: 'A team member’s user name, or the caller’s own user name or email for all of its team members' }),
});

export const AccountCreateBody = registry.register(
  'AdminAccountCreate',
  z.object({
    email,
    password,
    userName: UserName(200).optional(),
    firstName: name.optional(),
    lastName: name.optional(),
    companyName: name.optional(),
    timeZoneId: TimeZoneId.optional(),
    commsApiEnabled: z.boolean().optional(),
    senderTrusted: z.boolean().optional(),
  }).openapi({
    example: {
      email: 'organizer@example.com',
      password: 'correct horse battery staple',
      companyName: 'Gala Events Ltd',
      timeZoneId: 'Europe/Amsterdam',
      commsApiEnabled: true,
      senderTrusted: true,
    },
  }),
);

export const AccountAccessBody = registry.register(
  'AdminAccountAccess',
  z
    .object({ commsApiEnabled: z.boolean().optional(), senderTrusted: z.boolean().optional() })
    .refine((b) => b.commsApiEnabled !== undefined || b.senderTrusted !== undefined, {
      message: 'name commsApiEnabled, senderTrusted or both',
      path: ['commsApiEnabled'],
    })
    .openapi({
      anyOf: [named('commsApiEnabled', { type: 'boolean' }), named('senderTrusted', { type: 'boolean' })],
      example: { commsApiEnabled: true, senderTrusted: true },
    }),
);

const accountExample = { ...userExample, commsApiEnabled: true, senderTrusted: true };
export const AccountResponse = registry.register(
  'AdminAccount',
  UserResponse.extend({ commsApiEnabled: z.boolean(), senderTrusted: z.boolean() }).openapi({ example: accountExample }),
);

export const AccountCreatedResponse = registry.register(
  'AdminAccountCreated',
  AccountResponse.extend({
    clientSecret: z.string().openapi({ description: 'Shown once' }),
    subscriptionKey: z.string().openapi({ description: 'Shown once' }),
    subscriptionKeyId: z.string(),
  }).openapi({
    example: {
      ...accountExample,
      clientSecret: 'cs_2YF0mS1o7Qx0bq3tq0Yw6c1m7p9Qm8bV7xQ2fZ1Jk4E',
      subscriptionKey: 'sk_Hh8c2Vq7P0yN3mB6rT1wZ4xL9sD5fG2jK7pQ0aE3uI',
      subscriptionKeyId: ex.subscriptionKeyId,
    },
  }),
);

export const SubscriptionKeyResponse = registry.register(
  'SubscriptionKey',
  z
    .object({ subscriptionKeyId: z.string(), subscriptionKey: z.string().openapi({ description: 'Shown once' }) })
    .openapi({ example: { subscriptionKeyId: ex.subscriptionKeyId, subscriptionKey: 'sk_Hh8c2Vq7P0yN3mB6rT1wZ4xL9sD5fG2jK7pQ0aE3uI' } }),
);

export const AccountIdParams = z.object({ id: RefId });
/** A team member's id: a plain id, kept and compared as sent (docs/identifiers.md, Case). */
export const TeamMemberIdParams = z.object({ id: PlainId });
export const KeyParams = z.object({ id: RefId, keyId: Guid.openapi({ description: 'The subscription key’s id (`subscriptionKeyId`)' }) });
