/**
 * Positive markers for an exact count after at-least-once work (docs/testing.md): a service's own
 * lag gauges on `/metrics` (src/observability/pipeline-lag.ts), read from the shared stores and
 * the bus, so any process of the service (an api one) reports the pipeline of all of them.
 */

/** The gauges a drain is judged by; a figure the scrape left out (its probe failed) is undefined. */
export interface PipelineGauges {
  /** `relay_lag_events`: stored events past the relay's checkpoint. */
  relay?: number;
  /** The send worker group's `bus_consumer_lag_messages` on `comms.invitations.v1`. */
  sendWorker?: number;
  /** The webhook dispatcher group's `bus_consumer_lag_messages`, summed over `comms.events.v1` and `comms.webhook-redeliveries.v1`. */
  dispatcher?: number;
  /** `projection_lag_events` of the `webhook_deliveries` read model, which `webhook_deliveries_pending` counts. */
  deliveriesProjection?: number;
  /** `projection_lag_events` of the `invitations` read model. */
  invitationsProjection?: number;
  /** `webhook_deliveries_pending`: deliveries pending or retrying (an attempt due, or one held by a worker's lease). */
  webhooksPending?: number;
}

export async function pipelineGauges(url: string): Promise<PipelineGauges> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const gauge = (pattern: RegExp) => {
    const match = pattern.exec(text);
    const value = match ? Number(match[1]) : undefined;
    return value === undefined || Number.isNaN(value) ? undefined : value;
  };
  const lag = (group: string, topic: string) =>
    gauge(new RegExp(`^bus_consumer_lag_messages\\{group="${group}",topic="${topic.replaceAll('.', '\\.')}"\\} (\\S+)$`, 'm'));
  const [events, redeliveries] = [lag('webhook-dispatcher', 'comms.events.v1'), lag('webhook-dispatcher', 'comms.webhook-redeliveries.v1')];
  return {
    relay: gauge(/^relay_lag_events (\S+)$/m),
    sendWorker: lag('send-worker', 'comms.invitations.v1'),
    dispatcher: events === undefined || redeliveries === undefined ? undefined : events + redeliveries,
    deliveriesProjection: gauge(/^projection_lag_events\{projection="webhook_deliveries"\} (\S+)$/m),
    invitationsProjection: gauge(/^projection_lag_events\{projection="invitations"\} (\S+)$/m),
    webhooksPending: gauge(/^webhook_deliveries_pending (\S+)$/m),
  };
}

/**
 * Whether the service's invitation pipeline has drained, from its /metrics: the relay has no stored
 * event past its checkpoint, and the send worker has committed every invitation message. A message
 * still to handle (a redelivery of a killed process's uncommitted tail, a message the relay
 * publishes again after a restart) keeps one of the two above 0, so after both read 0 no more
 * email can come: the positive marker for the exact count (docs/testing.md).
 *
 * With `webhooks`, also the webhook side: the dispatcher group has committed every comms event and
 * redelivery request, the `webhook_deliveries` read model has applied every delivery event, and it
 * holds no delivery pending or retrying. A comms event still to schedule keeps the lag above 0; an
 * attempt still due, or one a killed worker held (taken over by a sweep once its lease runs out,
 * and sent again), keeps its delivery pending; so after all read 0 no more webhook can come.
 */
export async function drained(url: string, options: { webhooks?: boolean } = {}): Promise<true | undefined> {
  return isDrained(await pipelineGauges(url), options) ? true : undefined;
}

/** `drained`'s judgement of gauges already read. */
export function isDrained(g: PipelineGauges, options: { webhooks?: boolean } = {}): boolean {
  const emails = g.relay === 0 && g.sendWorker === 0;
  const webhooks = !options.webhooks || (g.dispatcher === 0 && g.deliveriesProjection === 0 && g.webhooksPending === 0);
  return emails && webhooks;
}
