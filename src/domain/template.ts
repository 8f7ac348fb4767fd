import { scopedKey } from '../shared/ids.js';
import { DomainError, type Decider } from './decider.js';

/**
 * Invitation email templates (spec: Comms template, Comms rule 1). A template is immutable
 * once created: a send records which template it used, so an auditor sees exactly what a
 * guest was sent. To change the wording, create a new template.
 */
export interface TemplateDetails {
  eventId: string;
  name: string;
  html: string;
  subject?: string;
  fromAddress?: string;
  fromName?: string;
  replyTo?: string;
  attachPdf: boolean;
}

export type TemplateEvent = {
  type: 'TemplateCreated';
  /** `templateIdAsSent`: the id as sent when it has upper-case letters (`templateId` is the lowercase key); absent before it was kept. */
  data: { templateId: string; templateIdAsSent?: string; clientId: string; created: string } & TemplateDetails;
};

export type TemplateCommand = {
  type: 'CreateTemplate';
  templateId: string;
  templateIdAsSent?: string;
  clientId: string;
  details: TemplateDetails;
  at: string;
};

export type TemplateState = { status: 'none' } | { status: 'exists'; clientId: string };

/** Template ids may be the caller's, so they are scoped per client (docs/identifiers.md). */
export const templateStream = (clientId: string, templateId: string): string => `template-${scopedKey(clientId, templateId)}`;

export const templateDecider: Decider<TemplateState, TemplateCommand, TemplateEvent> = {
  initialState: () => ({ status: 'none' }),

  evolve(_state, event) {
    return { status: 'exists', clientId: event.data.clientId };
  },

  decide(command, state) {
    if (state.status === 'none') {
      return [
        {
          type: 'TemplateCreated',
          data: {
            templateId: command.templateId,
            ...(command.templateIdAsSent ? { templateIdAsSent: command.templateIdAsSent } : {}),
            clientId: command.clientId,
            created: command.at,
            ...command.details,
          },
        },
      ];
    }
    // Rule 1: a create with an existing id returns that template (nothing new is recorded).
    // Another client's template is reported as missing, never as forbidden.
    if (state.clientId !== command.clientId) throw new DomainError('not_found', 'template not found');
    return [];
  },
};
