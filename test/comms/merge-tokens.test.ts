import { describe, expect, it } from 'vitest';
import {
  checkTemplate,
  defaultSubject,
  InvalidTemplateError,
  mergeTokens,
  plainText,
  renderTemplate,
} from '../../src/comms/merge-tokens.js';

const messages = (template: { subject?: string; html: string }) => checkTemplate(template).map((e) => `${e.path}: ${e.message}`);

describe('merge token list', () => {
  it('describes every token once, in one line', () => {
    const names = mergeTokens.map((t) => t.token);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(expect.arrayContaining(['firstName', 'fullName', 'eventTitle', 'attendeeInvitationId', 'companyName']));
    for (const { description } of mergeTokens) expect(description).toMatch(/^[^\n]{5,100}$/);
  });
});

describe('checking a template', () => {
  it('accepts plain tokens, raw tokens in html, comments and if/unless/else blocks over known tokens', () => {
    expect(
      checkTemplate({
        subject: 'Welcome {{firstName}} to {{eventTitle}}',
        html: '{{!-- note --}}<p>Hi {{fullName}} {{{additionalInfo}}}</p>{{#if plusOnes}}+{{plusOnes}}{{else if tags}}{{tags}}{{else}}alone{{/if}}{{#unless barcode}}no code{{/unless}}{{~email~}}',
      }),
    ).toEqual([]);
  });

  it('reports a syntax error with its line', () => {
    expect(messages({ html: '<p>\nHello {{firstName</p>' })).toEqual([expect.stringMatching(/^html: syntax error on line 2/)]);
    expect(messages({ html: '{{#if firstName}}\n{{/unless}}' })).toEqual([expect.stringMatching(/^html: syntax error on line 1/)]);
    expect(messages({ subject: '{{#if firstName}}x', html: '' })).toEqual([expect.stringMatching(/^subject: syntax error/)]);
  });

  it('names an unknown token and suggests the closest known one', () => {
    expect(messages({ html: '{{firstname}} {{first_name}} {{eventTitel}}' })).toEqual([
      'html: unknown merge token "firstname" (did you mean "firstName"?) (line 1)',
      'html: unknown merge token "first_name" (did you mean "firstName"?) (line 1)',
      'html: unknown merge token "eventTitel" (did you mean "eventTitle"?) (line 1)',
    ]);
    expect(messages({ subject: '{{shoeSize}}', html: '' })).toEqual(['subject: unknown merge token "shoeSize" (line 1)']);
  });

  it('refuses helpers, partials, decorators and blocks other than if/unless', () => {
    for (const html of [
      '{{lookup firstName "x"}}',
      '{{firstName key=1}}',
      '{{> header}}',
      '{{#> layout}}x{{/layout}}',
      '{{* decorate}}',
      '{{#each tags}}{{this}}{{/each}}',
      '{{#with firstName}}x{{/with}}',
      '{{#firstName}}x{{/firstName}}',
      '{{^firstName}}x{{/firstName}}',
      '{{#if firstName lastName}}x{{/if}}',
      '{{#if (lookup firstName)}}x{{/if}}',
      '{{log "x"}}',
      '{{"literal"}}',
    ]) {
      expect(checkTemplate({ html }), html).not.toEqual([]);
    }
  });

  it('refuses paths that are not a bare token name: this, ../, @root, nested', () => {
    for (const html of ['{{this}}', '{{this.firstName}}', '{{./firstName}}', '{{../firstName}}', '{{@root.firstName}}', '{{firstName.length}}', '{{#if this}}x{{/if}}']) {
      expect(checkTemplate({ html }), html).not.toEqual([]);
    }
  });

  it('refuses unknown tokens inside blocks and as block conditions', () => {
    expect(messages({ html: '{{#if vip}}{{nickName}}{{/if}}' })).toHaveLength(2);
  });

  it('allows raw {{{token}}} in html only', () => {
    expect(messages({ subject: '{{{firstName}}}', html: '{{{firstName}}}' })).toEqual([
      'subject: raw output {{{…}}} is only allowed in html (line 1)',
    ]);
  });
});

describe('rendering a template', () => {
  const template = { subject: 'Hello {{firstName}}', html: '<p>Hello {{firstName}}</p>' };

  it('escapes values in html and keeps them literal in the subject', () => {
    const rendered = renderTemplate(template, { firstName: '<b>Ann & "Bo"</b>' });
    expect(rendered.html).toBe('<p>Hello &lt;b&gt;Ann &amp; &quot;Bo&quot;&lt;/b&gt;</p>');
    expect(rendered.subject).toBe('Hello <b>Ann & "Bo"</b>');
    expect(rendered.text).toBe('Hello <b>Ann & "Bo"</b>');
  });

  it('inserts a value containing merge tokens as text, never evaluating it', () => {
    const rendered = renderTemplate(template, { firstName: '{{lastName}} {{#each tags}}x{{/each}}' });
    expect(rendered.subject).toBe('Hello {{lastName}} {{#each tags}}x{{/each}}');
  });

  it('inserts raw {{{token}}} values unescaped in html', () => {
    expect(renderTemplate({ html: '{{{additionalInfo}}}' }, { additionalInfo: '<i>x</i>' }).html).toBe('<i>x</i>');
  });

  it('collapses line breaks in the subject to spaces, so a value cannot add a mail header', () => {
    const rendered = renderTemplate(template, { firstName: 'Ann\r\nBcc: victim@example.com\n\rX' });
    expect(rendered.subject).toBe('Hello Ann Bcc: victim@example.com X');
    expect(rendered.subject).not.toMatch(/[\r\n]/);
    expect(renderTemplate({ subject: 'Line\none', html: '' }, {}).subject).toBe('Line one');
  });

  it('renders a missing value as empty and numbers as digits', () => {
    const rendered = renderTemplate({ subject: '[{{lastName}}]', html: '{{firstName}}|{{plusOnes}}' }, { plusOnes: 0 });
    expect(rendered.subject).toBe('[]');
    expect(rendered.html).toBe('|0');
  });

  it('uses the default subject when the template has none', () => {
    expect(defaultSubject).toBe('Your invitation to {{eventTitle}}');
    expect(renderTemplate({ html: '' }, { eventTitle: 'Gala & Ball' }).subject).toBe('Your invitation to Gala & Ball');
  });

  it('uses the default subject when the subject says nothing, as written or once merged (a subject is any string)', () => {
    for (const subject of ['', ' \t ', '{{firstName}}', ' {{lastName}}\n']) {
      expect(renderTemplate({ subject, html: '' }, { eventTitle: 'Gala' }).subject).toBe('Your invitation to Gala');
    }
    expect(renderTemplate({ subject: ' {{firstName}} ', html: '' }, { firstName: 'Ann', eventTitle: 'Gala' }).subject).toBe('Ann');
  });

  it('takes the if branch for a non-empty value, else and unless otherwise', () => {
    const html = '{{#if plusOnes}}with {{plusOnes}}{{else}}alone{{/if}}{{#unless barcode}}, no code{{/unless}}';
    expect(renderTemplate({ html }, { plusOnes: 2, barcode: 'B1' }).html).toBe('with 2');
    expect(renderTemplate({ html }, { plusOnes: 0 }).html).toBe('alone, no code');
    expect(renderTemplate({ html }, {}).html).toBe('alone, no code');
  });

  it('refuses to render a template the check refuses', () => {
    expect(() => renderTemplate({ html: '{{#each tags}}{{this}}{{/each}}' }, {})).toThrow(InvalidTemplateError);
    expect(() => renderTemplate({ subject: '{{nope}}', html: '' }, {})).toThrow(/unknown merge token "nope"/);
  });

  it('gives the same output when a template is rendered again from the cache', () => {
    const first = renderTemplate(template, { firstName: 'Ann' });
    const again = renderTemplate({ ...template }, { firstName: 'Bo' });
    expect([first.html, again.html]).toEqual(['<p>Hello Ann</p>', '<p>Hello Bo</p>']);
  });
});

describe('plain-text alternative', () => {
  it('keeps link URLs after the link text', () => {
    const text = renderTemplate(
      { html: '<p>Please <a href="https://x.test/rsvp/{{attendeeId}}">RSVP here</a> or mail <a href="mailto:{{email}}">{{email}}</a>.</p>' },
      { attendeeId: 'a1', email: 'ann@x.test' },
    ).text;
    expect(text).toBe('Please RSVP here (https://x.test/rsvp/a1) or mail ann@x.test.');
  });

  it('shows a link whose text is its URL once, and an image-only link as its URL', () => {
    expect(plainText('<a href="https://x.test/">https://x.test/</a>')).toBe('https://x.test/');
    expect(plainText('<a href="https://x.test/"><img src="logo.png"></a>')).toBe('https://x.test/');
  });

  it('skips script, style and head, and breaks lines at paragraphs, br and list items', () => {
    const html = `<html><head><title>T</title><style>p { color: red }</style></head><body>
      <h1>Gala</h1><p>Dear   Ann,<br>welcome.</p><script>alert(1)</script>
      <ul><li>Doors 19:00</li><li>Dinner &amp; drinks</li></ul><div>Bye</div></body></html>`;
    expect(plainText(html)).toBe('Gala\n\nDear Ann,\nwelcome.\n\n- Doors 19:00\n- Dinner & drinks\n\nBye');
  });
});
