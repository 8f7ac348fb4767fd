/**
 * The views analysts and auditors rely on, second sweep: admissions imported with a create (a
 * guest created with `admitted`, docs/guests.md) in the invitation funnel and the arrivals
 * timeline, against the event stats that count them and a projections rebuild.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, startTestService, type Client, type TestService } from '../support/service.js';
import { eventually } from '../webhooks/receiver.js';

let service: TestService;
let alice: Client;

beforeAll(async () => {
  service = await startTestService({ INVITES_SENDING_ADDRESS: 'invites@checkin.test' });
  alice = await createClient(service, { commsApiEnabled: true, senderTrusted: true });
});
afterAll(() => service.close());

const ok = (reply: { status: number; body: any }) => {
  if (reply.status >= 300) throw new Error(`${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body;
};

const settle = async () => service.services.readYourWrites(await service.platform.eventStore.headPosition());

async function gala(): Promise<string> {
  return ok(await alice.call('POST', '/checkin/v1/api/event', { title: 'Gala', startTime: '2026-11-01T18:00:00Z', endTime: '2026-11-01T23:00:00Z', timeZoneId: 'Europe/Berlin' })).id;
}

describe('an admission imported with a create', () => {
  it('counts as a check-in of the invitation funnel, as it does in the event stats', async () => {
    const eventId = await gala();
    const templateId = ok(await alice.call('POST', '/comms/v1/api/comms/template', { eventId, name: 'Invitation', subject: 'Hi', html: '<p>Hi</p>' })).id;
    // Ann came in through the door; Bo's admission was brought from the system used before (the import); Cy did not come.
    const ann = ok(await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ann', email: 'ann@example.com', commsTemplateId: templateId })).id;
    ok(await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Bo', email: 'bo@example.com', commsTemplateId: templateId, admitted: '2026-11-01T18:30:00Z', discharged: '2026-11-01T19:30:00Z' }));
    ok(await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Cy', email: 'cy@example.com', commsTemplateId: templateId }));
    ok(await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { guestId: ann }));
    await eventually(async () => {
      const items = ok(await alice.call('GET', `/comms/v1/api/comms/invitations?eventId=${eventId}`)).items as any[];
      return items.length === 3 && items.every((i) => i.status === 'sent') ? items : undefined;
    }, 60_000, 'invitations sent');
    await settle();

    const stats = ok(await alice.call('GET', `/checkin/v1/api/event/${eventId}/stats`));
    expect(stats).toMatchObject({ invited: 3, admitted: 2 });
    const funnel = ok(await alice.call('GET', `/comms/v1/api/comms/funnel?eventId=${eventId}`));
    expect(funnel.totals).toMatchObject({ invited: 3, sent: 3, checkedIn: 2 });
    expect(funnel.totals.rates.checkedIn).toBe(0.6667);
    expect(funnel.byTemplate[0]).toMatchObject({ templateId, checkedIn: 2 });

    // The read model a rebuild writes from the events answers the same.
    await service.runner!.rebuild(['funnel']);
    expect(ok(await alice.call('GET', `/comms/v1/api/comms/funnel?eventId=${eventId}`))).toEqual(funnel);
  });

  it('is inside on the arrivals timeline as in the event stats, so checking the guest out leaves nobody inside, not fewer than nobody', async () => {
    const eventId = await gala();
    // Bo was admitted with one of his two plus ones in the system used before.
    const bo = ok(await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Bo', plusOnes: 2, admitted: '2026-11-01T18:30:00Z', admittedPlusOnes: 1 })).id;
    const ann = ok(await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ann' })).id;
    ok(await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkin`, { guestId: ann, at: '2026-11-01T18:40:00Z' }));
    await settle();
    const timeline = () => alice.call('GET', `/checkin/v1/api/event/${eventId}/timeline?bucket=60`).then(ok);
    const stats = () => alice.call('GET', `/checkin/v1/api/event/${eventId}/stats`).then(ok);

    expect((await stats()).insideNow).toEqual({ guests: 2, people: 3 });
    let answer = await timeline();
    expect(answer.totals).toMatchObject({ admissions: 1, admitted: 1, importedAdmitted: 2, exits: 0, importedExits: 0, insideNow: 3 });
    expect(answer.buckets.at(-1).insideNow).toBe(3);

    ok(await alice.call('POST', `/checkin/v1/api/guests/${eventId}/checkout`, { guestId: bo, at: '2026-11-01T19:10:00Z' }));
    await settle();
    expect((await stats()).insideNow).toEqual({ guests: 1, people: 1 });
    answer = await timeline();
    expect(answer.totals).toMatchObject({ admitted: 1, importedAdmitted: 2, exits: 2, insideNow: 1 });
    expect(answer.buckets.map((b: any) => b.insideNow)).toEqual([3, 1]);
    expect(Math.min(...answer.buckets.map((b: any) => b.insideNow))).toBeGreaterThanOrEqual(0);

    // A guest imported as admitted and discharged came and went: in at one time, out at the other.
    ok(await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Cy', admitted: '2026-11-01T18:05:00Z', discharged: '2026-11-01T19:20:00Z' }));
    await settle();
    answer = await timeline();
    expect(answer.totals).toMatchObject({ importedAdmitted: 3, importedExits: 1, insideNow: 1 });
    expect(answer.buckets.map((b: any) => [b.importedAdmitted, b.importedExits, b.insideNow])).toEqual([[3, 0, 4], [0, 1, 1]]);
    expect((await stats()).insideNow.people).toBe(answer.totals.insideNow);

    await service.runner!.rebuild(['timeline']);
    expect(await timeline()).toEqual(answer);
  });
});

describe('the invitation funnel by template', () => {
  it('has a row for every template of the event, one not sent yet with zeros, also when asked for by itself', async () => {
    const eventId = await gala();
    const template = async (name: string) => ok(await alice.call('POST', '/comms/v1/api/comms/template', { eventId, name, subject: 'Hi', html: '<p>Hi</p>' })).id as string;
    const used = await template('Invitation');
    const unused = await template('Reminder');
    ok(await alice.call('POST', '/checkin/v1/api/guest', { eventId, firstName: 'Ann', email: 'ann@example.com', commsTemplateId: used }));
    await eventually(async () => {
      const items = ok(await alice.call('GET', `/comms/v1/api/comms/invitations?eventId=${eventId}`)).items as any[];
      return items.length === 1 && items[0].status === 'sent' ? items : undefined;
    }, 60_000, 'invitation sent');
    await settle();

    const funnel = ok(await alice.call('GET', `/comms/v1/api/comms/funnel?eventId=${eventId}`));
    const rowOf = (rows: any[], id: string) => rows.find((r) => r.templateId === id);
    expect(funnel.byTemplate).toHaveLength(2);
    expect(rowOf(funnel.byTemplate, used)).toMatchObject({ templateName: 'Invitation', invited: 1, sent: 1 });
    expect(rowOf(funnel.byTemplate, unused)).toMatchObject({ templateName: 'Reminder', invited: 0, sent: 0, checkedIn: 0, rates: { sent: null, checkedIn: null }, medianSendToArrivalSeconds: null });
    expect(funnel.totals).toMatchObject({ invited: 1, sent: 1 });

    const one = ok(await alice.call('GET', `/comms/v1/api/comms/funnel?templateId=${unused}`));
    expect(one).toMatchObject({ eventId, templateId: unused, totals: { invited: 0 } });
    expect(one.byTemplate).toEqual([rowOf(funnel.byTemplate, unused)]);
  });
});
