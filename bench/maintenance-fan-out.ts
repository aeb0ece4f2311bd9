import { setTimeout as sleep } from 'node:timers/promises';
import { parseSiteConfig } from '#config/site-config.ts';
import type { Maintenance } from '#domain/maintenance/maintenance.ts';
import type { Instance } from '#domain/core/model.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import { createDocumentClient } from '#store/client.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { limiter } from '#store/in-parallel.ts';
import { fastSiteToml, startBenchSite, warnsOrFails } from './site.ts';
import { siteStartFloorMs } from './site-start-floor.ts';
import { ratio, round } from './stats.ts';

// Declared maintenance at site scale: a provider declares maintenance on whole racks, `scope` machines of a site of
// `machines`, while tenants of several orgs hold `held` of them. Measured: the declaration's answer (within the API's
// deadline, whatever the scope), then from that answer until every free machine in scope is out of allocation and
// until every held instance carries the notice, as the maintenance reconciler fans it out. Each time is judged as a
// ratio to the floor of the same number of plain machine writes (one PutItem each, as many in flight as the runner
// sends separate writes: site-start-floor.ts), measured on the same DynamoDB Local in the same run.

export interface MaintenanceFanOutOptions {
  machines: number;
  /** Machines per rack: the scope is whole racks. */
  rackSize: number;
  scope: number;
  held: number;
  orgs: number;
  sweepIntervalMs: number;
  pollMs: number;
}

export const defaultMaintenanceFanOutOptions: MaintenanceFanOutOptions = {
  machines: 10_000,
  rackSize: 8,
  scope: 1_000,
  held: 100,
  orgs: 10,
  sweepIntervalMs: 5_000,
  pollMs: 20,
};

/** Each API call runs for at most this long (docs/api.md: the function's timeout). */
const API_DEADLINE_MS = 10_000;
const MACHINE_TYPE = 'gb200';
const CREATES_AT_ONCE = 8;
const CREATE_ROUNDS = 5;

const siteToml = (o: MaintenanceFanOutOptions) =>
  fastSiteToml({ name: 'bench-maintenance', machineType: MACHINE_TYPE, machines: o.machines, racks: o.machines / o.rackSize, heartbeatIntervalSeconds: 5 });

export async function maintenanceFanOut(endpoint: string, id: string, o: MaintenanceFanOutOptions, progress: (line: string) => void) {
  if (o.machines % o.rackSize !== 0 || o.scope % o.rackSize !== 0) throw new Error('bench maintenance: machines and scope must be whole racks');
  const tableName = `bench-maintenance-${id}`;
  const { site, siteLog } = await startBenchSite({
    endpoint,
    tableName,
    toml: siteToml(o),
    sweepIntervalMs: o.sweepIntervalMs,
    onLine: (line) => warnsOrFails(line) && progress(`maintenance site: ${line}`),
  });
  let measured: Awaited<ReturnType<typeof measure>>;
  try {
    measured = await measure();
  } finally {
    await site.stop();
  }
  // After the site, on the JVM it warmed up: a fresh DynamoDB Local writes several times slower for its first minute.
  const floorMs = await siteStartFloorMs(endpoint, id, [{ type: MACHINE_TYPE, count: o.scope, racks: o.scope / o.rackSize }]);
  progress(`maintenance: the floor, ${o.scope} plain machine writes: ${floorMs} ms`);
  const { freeOutMs, noticedMs, ...rest } = measured;
  return {
    ...rest,
    free_out_of_allocation_ms: freeOutMs,
    held_noticed_ms: noticedMs,
    floor: { plain_machine_writes: o.scope, ms: floorMs, how: 'one PutItem per machine item, as many in flight as the runner sends separate writes' },
    ratio_free_out_to_floor: ratio(freeOutMs, floorMs),
    ratio_noticed_to_floor: ratio(noticedMs, floorMs),
  };

  async function measure() {
    const observer = new DynamoFleetStore(createDocumentClient(endpoint), tableName, dueTimes);
    const admin = await site.issuer.mint({ sub: 'bench-ops', org: 'provider', roles: ['provider-admin'] }, '6h');
    /** A call that must succeed; a 503 (the site busy registering the fleet on a loaded host) is asked again. */
    const call = async (method: string, path: string, token: string, body?: unknown): Promise<Record<string, unknown>> => {
      const response = await fetch(`${site.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      if (response.status === 503) {
        await sleep(Number(response.headers.get('retry-after') ?? 1) * 1000);
        return call(method, path, token, body);
      }
      if (!response.ok) throw new Error(`bench maintenance: ${method} ${path} answered ${response.status}: ${text}`);
      return JSON.parse(text) as Record<string, unknown>;
    };
    const until = async <T>(what: string, check: () => Promise<T | undefined>, timeoutMs: number, pollMs = o.pollMs): Promise<T> => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const value = await check();
        if (value !== undefined) return value;
        if (Date.now() > deadline) throw new Error(`bench maintenance: ${what} not within ${timeoutMs} ms; site log:\n${siteLog.join('\n')}`);
        await sleep(pollMs);
      }
    };

    // The fleet live, and the summary's rack items (which resolve a rack) holding all of it.
    await until(
      'every machine allocatable',
      async () => {
        const summary = await call('GET', '/admin/fleet/summary', admin);
        return summary.machines === o.machines && summary.allocatable === o.machines ? true : undefined;
      },
      120_000 + o.machines * 50,
      1_000,
    );
    progress(`maintenance: ${o.machines} machines allocatable`);

    // Tenants of `orgs` orgs hold `held` machines; the scope is their racks, and more whole racks up to `scope`.
    const siteConfig = parseSiteConfig(siteToml(o), 'bench maintenance site');
    const orgs = Array.from({ length: o.orgs }, (_, i) => `bench-org-${i}`);
    const tokens = new Map(
      await Promise.all(orgs.map(async (org) => [org, await site.issuer.mint({ sub: `${org}-tenant`, org, roles: ['tenant'] }, '6h')] as const)),
    );
    const slot = limiter(CREATES_AT_ONCE);
    const create = (n: number) =>
      slot(async () => {
        const org = orgs[n % orgs.length]!;
        return String((await call('POST', `/v2/org/${org}/nico/instance`, tokens.get(org)!, { machineType: MACHINE_TYPE })).id);
      });
    // A create a loaded host times out ends Failed: the shortfall is asked for again, a few rounds at most.
    const ready: Instance[] = [];
    for (let round = 0; ready.length < o.held && round < CREATE_ROUNDS; round++) {
      const ids = await Promise.all(Array.from({ length: o.held - ready.length }, (_, i) => create(ready.length + i)));
      const settled = await until(
        'the creates settled',
        async () => {
          const read = [...(await observer.getRecords({ instances: ids })).instances.values()];
          return read.every((i) => i.status !== 'Provisioning') ? read : undefined;
        },
        60_000 + o.held * 2_000,
        250,
      );
      ready.push(...settled.filter((i) => i.status === 'Ready'));
    }
    if (ready.length < o.held) throw new Error(`bench maintenance: ${ready.length} of ${o.held} instances Ready after ${CREATE_ROUNDS} rounds`);
    const instanceIds = ready.map((i) => i.id);
    progress(`maintenance: ${o.held} instances of ${o.orgs} orgs Ready`);
    const targets = ready.map((i) => i.machineId);
    const heldRacks = new Set([...(await observer.getMachines(targets)).values()].map((m) => m.rack));
    const allRacks = Array.from({ length: o.machines / o.rackSize }, (_, i) => `rack-${i + 1}`);
    const racks = [...heldRacks, ...allRacks.filter((r) => !heldRacks.has(r))].slice(0, o.scope / o.rackSize);
    if (heldRacks.size > racks.length) throw new Error(`bench maintenance: the held machines span ${heldRacks.size} racks, more than the scope's`);
    const inScope = [
      ...(
        await observer.getSummaryItems(
          racks.map((rack) => ({ machineType: MACHINE_TYPE, rack })),
          [],
        )
      ).racks,
    ].flatMap((r) => Object.keys(r.machines));
    if (inScope.length !== o.scope) throw new Error(`bench maintenance: ${inScope.length} machines in the scope's racks, not ${o.scope}`);
    const heldMachines = new Set(targets);
    const freeMachines = inScope.filter((m) => !heldMachines.has(m));

    // The declaration, timed as its caller sees it; then the fan-out, watched on the maintenance record.
    const declaredAt = performance.now();
    const declared = await call('POST', '/admin/maintenance', admin, {
      kind: 'planned',
      category: 'facility',
      reason: 'PDU replacement',
      scope: { racks },
      handBackBy: new Date(Date.now() + (siteConfig.maintenance.min_hand_back_days + 1) * 86_400_000).toISOString(),
      windowMinutes: 240,
      rollout: { maxInFlight: o.rackSize },
    });
    const answeredAt = performance.now();
    const maintenanceId = String(declared.id);
    const told = (m: Maintenance, ids: readonly string[]) => ids.every((machineId) => m.machineIds.indexOf(machineId) < m.progress.fannedOut);
    let freeOutAt: number | undefined;
    let noticedAt: number | undefined;
    const record = await until(
      'the fan-out',
      async () => {
        const m = (await observer.getMaintenances([maintenanceId])).get(maintenanceId)!;
        const now = performance.now();
        if (freeOutAt === undefined && told(m, freeMachines)) freeOutAt = now;
        if (noticedAt === undefined && told(m, targets)) noticedAt = now;
        return freeOutAt !== undefined && noticedAt !== undefined ? m : undefined;
      },
      120_000,
    );
    progress(`maintenance: declared in ${round(answeredAt - declaredAt, 1)} ms; fanned out in ${round(Math.max(freeOutAt!, noticedAt!) - answeredAt, 1)} ms`);
    // Through the stream and the bus, which a loaded host can hold up for a minute or more.
    const orgsToldAt = await until(
      'MaintenanceDeclared to every org',
      async () => (site.events.delivered.filter((e) => e.type === 'MaintenanceDeclared').length >= o.orgs ? performance.now() : undefined),
      600_000,
      250,
    );

    // What the record says, checked on the records themselves once.
    const stillAllocatable = (await observer.allocatableMachineIds(MACHINE_TYPE, o.machines)).filter((m) => record.machineIds.includes(m));
    const instances = [...(await observer.getRecords({ instances: instanceIds })).instances.values()];
    const withoutNotice = instances.filter((i) => i.maintenance?.id !== maintenanceId).map((i) => i.id);
    const ms = (from: number, to: number) => round(to - from, 1);
    return {
      config: { machines: o.machines, scope: o.scope, scope_racks: racks.length, held: o.held, orgs: o.orgs, rack_size: o.rackSize },
      declare_ms: { value: ms(declaredAt, answeredAt), deadline: API_DEADLINE_MS, within_deadline: answeredAt - declaredAt <= API_DEADLINE_MS },
      freeOutMs: ms(answeredAt, freeOutAt!),
      noticedMs: ms(answeredAt, noticedAt!),
      orgs_told_ms: ms(answeredAt, orgsToldAt),
      checked: { scope_machines_still_allocatable: stillAllocatable.length, held_instances_without_notice: withoutNotice.length },
    };
  }
}

export type MaintenanceFanOutResult = Awaited<ReturnType<typeof maintenanceFanOut>>;
