import type { StoredEvent } from '../adapters/eventstore/port.js';
import type { TemplateDetails, TemplateEvent } from '../domain/template.js';
import type { Projection } from './projection.js';
import { scopedKey } from '../shared/ids.js';

/** `templateIdAsSent`: the id as the caller sent it when not lowercase (TemplateCreated), what answers show. */
/** `_id` is `scopedKey(clientId, templateId)`; documents written before ids were scoped have the id as `_id` and no `templateId`. */
export type TemplateDoc = { _id: string; templateId?: string; templateIdAsSent?: string; clientId: string; created: string } & TemplateDetails;

/** `templates` read model: one document per invitation template (templates never change). */
export const templatesProjection: Projection = {
  name: 'templates',
  filter: { streamPrefixes: ['template-'] },
  collections: [
    {
      name: 'templates',
      indexes: [
        { name: 'clientId_created', keys: { clientId: 1, created: -1 } },
        { name: 'clientId_eventId_created', keys: { clientId: 1, eventId: 1, created: -1 } },
      ],
    },
  ],
  apply(stored: StoredEvent) {
    const event = stored as unknown as StoredEvent & TemplateEvent;
    if (event.type !== 'TemplateCreated') return [];
    const { templateId, ...fields } = event.data;
    const id = scopedKey(fields.clientId, templateId);
    return [{ kind: 'update', collection: 'templates', id, upsert: true, update: { $set: { templateId, ...fields } } }];
  },
};
