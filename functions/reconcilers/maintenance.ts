import { withOpenList, type Maintenance, type OpenMaintenances } from '#domain/maintenance/maintenance.ts';
import { dueForEnforcement, enforceStep, nextDueAt, resyncStep, timeStep } from '#domain/maintenance/maintenance-deadlines.ts';
import { fanOutStep, handedBack, renoticeChunk, renoticeStep, unwindStep } from '#domain/maintenance/maintenance-fan-out.ts';
import {
  admissible,
  admit,
  machinesToRead,
  maintenanceIdOf,
  settleStarts,
  unansweredStarts,
  validationSettled,
  walkPending,
} from '#domain/maintenance/maintenance-waves.ts';
import { isOpen } from '#domain/maintenance/maintenance.ts';
import type { Instance, Machine } from '#domain/core/model.ts';
import { iso } from '#domain/core/time.ts';
import type { AppContext, MaintenanceStartOutcome } from '#runtime/context.ts';
import { defineReconciler } from '#reconcilers/reconciler.ts';
import { limiter } from '#store/in-parallel.ts';
import { maintenanceDueAt } from '#reconcilers/due-times.ts';

// A declared maintenance, one bounded step per pass: the fan-out of its override and notice in chunks (or, after a
// cancel, their removal), hand-backs, reminders and overdue machines, then waves of starts on the site agent.
// Level-triggered: each step commits the maintenance's progress with the records it changed, so a crash resumes
// where the last commit left it; the `due` index holds the maintenance while a walk is pending or a time is coming.

export interface MaintenanceSnapshot {
  maintenance: Maintenance;
  machines: Map<string, Machine>;
  instances: Map<string, Instance>;
  open: OpenMaintenances | null;
  now: Date;
  leaseMs: number;
}

/** The agent is asked to start the work on these machines, once their admission has committed. */
export interface MaintenanceStarts {
  maintenanceId: string;
  category: Maintenance['category'];
  machineIds: string[];
}

type StartAnswers = Array<{ machineId: string; outcome: MaintenanceStartOutcome }>;

/** Agent calls at once per wave: a wave of hundreds must not open hundreds of connections. */
const STARTS_AT_ONCE = 8;

const onlyChecked = (before: Maintenance | null, after: Maintenance): boolean =>
  before !== null && before.updatedAt === after.updatedAt && before.checkedAt !== after.checkedAt;
const free = (machine: Machine): boolean => machine.state === 'Ready' && !machine.instanceId && !machine.cleanup;
const validationFinished = (before: Machine, after: Machine): boolean =>
  before.validation?.state === 'running' && after.validation?.id === before.validation.id && after.validation.state !== 'running';

export const maintenanceReconciler = defineReconciler({
  kind: 'maintenance',
  watches: {
    maintenance: {
      // A check that found nothing to do (resyncStep) changed nothing a pass would act on.
      concerns: (before, after, id) => (after && (isOpen(after) || walkPending(after)) && !onlyChecked(before, after) ? [id] : []),
      dueAt: maintenanceDueAt,
    },
    // A machine in scope that came free (its tenant handed it back and cleanup finished) may join a wave.
    // So may one whose validation after the work finished (validated return): its course then moves on.
    machine: {
      concerns: (before, after) => (after && before && ((free(after) && !free(before)) || validationFinished(before, after)) ? [maintenanceIdOf(after)] : []),
    },
  },

  async load(ctx: AppContext, id: string): Promise<MaintenanceSnapshot | null> {
    const [found, open] = await Promise.all([ctx.store.getMaintenances([id]), ctx.store.getOpenMaintenances()]);
    const maintenance = found.get(id);
    if (!maintenance) return null;
    const now = ctx.clock.now();
    const machines = await ctx.store.getMachines(machinesToRead(maintenance));
    // Instances only where a step changes them: the walk's chunk, and held machines past their deadline.
    const enforced = new Set(dueForEnforcement(maintenance, now));
    const instanceIds = [
      ...[...machines.values()].flatMap((m) => (m.instanceId && (walkPending(maintenance) || enforced.has(m.id)) ? [m.instanceId] : [])),
      // The notices that follow a moved deadline: the instances the next chunk's courses name.
      ...renoticeChunk(maintenance).flatMap((id) => maintenance.machines[id]?.instanceId ?? []),
    ];
    const instances = instanceIds.length > 0 ? (await ctx.store.getRecords({ instances: instanceIds })).instances : new Map<string, Instance>();
    return { maintenance, machines, instances, open, now, leaseMs: ctx.config.site_agent.report_timeout_seconds * 1000 };
  },

  decide({ maintenance, machines, instances, open, now, leaseMs }: MaintenanceSnapshot) {
    const walk = fanOutStep(maintenance, machines, instances, now) ?? unwindStep(maintenance, machines, instances, now);
    if (walk) return { change: withOpenList(walk, open), requeueAt: now, summary: 'maintenance walk step' };
    const renoticed = isOpen(maintenance) ? renoticeStep(maintenance, instances, now) : null;
    if (renoticed) return { change: renoticed, requeueAt: now, summary: 'maintenance notices follow a moved deadline' };
    const course = isOpen(maintenance) ? handedBack(maintenance, machines, now) : null;
    if (course) {
      return {
        change: { history: [], maintenances: [{ before: maintenance, after: { ...maintenance, machines: course, updatedAt: iso(now) } }] },
        requeueAt: now,
      };
    }
    const enforced = enforceStep(maintenance, machines, instances, now);
    if (enforced) return { change: enforced, requeueAt: now, summary: 'maintenance deadline enforced' };
    const timed = timeStep(maintenance, now);
    if (timed) return { change: timed, requeueAt: now, summary: 'maintenance reminders and overdue machines' };
    const validated = validationSettled(maintenance, machines, now);
    if (validated) return { change: withOpenList(validated, open), requeueAt: now, summary: 'maintenance validation settled' };
    const starts = [...unansweredStarts(maintenance, now), ...admissible(maintenance, machines)];
    if (starts.length > 0) {
      const effect: MaintenanceStarts = { maintenanceId: maintenance.id, category: maintenance.category, machineIds: starts };
      return { change: admit(maintenance, starts, now, leaseMs), effect, summary: `maintenance wave of ${starts.length}` };
    }
    const resynced = resyncStep(maintenance, now);
    if (resynced) return { change: resynced, summary: 'maintenance checked: nothing to do' };
    const due = nextDueAt(maintenance);
    return due ? { requeueAt: new Date(due) } : {};
  },

  effects: {
    async perform(ctx: AppContext, starts: MaintenanceStarts): Promise<StartAnswers> {
      const slot = limiter(STARTS_AT_ONCE);
      return Promise.all(
        starts.machineIds.map((machineId) =>
          slot(async () => {
            const outcome = await ctx.agent.startMaintenance(machineId, { maintenanceId: starts.maintenanceId, category: starts.category });
            if (outcome.kind !== 'accepted')
              ctx.log.warn('site agent maintenance start failed', { machineId, maintenanceId: starts.maintenanceId, ...outcome });
            return { machineId, outcome };
          }),
        ),
      );
    },
    settle({ maintenance, machines, open, now }: MaintenanceSnapshot, _starts: MaintenanceStarts, answers: StartAnswers) {
      // No answer (a timeout, a 5xx): the lease lapses and the start is sent again.
      const answered = answers.flatMap(({ machineId, outcome }) => {
        const machine = machines.get(machineId);
        if (!machine || outcome.kind === 'error') return [];
        return [{ machine, accepted: outcome.kind === 'accepted', ...(outcome.kind === 'refused' ? { reason: outcome.reason } : {}) }];
      });
      const change = settleStarts(maintenance, answered, now);
      return change && withOpenList(change, open);
    },
  },
});
