import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, newEvent, passwordToken, request, startTestService, type Client, type TestService } from '../support/service.js';

/**
 * The interface spec read line by line as an integrator reads it, third pass: the places where
 * the service still differed from the spec and was mended.
 */

let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService();
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
});
afterAll(() => service.close());

const int32Max = 2_147_483_647;

describe('Resources and their fields: the OpenAPI document types as int32 what the spec types integer (int32)', () => {
  it('Guest plusOnes and admittedPlusOnes (the Guest request, which GuestCreate extends, and the answer), and the team member event statistics counts', async () => {
    const schemas = (await request(service.url, 'GET', '/openapi.json')).body.components.schemas;
    const fields: Array<[string, Record<string, { format?: string }>]> = [
      ['Guest.plusOnes', schemas.Guest.properties],
      ['Guest.admittedPlusOnes', schemas.Guest.properties],
      ['GuestResponse.plusOnes', schemas.GuestResponse.properties],
      ['GuestResponse.admittedPlusOnes', schemas.GuestResponse.properties],
      ['TeamMemberEventStats.checkedIn', schemas.TeamMemberEventStats.items.properties],
      ['TeamMemberEventStats.checkedOut', schemas.TeamMemberEventStats.items.properties],
      ['TeamMemberEventStats.checkedInActivity.admittedCount', schemas.TeamMemberEventStats.items.properties.checkedInActivity.items.properties],
    ];
    for (const [name, properties] of fields) {
      const field = name.split('.').at(-1)!;
      expect(properties[field]?.format, name).toBe('int32');
    }
  });
});

describe('Team member event statistics: checkedIn, checkedOut and admittedCount are integer (int32)', () => {
  it('a group of int32-max plus ones checked in keeps every count within int32 (saturated, not overflowing)', async () => {
    const eventId = await newEvent(alice);
    const userName = `pin1-door-int32-${Date.now()}`;
    const password = 'north gate scanner 7';
    expect((await alice.call('POST', '/checkin/v1/api/teammember', { userName, password, email: 'door@example.com' })).status).toBe(200);
    const door = { authorization: `Bearer ${await passwordToken(service.url, userName, password)}` };
    for (const firstName of ['Ada', 'Grace']) {
      const guest = await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName, isGroup: true, plusOnes: int32Max });
      const scan = await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { guestId: guest.body.id }, door);
      expect(scan.body.result).toBe('admitted');
      expect((await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkout`, { guestId: guest.body.id }, door)).body.result).toBe('discharged');
    }
    const stats = await alice.call('GET', `/checkin/v1/api/team/event/${eventId}`);
    expect(stats.status).toBe(200);
    const member = stats.body.find((s: { username: string }) => s.username === userName);
    expect(member).toMatchObject({ checkedIn: int32Max, checkedOut: int32Max, checkedInActivity: [{ admittedCount: int32Max }] });
  });
});
