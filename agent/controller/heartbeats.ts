// The heartbeat loop: the whole roster, or `heartbeat_parts` parts of it one after another (docs/api.md "A roster
// larger than one beat"), each interval, with what the probes last found. Sequential on purpose: the controller
// treats each beat as the whole roster (or part), so two must never race.

import type { HeartbeatBody } from '#site/agent-contract.ts';
import type { ControllerClient } from './controller-client.ts';
import { inRosterPart } from './roster-part.ts';

export interface HeartbeatLoop {
  start(): void;
  stop(): Promise<void>;
  beatsSent(): number;
}

export function heartbeatLoop(options: {
  roster: () => HeartbeatBody['machines'];
  parts: number;
  intervalMs: number;
  client: ControllerClient;
  log: (line: string) => void;
}): HeartbeatLoop {
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let current: Promise<void> | undefined;
  let sent = 0;

  async function beatOnce(): Promise<void> {
    const machines = options.roster();
    const bodies: HeartbeatBody[] =
      options.parts === 1
        ? [{ machines }]
        : Array.from({ length: options.parts }, (_, index) => {
            const part = { index, count: options.parts } as NonNullable<HeartbeatBody['part']>;
            return { machines: machines.filter((m) => inRosterPart(m.id, part)), part };
          });
    for (const body of bodies) {
      if (!running) return;
      try {
        const status = await options.client.heartbeat(body);
        sent++;
        if (status >= 300) options.log(`heartbeat${body.part ? ` part ${body.part.index}/${body.part.count}` : ''} answered ${status}`);
      } catch (error) {
        if (running) options.log(`heartbeat failed: ${(error as Error).message}`);
      }
    }
  }

  const tick = () => {
    current = beatOnce().finally(() => {
      if (running) timer = setTimeout(tick, options.intervalMs);
    });
  };

  return {
    start() {
      running = true;
      tick();
    },
    async stop() {
      running = false;
      clearTimeout(timer);
      await current;
    },
    beatsSent: () => sent,
  };
}
