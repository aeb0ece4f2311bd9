// Validation and maintenance: accepted (202) once journaled, done by their hooks, reported to the controller until it
// takes the report. The same validationId or maintenanceId asked again is the same work, never a second run.

import type { StartMaintenanceRequest, ValidationReportBody, ValidationRequest } from '#site/agent-contract.ts';
import { validationResult } from '#site/agent-contract.ts';
import type { MaintenanceRecord, ValidationRecord } from '../journal/ledger.ts';
import { answer, refusal, type Answer } from './answer.ts';
import type { AgentContext } from './context.ts';
import { runHook, type HookResult } from './hooks.ts';

export interface MachineWork {
  validate(machineId: string, request: ValidationRequest): Answer;
  maintain(machineId: string, request: StartMaintenanceRequest): Answer;
  resumeValidation(record: ValidationRecord): void;
  resumeMaintenance(record: MaintenanceRecord): void;
}

/**
 * A validate hook's report: each line of its output that is a test result (`{"test","passed","message"?}`) counts;
 * a hook that printed none reports the suite as one test. Passed only when it exited 0 and every test passed.
 */
export function validationReportOf(validationId: string, suite: string, result: HookResult): ValidationReportBody {
  const lines = (result.outcome?.stdout ?? '').split('\n');
  const results = lines.flatMap((line) => {
    if (!line.trim().startsWith('{')) return [];
    try {
      const parsed = validationResult.safeParse(JSON.parse(line));
      return parsed.success ? [parsed.data] : [];
    } catch {
      return [];
    }
  });
  const tests =
    results.length > 0
      ? results.slice(0, 64)
      : [{ test: suite.slice(0, 128), passed: result.ok, ...(result.ok ? {} : { message: result.message.slice(0, 1024) }) }];
  return { validationId, passed: result.ok && tests.every((t) => t.passed), results: tests };
}

export function machineWork(ctx: AgentContext): MachineWork {
  function runValidation(record: ValidationRecord, resumed: boolean): void {
    const { machineId, request } = record;
    void ctx.queue
      .run(machineId, async () => {
        if (record.report) return;
        const env = {
          FLEETWARD_VALIDATION_ID: request.validationId,
          FLEETWARD_SUITE: request.suite,
          FLEETWARD_REASON: request.reason,
          FLEETWARD_RESUMED: resumed ? '1' : '0',
        };
        const result = await runHook(ctx, 'validate', ctx.machines.get(machineId)!, `validation:${request.validationId}`, env);
        ctx.record({ t: 'validated', validationId: request.validationId, report: validationReportOf(request.validationId, request.suite, result) });
      })
      .then(async () => {
        if (await ctx.controller.report('validation', machineId, record.report!)) ctx.record({ t: 'validation-reported', validationId: request.validationId });
      })
      .catch((error: unknown) => ctx.log(`validation ${request.validationId} of ${machineId} stopped: ${(error as Error).message}`));
  }

  function runMaintenance(record: MaintenanceRecord, resumed: boolean): void {
    const { machineId, request } = record;
    void ctx.queue
      .run(machineId, async () => {
        if (record.outcome) return;
        const env = { FLEETWARD_MAINTENANCE_ID: request.maintenanceId, FLEETWARD_CATEGORY: request.category, FLEETWARD_RESUMED: resumed ? '1' : '0' };
        const result = await runHook(ctx, 'maintenance', ctx.machines.get(machineId)!, `maintenance:${request.maintenanceId}`, env);
        ctx.record({ t: 'maintained', maintenanceId: request.maintenanceId, ok: result.ok, message: result.message });
      })
      .then(async () => {
        const body = { maintenanceId: request.maintenanceId, ok: record.outcome!.ok, message: record.outcome!.message };
        if (await ctx.controller.report('maintenance', machineId, body)) ctx.record({ t: 'maintenance-reported', maintenanceId: request.maintenanceId });
      })
      .catch((error: unknown) => ctx.log(`maintenance ${request.maintenanceId} of ${machineId} stopped: ${(error as Error).message}`));
  }

  return {
    validate(machineId, request) {
      if (!ctx.machines.has(machineId)) return refusal(404, 'not_found', `this agent has no machine ${machineId}`);
      if (!ctx.ledger.validations.has(request.validationId) && !ctx.ledger.reported.validations.has(request.validationId)) {
        ctx.record({ t: 'validation', machineId, ...request });
        runValidation(ctx.ledger.validations.get(request.validationId)!, false);
      }
      return answer(202, { validationId: request.validationId });
    },
    maintain(machineId, request) {
      if (!ctx.machines.has(machineId)) return refusal(404, 'not_found', `this agent has no machine ${machineId}`);
      if (!ctx.ledger.maintenances.has(request.maintenanceId) && !ctx.ledger.reported.maintenances.has(request.maintenanceId)) {
        ctx.record({ t: 'maintenance', machineId, ...request });
        runMaintenance(ctx.ledger.maintenances.get(request.maintenanceId)!, false);
      }
      return answer(202, { machineId, maintenanceId: request.maintenanceId });
    },
    resumeValidation: (record) => runValidation(record, true),
    resumeMaintenance: (record) => runMaintenance(record, true),
  };
}
