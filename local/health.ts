/**
 * What `GET /health` of the local runner says, decided from a probe of its parts so the rule is tested without
 * stopping anything. A part is down when it is not running or when it has stopped making progress: a poller whose
 * last clean pass is older than `stallAfterMs`, a timer whose last tick began more than an interval plus
 * `stallAfterMs` ago. Nothing is remembered between calls, so a part that comes back is healthy at the next call.
 */

export interface HealthProbe {
  now: number;
  /** Whether DynamoDB Local answered a read just now. */
  dynamodb: boolean;
  /** Undefined when the site runs without a poller. */
  streamPoller?: { running: boolean; lastPollAt: number };
  scheduler: { running: boolean; lastTickAt: number; intervalMs: number };
  siteAgent: boolean;
}

export type HealthPart = 'dynamodb' | 'stream-poller' | 'scheduler' | 'site-agent';

export interface Health {
  ok: boolean;
  /** One flag per part, under the names /health has always used. */
  checks: { api: boolean; store: boolean; streamPoller: boolean; scheduler: boolean; siteAgent: boolean };
  down: Array<{ part: HealthPart; reason: string }>;
}

export const defaultStallAfterMs = 30_000;

export function assessHealth(probe: HealthProbe, stallAfterMs = defaultStallAfterMs): Health {
  const down: Health['down'] = [];
  const since = (at: number) => `${Math.round((probe.now - at) / 1000)} s`;
  if (!probe.dynamodb) down.push({ part: 'dynamodb', reason: 'DynamoDB Local does not answer' });

  const poller = probe.streamPoller;
  if (!poller) down.push({ part: 'stream-poller', reason: 'the site runs without a stream poller' });
  else if (!poller.running) down.push({ part: 'stream-poller', reason: 'not running' });
  else if (probe.now - poller.lastPollAt > stallAfterMs) {
    down.push({ part: 'stream-poller', reason: `stalled: no clean pass over the stream for ${since(poller.lastPollAt)}` });
  }

  const { scheduler } = probe;
  if (!scheduler.running) down.push({ part: 'scheduler', reason: 'not running' });
  else if (probe.now - scheduler.lastTickAt > scheduler.intervalMs + stallAfterMs) {
    down.push({ part: 'scheduler', reason: `stalled: no tick began for ${since(scheduler.lastTickAt)}` });
  }

  if (!probe.siteAgent) down.push({ part: 'site-agent', reason: 'the simulated site agent is not running' });

  const isDown = (part: HealthPart) => down.some((d) => d.part === part);
  return {
    ok: down.length === 0,
    checks: {
      api: true,
      store: !isDown('dynamodb'),
      streamPoller: !isDown('stream-poller'),
      scheduler: !isDown('scheduler'),
      siteAgent: !isDown('site-agent'),
    },
    down,
  };
}

/** False when the read fails or takes longer than `ms`: a hung DynamoDB Local must not hang /health too. */
export function answersWithin(read: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  return Promise.race([
    read.then(
      () => true,
      () => false,
    ),
    timeout,
  ]).finally(() => clearTimeout(timer));
}
