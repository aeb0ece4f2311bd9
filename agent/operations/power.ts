// Power actions on an instance's machine, through its BMC. Answered only once the BMC took the action: 202 then, and
// otherwise 502 with the BMC's own words (the controller retries a 5xx a few times, then fails the action), never a
// success the BMC did not give. Journaled before the BMC is asked, so a crash never loses one nor repeats a cycle
// that may already have happened.

import { randomUUID } from 'node:crypto';
import type { PowerRequest } from '#site/agent-contract.ts';
import { BmcError } from '../drivers/driver.ts';
import type { PowerRecord } from '../journal/ledger.ts';
import { answer, refusal, type Answer } from './answer.ts';
import type { AgentContext } from './context.ts';

/** How long after a restart a repeated call counts as the controller's retry of the one the crash interrupted. */
const RECOVERED_WINDOW_MS = 10 * 60_000;

export interface Power {
  request(name: string, request: PowerRequest): Promise<Answer>;
  /** At restart: finishes an action the crash interrupted (see below). */
  resume(record: PowerRecord): Promise<void>;
}

export function power(ctx: AgentContext): Power {
  const inFlight = new Map<string, Promise<Answer>>();
  // Outcomes of actions a crash interrupted and the restart finished, for the controller's retry of the same call.
  const recovered = new Map<string, { reply: Answer; until: number }>();

  async function perform(record: PowerRecord, resumed: boolean): Promise<Answer> {
    const { id, machineId, action } = record;
    return ctx.queue.run(machineId, async () => {
      const driver = ctx.drivers.get(machineId)!;
      try {
        // A cycle that may already have reached the BMC is not sent again: the machine is only made sure to be on.
        const effective = resumed && record.sent && action === 'cycle' ? 'on' : action;
        ctx.record({ t: 'power-sent', id });
        if (effective === 'on' && resumed && (await driver.powerState()) === 'on') {
          ctx.record({ t: 'power-done', id, ok: true, message: 'already on' });
        } else {
          await driver.power(effective);
          ctx.record({ t: 'power-done', id, ok: true, message: `${effective} accepted by the BMC` });
        }
        ctx.log(`power ${action} of ${machineId}: done`);
        return answer(202, { action });
      } catch (error) {
        const message = error instanceof BmcError ? error.message : `BMC driver failed: ${(error as Error).message}`;
        ctx.record({ t: 'power-done', id, ok: false, message });
        ctx.log(`power ${action} of ${machineId}: ${message}`);
        return refusal(502, 'bmc_error', message);
      }
    });
  }

  return {
    async request(name, request) {
      const token = ctx.ledger.names.get(name);
      const instance = token === undefined ? undefined : ctx.ledger.instances.get(token);
      if (instance?.phase !== 'present') return refusal(404, 'not_found', `no instance named ${name}`);
      const key = `${instance.request.clientToken}|${request.action}`;
      const earlier = recovered.get(key);
      if (earlier && earlier.until > Date.now()) {
        recovered.delete(key);
        return earlier.reply;
      }
      // The same action asked again while it runs is the same action.
      const running = inFlight.get(key);
      if (running) return running;
      const id = randomUUID();
      ctx.record({ t: 'power', id, clientToken: instance.request.clientToken, machineId: instance.request.machineId, action: request.action });
      const done = perform(ctx.ledger.power.get(id)!, false).finally(() => inFlight.delete(key));
      inFlight.set(key, done);
      return done;
    },

    async resume(record) {
      ctx.log(`resuming power ${record.action} of ${record.machineId} (${record.sent ? 'sent to the BMC before the restart' : 'not yet sent'})`);
      const reply = await perform(record, true);
      recovered.set(`${record.clientToken}|${record.action}`, { reply, until: Date.now() + RECOVERED_WINDOW_MS });
    },
  };
}
