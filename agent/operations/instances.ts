// Instances (docs/api.md "Site agent"): a create is journaled before the provision hook runs and answered once it
// ends; a delete is journaled and answered 202, then the cleanup hook runs and its outcome is reported. The
// clientToken is the create's identity: a retry under another name after a lost answer is the same instance (the new
// name becomes another name of it), never a second provisioning.

import type { CreateInstanceRequest, InstanceStatusAnswer } from '#site/agent-contract.ts';
import type { InstanceRecord } from '../journal/ledger.ts';
import { answer, refusal, type Answer } from './answer.ts';
import type { AgentContext } from './context.ts';
import { runHook } from './hooks.ts';

export interface Instances {
  create(request: CreateInstanceRequest): Promise<Answer>;
  delete(name: string): Answer;
  status(name: string): Answer;
  /** Starts (again) the provisioning of a create journaled but not finished: at restart. */
  resumeProvisioning(record: InstanceRecord): void;
  /** Runs (again) a cleanup journaled but not finished, or reports one finished but not reported: at restart. */
  resumeCleanup(record: InstanceRecord): void;
}

const LIVE = new Set(['provisioning', 'present', 'provision-failed', 'cleaning']);

export function instances(ctx: AgentContext): Instances {
  // Provisionings under way, by clientToken: a retried create waits for the same one.
  const provisioning = new Map<string, Promise<void>>();

  function hookEnv(record: InstanceRecord, resumed: boolean): Record<string, string> {
    const { request } = record;
    return {
      FLEETWARD_INSTANCE_NAME: record.names.at(-1)!,
      FLEETWARD_INSTANCE_NAMES: record.names.join(' '),
      FLEETWARD_INSTANCE_ID: request.instanceId,
      FLEETWARD_CLIENT_TOKEN: request.clientToken,
      FLEETWARD_REQUEST: JSON.stringify(request),
      FLEETWARD_RESUMED: resumed ? '1' : '0',
    };
  }

  function provision(record: InstanceRecord, resumed: boolean): Promise<void> {
    const { clientToken, machineId } = record.request;
    const running = ctx.queue
      .run(machineId, async () => {
        const result = await runHook(ctx, 'provision', ctx.machines.get(machineId)!, clientToken, hookEnv(record, resumed));
        ctx.record({ t: 'provisioned', clientToken, ok: result.ok, message: result.message });
      })
      .finally(() => provisioning.delete(clientToken));
    provisioning.set(clientToken, running);
    return running;
  }

  async function answerFor(record: InstanceRecord, name: string): Promise<Answer> {
    await provisioning.get(record.request.clientToken);
    if (record.phase === 'present') return answer(201, { name, machineId: record.request.machineId });
    if (record.phase === 'provision-failed') return refusal(502, 'provision_failed', record.provisionMessage ?? 'the provision hook failed');
    return refusal(409, 'instance_released', `the create of ${record.request.clientToken} was released since`);
  }

  function cleanUp(record: InstanceRecord, resumed: boolean): void {
    const { clientToken, machineId } = record.request;
    void ctx.queue
      .run(machineId, async () => {
        if (record.phase === 'cleaning') {
          const result = await runHook(ctx, 'cleanup', ctx.machines.get(machineId)!, `cleanup:${clientToken}`, hookEnv(record, resumed));
          ctx.record({ t: 'cleaned', clientToken, ok: result.ok, message: result.message });
        }
      })
      .then(async () => {
        const outcome = record.cleanup!;
        if (await ctx.controller.report('cleanup', machineId, { ok: outcome.ok, message: outcome.message })) {
          ctx.record({ t: 'cleanup-reported', clientToken });
          ctx.log(`reported cleanup of ${machineId} (${record.names.join(', ')}): ok=${outcome.ok}`);
        }
      })
      .catch((error: unknown) => ctx.log(`cleanup of ${machineId} stopped: ${(error as Error).message}`));
  }

  return {
    async create(request) {
      if (!ctx.machines.has(request.machineId)) return refusal(400, 'unknown_machine', `this agent has no machine ${request.machineId}`);
      const holder = ctx.ledger.names.get(request.name);
      const existing = ctx.ledger.instances.get(request.clientToken);
      if (existing) {
        if (holder !== undefined && holder !== request.clientToken) return refusal(409, 'name_conflict', `an instance named ${request.name} exists`);
        if (holder === undefined) ctx.record({ t: 'alias', clientToken: request.clientToken, name: request.name });
        return answerFor(existing, request.name);
      }
      if (holder !== undefined) return refusal(409, 'name_conflict', `an instance named ${request.name} exists`);
      const busy = [...ctx.ledger.instances.values()].find((r) => r.request.machineId === request.machineId && LIVE.has(r.phase));
      if (busy) return refusal(409, 'machine_busy', `machine ${request.machineId} holds instance ${busy.names.at(-1)}`);
      ctx.record({ t: 'create', ...request });
      const record = ctx.ledger.instances.get(request.clientToken)!;
      await provision(record, false);
      return answerFor(record, request.name);
    },

    delete(name) {
      const token = ctx.ledger.names.get(name);
      const record = token === undefined ? undefined : ctx.ledger.instances.get(token);
      if (!record) return refusal(404, 'not_found', `no instance named ${name}`);
      const reply = answer(202, { name, machineId: record.request.machineId });
      // Deleting again while the first delete is under way is the same delete.
      if (record.phase === 'cleaning' || record.phase === 'cleaned') return reply;
      ctx.record({ t: 'delete', clientToken: record.request.clientToken });
      cleanUp(record, false);
      return reply;
    },

    status(name) {
      const token = ctx.ledger.names.get(name);
      const record = token === undefined ? undefined : ctx.ledger.instances.get(token);
      if (!record) return refusal(404, 'not_found', `no instance named ${name}`);
      const state: InstanceStatusAnswer['state'] = record.phase === 'cleaning' || record.phase === 'cleaned' ? 'cleaning' : 'present';
      return answer(200, { state });
    },

    resumeProvisioning(record) {
      ctx.log(`resuming the provisioning of ${record.names.join(', ')} on ${record.request.machineId}`);
      void provision(record, true);
    },

    resumeCleanup(record) {
      ctx.log(`resuming the cleanup of ${record.names.join(', ')} on ${record.request.machineId}`);
      cleanUp(record, true);
    },
  };
}
