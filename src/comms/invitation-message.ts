import type { MailMessage } from '../adapters/mailer/port.js';
import { headerText, renderTemplate, type MergeValues } from './merge-tokens.js';
import { codeImages, codeTokensIn } from './code-images.js';
import { ianaZone } from '../shared/time-zones.js';
import { asciiEmailAddress } from '../domain/email-address.js';

/** The parts an invitation email is made of, as the read models hold them. */
export interface InvitationParts {
  attendeeInvitationId: string;
  clientId: string;
  guest: {
    /** The guest id (GUID) as the API shows it. */
    id: string;
    email: string;
    firstName?: string;
    otherNames?: string;
    lastName?: string;
    barcode?: string;
    /** The signed ticket the service issued (src/tickets), for a guest without a barcode. */
    ticketCode?: string;
    customId?: string;
    additionalInfo?: string;
    plusOnes?: number;
    tags?: string;
    validFrom?: string;
    validTo?: string;
  };
  template: { subject?: string; html: string; fromAddress?: string; fromName?: string; replyTo?: string };
  event: { title: string; startTime: string; endTime: string; timeZoneId?: string };
  /** The sending account: its company name, and its time zone (User.timeZoneId) for events without one. */
  account: { companyName?: string; timeZoneId?: string };
}

/** Where sends come from when the template names no sender (INVITES_SENDING_ADDRESS, INVITES_SENDER_NAME). */
export interface Sender {
  address: string;
  name?: string;
}

/**
 * The email for one invitation: the template rendered with the guest's and the event's values.
 * `{{qrCode}}` and `{{barcodeImage}}` become inline PNG attachments the html names by `cid:`.
 */
export async function invitationMessage(parts: InvitationParts, sender: Sender): Promise<MailMessage> {
  const { guest, template, account } = parts;
  const values = mergeValuesOf(parts);
  // An empty barcode is no code: a guest with one was issued a signed ticket (docs/tickets.md).
  const images = await codeImages(guest.barcode || guest.ticketCode, codeTokensIn(template.html), `${parts.attendeeInvitationId}@checkin`);
  const rendered = renderTemplate({ subject: template.subject, html: template.html }, values, images);
  // A template's fromName is any string; one of white space only names no one, so the default applies.
  // Display names are header text, like the subject: a template's fromName or a guest's name with a line
  // break (a pasted, multi-line CSV cell) is one line, not a folded or broken header.
  const fromName = headerText((headerText(template.fromName ?? '') || undefined) ?? sender.name ?? account.companyName ?? '');
  const toName = headerText(String(values.fullName ?? ''));
  return {
    messageKey: parts.attendeeInvitationId,
    // An internationalized domain goes out in its ASCII form (ada@xn--bcher-kva.de): SendGrid and
    // SMTP without SMTPUTF8 take only ASCII addresses (docs/invitations.md, Internationalized addresses).
    from: { email: asciiEmailAddress(template.fromAddress ?? sender.address), ...(fromName ? { name: fromName } : {}) },
    to: { email: asciiEmailAddress(guest.email), ...(toName ? { name: toName } : {}) },
    ...(template.replyTo ? { replyTo: { email: asciiEmailAddress(template.replyTo) } } : {}),
    subject: rendered.subject,
    html: rendered.html,
    text: rendered.text,
    ...(images.length > 0
      ? { attachments: images.map((i) => ({ filename: i.filename, contentType: i.contentType, content: i.content, contentId: i.cid })) }
      : {}),
    // Only what the provider's event reports need to name the invitation (its client follows from it):
    // no client or guest id travels with the email (docs/invitations.md, What the recipient sees).
    trackingArgs: { attendeeInvitationId: parts.attendeeInvitationId },
    // A Reply-To is a mailbox the sender reads: SMTP sends offer it for unsubscribing (List-Unsubscribe).
    ...(template.replyTo ? { unsubscribeAddress: asciiEmailAddress(template.replyTo) } : {}),
  };
}

export function mergeValuesOf(parts: InvitationParts): MergeValues {
  const { guest, event } = parts;
  // The event's zone, else the account's, else UTC; a timeZoneId that names no zone is skipped (docs/identifiers.md, "Time zones").
  const zone = [event.timeZoneId, parts.account.timeZoneId].map((name) => (name ? ianaZone(name) : undefined)).find(Boolean) ?? 'UTC';
  const fullName = [guest.firstName, guest.otherNames, guest.lastName].filter((n) => n && n.trim()).join(' ');
  return {
    firstName: guest.firstName,
    otherNames: guest.otherNames,
    lastName: guest.lastName,
    fullName: fullName || undefined,
    email: guest.email,
    barcode: guest.barcode,
    customId: guest.customId,
    additionalInfo: guest.additionalInfo,
    plusOnes: guest.plusOnes ?? 0,
    tags: guest.tags,
    validFrom: guest.validFrom && formatTime(guest.validFrom, zone),
    validTo: guest.validTo && formatTime(guest.validTo, zone),
    eventTitle: event.title,
    eventStart: formatTime(event.startTime, zone),
    eventEnd: formatTime(event.endTime, zone),
    eventTimeZone: zone,
    attendeeId: guest.id,
    attendeeInvitationId: parts.attendeeInvitationId,
    companyName: parts.account.companyName,
  };
}

/** Formatters per time zone: building one costs ~100 µs, using one ~2 µs (one per send adds up). */
const formatters = new Map<string, Intl.DateTimeFormat | null>();

function formatterFor(timeZone: string): Intl.DateTimeFormat | null {
  let formatter = formatters.get(timeZone);
  if (formatter === undefined) {
    try {
      formatter = new Intl.DateTimeFormat('en-GB', { dateStyle: 'full', timeStyle: 'short', hourCycle: 'h23', timeZone });
    } catch {
      formatter = null; // a time zone Intl does not know (e.g. a Windows name)
    }
    if (formatters.size >= 1000) formatters.clear();
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** A time as a reader expects it in an email: "Saturday 21 November 2026 at 19:00", on the event's clocks. */
export function formatTime(iso: string, timeZone = 'UTC'): string {
  const formatter = formatterFor(timeZone);
  // A zone Intl does not know: UTC, said so.
  return formatter ? formatter.format(new Date(iso)) : `${formatterFor('UTC')!.format(new Date(iso))} UTC`;
}
