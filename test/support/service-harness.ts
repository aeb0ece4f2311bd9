import { expect } from 'vitest';
import { parseSiteConfig } from '#config/site-config.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import type { DeleteOutcome } from '#domain/instances/cleanup.ts';
import type { InstanceStatusOutcome } from '#domain/instances/status-checks.ts';
import type { ValidationCallOutcome } from '#domain/repair/validation.ts';
import type { PowerCallOutcome } from '#domain/instances/power.ts';
import type { Change } from '#domain/core/change.ts';
import type { CreateOutcome } from '#domain/instances/instances.ts';
import type { AgentAlert } from '#domain/repair/agent-alerts.ts';
import type { SiteHeartbeat } from '#domain/machines/heartbeat.ts';
import type { Principal } from '#domain/core/model.ts';
import { Rejection } from '#domain/core/rejection.ts';
import { iso } from '#domain/core/time.ts';
import type { AppContext, MaintenanceStartOutcome, SiteAgent } from '#runtime/context.ts';
import type { StartMaintenanceRequest } from '#site/agent-contract.ts';
import { receiveHeartbeat } from '#services/heartbeats.ts';
import { registerMachines } from '#services/machines.ts';
import type { PublishedEvent } from '#domain/events/events.ts';
import type { EventPublisher } from '#runtime/events.ts';
import type { EntityRef } from '#reconcilers/registry.ts';
import { startRun } from '#reconcilers/runner.ts';
import { MemoryFleetStore } from '#store/memory-store.ts';
import type { FleetStore } from '#store/port.ts';
import { NOW, ops } from './fixtures.ts';
import { prometheusMetrics, type PrometheusMetrics } from '#runtime/prometheus-metrics.ts';

// Services run for real on the in-memory store, with a clock, ids, a site agent and an event bus the test controls.

type CreateRequest = Parameters<SiteAgent['create']>[0];
type ValidateCall = { machineId: string; request: Parameters<SiteAgent['validate']>[1] };
type Scripted<R, T> = T | ((request: R) => T | Promise<T>);

/** A site agent in process: answers what the test scripted (success by default) and remembers every call. */
export function scriptedAgent() {
  const createScript: Array<Scripted<CreateRequest, CreateOutcome>> = [];
  const deleteScript: Array<Scripted<string, DeleteOutcome>> = [];
  const statusScript: Array<Scripted<string, InstanceStatusOutcome>> = [];
  const maintenanceScript: Array<Scripted<string, MaintenanceStartOutcome>> = [];
  const validateScript: Array<Scripted<ValidateCall, ValidationCallOutcome>> = [];
  const powerScript: Array<Scripted<string, PowerCallOutcome>> = [];
  const run = async <R, T>(step: Scripted<R, T> | undefined, request: R, otherwise: T): Promise<T> =>
    step === undefined ? otherwise : typeof step === 'function' ? (step as (r: R) => T | Promise<T>)(request) : step;
  const agent = {
    creates: [] as CreateRequest[],
    deletes: [] as string[],
    statuses: [] as string[],
    validations: [] as ValidateCall[],
    /** The next create calls answer these, in order (an outcome, or a function of the request run during the call). */
    willCreate: (...outcomes: Array<Scripted<CreateRequest, CreateOutcome>>) => void createScript.push(...outcomes),
    willDelete: (...outcomes: Array<Scripted<string, DeleteOutcome>>) => void deleteScript.push(...outcomes),
    /** The next status questions answer these, in order; unscripted, the agent still holds the instance (present). */
    willAnswerStatus: (...outcomes: Array<Scripted<string, InstanceStatusOutcome>>) => void statusScript.push(...outcomes),
    /** The next validation requests answer these, in order; unscripted, the agent accepts. */
    willValidate: (...outcomes: Array<Scripted<ValidateCall, ValidationCallOutcome>>) => void validateScript.push(...outcomes),
    async create(request: CreateRequest): Promise<CreateOutcome> {
      agent.creates.push(request);
      return run(createScript.shift(), request, { ok: true, siteName: request.name, attempts: 1 });
    },
    async delete(name: string): Promise<DeleteOutcome> {
      agent.deletes.push(name);
      return run(deleteScript.shift(), name, { kind: 'accepted' });
    },
    async status(name: string): Promise<InstanceStatusOutcome> {
      agent.statuses.push(name);
      return run(statusScript.shift(), name, { kind: 'present' });
    },
    maintenanceStarts: [] as Array<{ machineId: string } & StartMaintenanceRequest>,
    /** The next maintenance starts answer these, in order; unscripted, the agent accepts. */
    willStartMaintenance: (...outcomes: Array<Scripted<string, MaintenanceStartOutcome>>) => void maintenanceScript.push(...outcomes),
    async startMaintenance(machineId: string, request: StartMaintenanceRequest): Promise<MaintenanceStartOutcome> {
      agent.maintenanceStarts.push({ machineId, ...request });
      return run(maintenanceScript.shift(), machineId, { kind: 'accepted' });
    },
    async validate(machineId: string, request: ValidateCall['request']): Promise<ValidationCallOutcome> {
      const call = { machineId, request };
      agent.validations.push(call);
      return run(validateScript.shift(), call, { ok: true });
    },
    powerCalls: [] as Array<{ name: string; action: string }>,
    /** The next power actions answer these, in order; unscripted, the agent accepts. */
    willPower: (...outcomes: Array<Scripted<string, PowerCallOutcome>>) => void powerScript.push(...outcomes),
    async power(name: string, request: { action: string }): Promise<PowerCallOutcome> {
      agent.powerCalls.push({ name, action: request.action });
      return run(powerScript.shift(), name, { kind: 'accepted' });
    },
  } satisfies SiteAgent & Record<string, unknown>;
  return agent;
}

/** What is compared to find which records a change touches. */
export type RecordKind = 'machines' | 'instances' | 'metaInstances' | 'tenants';

/** What a lost race can be injected into: commits touching a kind of record, or the heartbeat's own write. */
export type RaceTarget = RecordKind | 'safety' | 'heartbeat';

interface Interference {
  kind: RaceTarget;
  /** Which commits touching `kind` lose, counting from 1 after loseCommit was called. */
  nth: number;
  /** How many in a row lose; Infinity: every one from `nth` on. */
  times: number;
  /** The rival's write; by default it rewrites the first record of that kind as it is stored, bumping its version. */
  rival?: (store: FleetStore, change: Change | null) => Promise<void>;
}

/**
 * The in-memory store, with lost races on demand: just before a chosen commit reaches the store, a rival writes one
 * of the records it read, so the store itself raises StaleWriteError as it would for a real rival.
 */
export class RacingStore extends MemoryFleetStore {
  private interference: Interference | undefined;
  /** Commits attempted since the last loseCommit, by kind of record touched (a change may count under several). */
  readonly attempts = new Map<string, number>();

  /** From now on, make the `nth` commit touching `kind` (and `times - 1` after it) lose to a rival write. */
  loseCommit(kind: Interference['kind'], options: Partial<Omit<Interference, 'kind'>> = {}): void {
    this.interference = { kind, nth: options.nth ?? 1, times: options.times ?? 1, ...(options.rival ? { rival: options.rival } : {}) };
    this.attempts.clear();
  }

  override async commit(change: Change): Promise<void> {
    for (const kind of kindsOf(change)) await this.race(kind, change);
    return super.commit(change);
  }

  override async putSiteHeartbeat(before: SiteHeartbeat | null, after: Omit<SiteHeartbeat, 'version'>): Promise<SiteHeartbeat> {
    await this.race('heartbeat', null);
    return super.putSiteHeartbeat(before, after);
  }

  private async race(kind: RaceTarget, change: Change | null): Promise<void> {
    const count = (this.attempts.get(kind) ?? 0) + 1;
    this.attempts.set(kind, count);
    const i = this.interference;
    if (i && i.kind === kind && count >= i.nth && count < i.nth + i.times) await (i.rival ?? rewriteFirst(kind))(this.rivalView(), change);
  }

  /** The rival writes around the interference (it must not count, nor lose, itself). */
  private rivalView(): FleetStore {
    const rival = Object.create(this) as RacingStore;
    rival.commit = (change: Change) => MemoryFleetStore.prototype.commit.call(this, change);
    rival.putSiteHeartbeat = (before, after) => MemoryFleetStore.prototype.putSiteHeartbeat.call(this, before, after);
    return rival;
  }
}

function kindsOf(change: Change): RaceTarget[] {
  const kinds: Array<RecordKind | 'safety'> = (['machines', 'instances', 'metaInstances', 'tenants'] as const).filter((k) => (change[k]?.length ?? 0) > 0);
  return change.safety ? [...kinds, 'safety'] : kinds;
}

/** The rival rewrites the record as stored (or creates it first, when the change creates it): its version moves on. */
const rewriteFirst =
  (kind: RaceTarget) =>
  async (store: FleetStore, change: Change | null): Promise<void> => {
    if (kind === 'heartbeat') {
      const before = await store.getSiteHeartbeat();
      const { version: _version, ...kept } = before ?? { rosterSeenAt: iso(new Date(0)), digest: 'rival', machineCount: 0, version: 0 };
      await store.putSiteHeartbeat(before, kept);
      return;
    }
    change = change!;
    if (kind === 'safety') {
      const before = await store.getSafety();
      await store.commit({ safety: { before, after: before ?? change.safety!.after }, history: [] });
      return;
    }
    const wanted = change[kind]![0]!.after;
    const before = await storedCopy(store, kind, wanted);
    await store.commit({ [kind]: [{ before, after: before ?? wanted }], history: [] } as Change);
  };

function storedCopy(store: FleetStore, kind: RecordKind, record: { id?: string; org?: string }): Promise<unknown> {
  if (kind === 'machines') return store.getMachine(record.id!);
  if (kind === 'instances') return store.getInstance(record.id!);
  if (kind === 'metaInstances') return store.getMetaInstance(record.id!);
  return store.getTenant(record.org!);
}

/** A clock the test moves. */
export function testClock(start: Date = NOW) {
  let now = start.getTime();
  return {
    now: () => new Date(now),
    advance: (ms: number) => void (now += ms),
  };
}

/**
 * Fast create retries, as in the other test tiers; no validated return (the scripted agent never reports; tests of
 * validation pass a config that turns it on); everything else as a site's defaults.
 */
export const SERVICE_TEST_CONFIG = `
[instance_create_retry]
base_delay_ms = 10
timeout_ms = 2000
`;
const WITHOUT_VALIDATION = `${SERVICE_TEST_CONFIG}[validation]\nafter = []\n`;

export interface Harness {
  ctx: AppContext;
  store: RacingStore;
  clock: ReturnType<typeof testClock>;
  agent: ReturnType<typeof scriptedAgent>;
  events: PublishedEvent[];
  logged: Array<{ level: string; message: string; fields?: Record<string, unknown> | undefined }>;
  /** Site-wide gauges by name. */
  gauges: Map<string, number>;
  /** Every figure recorded, dimensions and all. */
  metrics: PrometheusMetrics;
}

/**
 * A service context over a fresh in-memory store, the clock at fixtures.ts's NOW, ids counting up per prefix. With
 * `indexLagMs`, index reads lag the table by that long on the test's clock (AWS's GSIs; see MemoryStoreOptions).
 * `configToml` is the site's config; by default no event starts a validation (`[validation] after = []`).
 */
export function harness(options: { indexLagMs?: number; configToml?: string } = {}): Harness {
  const clock = testClock();
  const store = new RacingStore(dueTimes, { indexLagMs: options.indexLagMs ?? 0, now: () => clock.now().getTime() });
  const agent = scriptedAgent();
  const events: PublishedEvent[] = [];
  const logged: Harness['logged'] = [];
  const gauges = new Map<string, number>();
  const metrics = prometheusMetrics();
  const counters = new Map<string, number>();
  const publisher: EventPublisher = { publish: async (event) => void events.push(event) };
  const log = (level: string) => (message: string, fields?: Record<string, unknown>) => void logged.push({ level, message, fields });
  const ctx: AppContext = {
    store,
    config: parseSiteConfig(options.configToml ?? WITHOUT_VALIDATION, 'service test config'),
    clock,
    ids: {
      next: (prefix) => {
        const n = (counters.get(prefix) ?? 0) + 1;
        counters.set(prefix, n);
        return `${prefix}-${n}`;
      },
    },
    agent,
    events: publisher,
    metrics: {
      ...metrics,
      gauge: (name, value, dimensions) => {
        if (!dimensions) gauges.set(name, value);
        metrics.gauge(name, value, dimensions);
      },
    },
    log: { info: log('info'), warn: log('warn'), error: log('error') },
  };
  return { ctx, store, clock, agent, events, logged, gauges, metrics };
}

export const tenant = (org = 'acme', sub = 'alice'): Principal => ({ sub, org, roles: ['tenant'] });

/**
 * A site as the services see it after setup: machines registered through the service (catalog and all), then one
 * heartbeat from the agent listing them, so they are live. Machine ids are `<type>-<n>`, on racks r1 and r2 in turn.
 */
export async function siteWith(h: Harness, fleet: Record<string, number>): Promise<void> {
  const registrations = Object.entries(fleet).flatMap(([machineType, count]) =>
    Array.from({ length: count }, (_, i) => ({ id: `${machineType}-${i + 1}`, machineType, rack: `r${(i % 2) + 1}` })),
  );
  await registerMachines(h.ctx, registrations, ops);
  await beat(
    h,
    registrations.map((r) => r.id),
  );
}

/** The agent's beat (with the alerts it reports, by machine) and the stream's reaction to it: the roster buckets it changed are walked. */
export async function beat(h: Harness, machineIds: string[], alerts: Record<string, AgentAlert[]> = {}): Promise<Awaited<ReturnType<typeof receiveHeartbeat>>> {
  const result = await receiveHeartbeat(h.ctx, machineIds, new Map(Object.entries(alerts)));
  await startRun(h.ctx).reconcile(result.changedBuckets.map((id) => ({ entity: 'roster-bucket', id })));
  return result;
}

/** The Rejection a service answered with (the HTTP layer turns it into problem+json). */
export async function rejection(promise: Promise<unknown>): Promise<Rejection> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(Rejection);
  return error as Rejection;
}

/** One reconcile of an entity, as a stream reaction runs it: with whatever its commits lead to, each entity once. */
export const reconcile = (ctx: AppContext, ref: EntityRef): Promise<void> => startRun(ctx).reconcile([ref]);
