import { allocatability, rosterStale } from '#domain/core/health.ts';
import { assignInstance, releaseInstance as decideRelease, type NewInstanceSpec } from '#domain/instances/instances.ts';
import type { Change, Versioned } from '#domain/core/change.ts';
import type { Instance, Issue, Machine, Principal } from '#domain/core/model.ts';
import { repairPolicy, type RepairPolicy, type SafetyState } from '#domain/repair/safety.ts';
import { conflict, forbidden, notFound, unprocessable } from '#domain/core/rejection.ts';
import { repairClaimBlockers } from '#domain/repair/repair.ts';
import { checkQuota } from '#domain/reservations/quotas.ts';
import { chargeQuota } from '#domain/reservations/quota-shards.ts';
import { loadQuotaUsage } from '#runtime/quota-usage.ts';
import { patchInstance as decidePatch, type InstancePatch } from '#domain/repair/machine-edits.ts';
import { safetyRules, validationRules, type AppContext } from '#runtime/context.ts';
import { validationRequired } from '#domain/repair/validation.ts';
import { loadHeartbeatView } from '#runtime/heartbeat-view.ts';
import { loadFleetSize } from '#runtime/fleet-size.ts';
import { committedOnce, retryOnStale } from '#runtime/retry-on-stale.ts';
import { StaleWriteError } from '#store/port.ts';
import { siteView } from '#services/site-view.ts';
import { claimMachine, readCandidates } from '#services/claims-in-flight.ts';
import { reservedForAnother } from '#domain/reservations/reservations.ts';

export interface CreateInstanceRequest {
  machineType?: string | undefined;
  machineId?: string | undefined;
  name?: string | undefined;
  labels?: Record<string, string> | undefined;
  metaInstanceId?: string;
}

/**
 * Commits a create may lose to rivals before it gives up. Each try reads a fresh page of the allocatable index, from a
 * rack picked at random, and picks one of it at random (so concurrent creates spread over the free machines instead of
 * all racing for the first), leaving out those that other creates of the same process are claiming
 * (claims-in-flight.ts). The index holds ids only: the picked machine alone is read. One found taken or stale when read
 * is set aside, and the next page reads that many more ids, so a lagging index (AWS's GSIs trail their table) that
 * still lists machines just taken costs a read each, not the request. The bounds keep a create's work and latency
 * bounded however many requests contend.
 */
export const PLACEMENT_TRIES = 4;
/**
 * The time a create keeps for one more try and its answer. With less left before the request's deadline, a create
 * that lost a race answers the retryable 409 instead of running into the deadline (a 500) on a site so busy that
 * each try takes seconds.
 */
export const LAST_TRY_RESERVE_MS = 8_000;
/** The page a try picks from: enough to spread a burst of creates, small enough that each read stays cheap. */
const CANDIDATE_PAGE = 32;

export async function createInstance(ctx: AppContext, principal: Principal, request: CreateInstanceRequest): Promise<Instance> {
  const id = ctx.ids.next('i');
  const spec: NewInstanceSpec = {
    id,
    org: principal.org,
    name: request.name ?? id,
    labels: request.labels ?? {},
    clientToken: ctx.ids.next('ct'),
    createdBy: principal.sub,
    ...(request.metaInstanceId ? { metaInstanceId: request.metaInstanceId } : {}),
  };
  if (request.machineId !== undefined) return createOnMachine(ctx, principal, request.machineId, spec);

  const machineType = request.machineType!;
  let site = await siteView(ctx);
  if (!site.catalog.types[machineType] && site.cached) site = await siteView(ctx, { fresh: true });
  if (!site.catalog.types[machineType]) throw unprocessable('unknown-machine-type', `this site has no machines of type ${machineType}`);
  // The org's usage of the type: a create past its quota is refused before any machine is read, and the claim
  // commits only while the quota it was decided against still has room (domain/reservations/quotas.ts).
  let usage = await loadQuotaUsage(ctx, principal.org, machineType);
  checkQuota(usage, 1);
  /**
   * 409 quota-exceeded when the org's quota is used up now: the answer that explains a lost race, if it applies. Read
   * again only while there is a quota, or after a lost commit (whose guard also fails on a quota set since).
   */
  const refuseAtQuota = async (afterLostCommit = false) => {
    if (!afterLostCommit && usage?.quota === undefined) return;
    usage = await loadQuotaUsage(ctx, principal.org, machineType);
    checkQuota(usage, 1);
  };
  const outOfTime = () => ctx.deadline !== undefined && ctx.deadline - Date.now() < LAST_TRY_RESERVE_MS;
  // An org at its quota is told so first: of two true answers, the one its own usage explains.
  const noCapacity = async () => {
    await refuseAtQuota();
    return conflict('no-capacity', `no allocatable ${machineType} machine is free right now`);
  };
  const setAside = new Set<string>();
  // The org's reserved machines first (their own pool, which no other org reads), then the shared pool. A pool found
  // empty is remembered for the site view's life (2 s): a reservation made meanwhile is used from the next view on.
  let reservedFor: string | undefined = site.reservedPoolEmpty(machineType, principal.org) ? undefined : principal.org;
  // A page read from a random rack on stops there once it holds enough ids; when all of those were set aside (taken,
  // the index lagging), it says nothing of the racks before it, and the shared pool is read from its start instead.
  let fromStart = false;
  // Set when a create that waited for this process's claims is short of time: the read it makes next is its last.
  let lastRead = false;
  let waited: (() => void) | undefined;
  try {
    for (let tried = 0; ; ) {
      const now = ctx.clock.now();
      // A silent agent leaves no machine fresh: no read of each candidate to find that out.
      if (rosterStale(site.heartbeat, now) && site.cached) site = await siteView(ctx, { fresh: true });
      if (rosterStale(site.heartbeat, now)) throw await noCapacity();
      const fromRack = reservedFor === undefined && !fromStart ? site.randomRack(machineType) : undefined;
      const candidates = await readCandidates(ctx, machineType, CANDIDATE_PAGE + setAside.size, fromRack, reservedFor, waited);
      waited = undefined;
      const free = candidates.page.filter((id) => !setAside.has(id));
      if (free.length === 0 && reservedFor !== undefined) {
        site.noteReservedPoolEmpty(machineType, reservedFor);
        reservedFor = undefined;
        continue;
      }
      if (free.length === 0 && fromRack !== undefined && setAside.size > 0) {
        fromStart = true;
        continue;
      }
      if (free.length === 0) throw await noCapacity();
      const lostEveryTry = tried === PLACEMENT_TRIES || setAside.size >= CANDIDATE_PAGE || (tried + setAside.size > 0 && outOfTime());
      if (lostEveryTry) {
        await refuseAtQuota();
        // Capacity remains: this request was unlucky, not refused. A 409 like any lost race; retrying is safe.
        throw conflict(
          'concurrent-update',
          `concurrent creates took each of the ${tried} ${machineType} machines this request tried to claim; ${machineType} ` +
            'machines are still free, so retry the request (with the same Idempotency-Key, if it had one)',
        );
      }
      const open = candidates.open(free);
      if (open.length === 0) {
        // Every free machine read is being claimed by another create of this process: a commit each, so they are waited
        // for whatever the time left, and what they leave decides the answer.
        const wait = candidates.waitForClaims(free);
        waited = wait.done;
        await wait.settled;
        // The read held every free machine of the pool and this process took them all: none is left to read again.
        // Taken means committed: a claim still in flight may yet lose (to the quota, or to another process).
        const tookThemAll = candidates.complete && candidates.allClaimed(free);
        if (tookThemAll && reservedFor === undefined) throw await noCapacity();
        // The claims waited for may have used up the org's quota (noCapacity looks too).
        await refuseAtQuota();
        if (tookThemAll) {
          site.noteReservedPoolEmpty(machineType, reservedFor!);
          reservedFor = undefined;
          continue;
        }
        if (lastRead) throw conflict('concurrent-update', `concurrent creates are claiming every free ${machineType} machine; retry the request`);
        // Short of time, one more read still fits (the reserve is kept for it): if it finds nothing free, the answer is
        // no-capacity, which a retry would only repeat; if it finds every free machine claimed again, it is the 409.
        lastRead = outOfTime();
        continue;
      }
      const id = open[Math.floor(Math.random() * open.length)]!;
      const attempt = async (): Promise<ClaimTry> => {
        const machine = await ctx.store.getMachine(id);
        let allocatable = machine !== null && allocatability(machine, site.heartbeat, now).allocatable;
        // The site view may be a little old: a machine that looks stale by it is judged again on a fresh one.
        if (machine && !allocatable && site.cached) {
          site = await siteView(ctx, { fresh: true });
          allocatable = allocatability(machine, site.heartbeat, now).allocatable;
        }
        // Taken by a rival since the index was read (or before, the index lagging), reserved for another org, or stale.
        if (!machine || !allocatable || reservedForAnother(machine, principal.org)) return { setAside: true };
        const { change, instance } = assignInstance(machine, spec, now);
        // No shard with room (rivals filled those read): lost like a commit, and the usage is read again.
        const charged = chargeQuota(change, usage, principal.org, machineType);
        return charged && (await committedOnce(() => ctx.store.commit(charged))) ? { instance: chargedInstance(charged, instance) } : { lost: true };
      };
      const result = await claimMachine(ctx, machineType, id, attempt, (outcome) => 'instance' in outcome, reservedFor);
      if ('instance' in result) return result.instance;
      // Lost to a rival for the machine, or to the org's other creates for the last of its quota: the usage says which.
      if ('lost' in result) await refuseAtQuota(true);
      if ('setAside' in result) setAside.add(id);
      else tried++;
    }
  } finally {
    waited?.();
  }
}

/** The instance as committed: with the usage shard it is counted in. */
const chargedInstance = (charged: Change, instance: Instance): Instance => charged.instances!.find((pair) => pair.after.id === instance.id)!.after;

/** One try of a create: the machine claimed, lost to a rival's commit, or found not allocatable when read. */
type ClaimTry = { instance: Instance } | { lost: true } | { setAside: true };

/** Targeted creation, for repair tenants: only with the capability, and only on a machine awaiting repair. */
async function createOnMachine(ctx: AppContext, principal: Principal, machineId: string, spec: NewInstanceSpec): Promise<Instance> {
  await requireCapability(ctx, principal, 'targeted instance creation needs the targetedInstanceCreation capability');
  const heartbeat = await loadHeartbeatView(ctx);
  return retryOnStale(async () => {
    const machine = await ctx.store.getMachine(machineId);
    if (!machine) throw notFound(`machine ${machineId}`);
    const blockers = repairClaimBlockers(machine, heartbeat, ctx.clock.now());
    if (blockers.length > 0) {
      throw conflict('machine-unavailable', `machine ${machineId} cannot be claimed for repair: ${blockers.join(', ')}`);
    }
    const usage = await loadQuotaUsage(ctx, principal.org, machine.machineType);
    checkQuota(usage, 1);
    const { change, instance } = assignInstance(machine, spec, ctx.clock.now());
    const charged = chargeQuota(change, usage, principal.org, machine.machineType);
    if (!charged) throw new StaleWriteError(`org ${principal.org}'s ${machine.machineType} usage shards filled while this request ran`);
    await ctx.store.commit(charged);
    return chargedInstance(charged, instance);
  });
}

export async function hasCapability(ctx: AppContext, principal: Principal): Promise<boolean> {
  return (await ctx.store.getTenant(principal.org))?.capabilities.targetedInstanceCreation ?? false;
}

async function requireCapability(ctx: AppContext, principal: Principal, detail: string): Promise<void> {
  if (!(await hasCapability(ctx, principal))) throw forbidden('capability-required', detail);
}

/** An instance of the caller's org; any other org's instance does not exist for them. */
export async function loadOwnInstance(ctx: AppContext, principal: Principal, id: string): Promise<Instance> {
  const instance = await ctx.store.getInstance(id);
  if (!instance || instance.org !== principal.org) throw notFound(`instance ${id}`);
  return instance;
}

export interface ReleaseRequest {
  issue?: Issue | undefined;
  isRepairTenant?: boolean | undefined;
}

export async function releaseInstance(
  ctx: AppContext,
  principal: Principal,
  id: string,
  request: ReleaseRequest = {},
): Promise<{ changed: boolean; instance: Instance }> {
  if (request.isRepairTenant) await requireCapability(ctx, principal, 'isRepairTenant needs the targetedInstanceCreation capability');
  return retryOnStale(async () => {
    const instance = await loadOwnInstance(ctx, principal, id);
    const machine = await requireMachine(ctx, instance.machineId);
    const { policy, safety } = await repairPolicyFor(ctx, machine, request);
    const report = {
      actor: principal.sub,
      issue: request.issue,
      isRepairTenant: request.isRepairTenant ?? false,
      policy,
      validateAfterRepair: request.isRepairTenant && validationRequired(validationRules(ctx.config), 'repair') ? validationIdentity(ctx) : undefined,
    };
    const decision = decideRelease(instance, machine, report, ctx.clock.now());
    if (decision.kind === 'unchanged') return { changed: false, instance };
    await ctx.store.commit({ ...decision.change, ...(safety ? { safety } : {}) });
    return { changed: true, instance: decision.instance };
  });
}

/** A new validation's id and the site's suite. */
export const validationIdentity = (ctx: AppContext) => ({ validationId: ctx.ids.next('v'), suite: ctx.config.validation.suite });

/**
 * What a tenant's issue report leads to beyond quarantine (domain/repair/safety.ts `repairPolicy`). Counting the quarantine
 * changes the site's safety record, which commits with the release.
 */
async function repairPolicyFor(ctx: AppContext, machine: Machine, request: ReleaseRequest): Promise<{ policy: RepairPolicy; safety?: Versioned<SafetyState> }> {
  if (request.isRepairTenant || !request.issue) return { policy: { kind: 'off' } };
  return reportedFaultPolicy(ctx, machine);
}

/**
 * What a reported fault (a tenant's issue, a failed validation) leads to beyond quarantine, by the site's auto-repair
 * switch, breaker and escalation rules; the safety record it changes commits with the fault.
 */
export async function reportedFaultPolicy(ctx: AppContext, machine: Machine): Promise<{ policy: RepairPolicy; safety?: Versioned<SafetyState> }> {
  if (!ctx.config.auto_machine_repair_plugin.enabled) return { policy: { kind: 'off' } };
  const [stored, fleetSize] = await Promise.all([ctx.store.getSafety(), loadFleetSize(ctx)]);
  const { policy, safety } = repairPolicy(machine, { autoRepair: true, safety: stored, fleetSize, now: ctx.clock.now(), rules: safetyRules(ctx.config) });
  return { policy, ...(safety ? { safety: { before: stored, after: safety } } : {}) };
}

export async function requireMachine(ctx: AppContext, id: string): Promise<Machine> {
  const machine = await ctx.store.getMachine(id);
  if (!machine) throw notFound(`machine ${id}`);
  return machine;
}

export async function patchInstance(ctx: AppContext, principal: Principal, id: string, patch: InstancePatch): Promise<Instance> {
  return retryOnStale(async () => {
    const instance = await loadOwnInstance(ctx, principal, id);
    const machine = await requireMachine(ctx, instance.machineId);
    const decision = decidePatch(instance, machine, patch, principal.sub, ctx.clock.now());
    await ctx.store.commit(decision.change);
    return decision.instance;
  });
}
