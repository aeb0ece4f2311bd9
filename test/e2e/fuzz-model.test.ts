import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { preventingSources } from '#domain/core/health.ts';
import type { HealthOverride } from '#domain/core/model.ts';
import { demoFleet } from '#local/site-agent/demo-fleet.ts';
import { fuzzSettings } from '#test/support/fuzz.ts';
import { scanTable, startTestSite, testConfig, type TestSite } from '#test/support/local-site.ts';
import { actors, waitForFleet, type Actors } from '#test/support/repair-steps.ts';

// Model-based runs: random interleavings of what tenants, repair tenants, operators and the site agent do, each
// checked against a small reference model, with the stream's reconcilers run to quiescence after every command.
// After every command the whole table must satisfy the fleet's invariants. FUZZ_RUNS / FUZZ_SEED widen or replay.

const fleet = `
[instance_create_retry]
base_delay_ms = 10
[repair_storm]
max_quarantines = 1000
max_fraction = 1
[simulator]
machines = [ { type = "gb200", count = 4, racks = 2 }, { type = "h100", count = 2, racks = 1 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 10
cleanup_ms = 10
`;
const machineIds = demoFleet(testConfig(fleet).simulator.machines).map((m) => m.id);
/** Admin templates this test adds and removes; the repair workflow's own sources come and go through its commands. */
const adminTemplates = { degraded: 'degraded', 'internal-maintenance': 'internal-maintenance' } as const;

interface Held {
  id: string;
  machineId: string;
  released: boolean;
}
interface Model {
  acme: Held[];
  fixit: Held[];
  metas: Array<{ id: string; deleted: boolean }>;
  overrides: Set<string>;
}
interface Real {
  site: TestSite;
  who: Actors;
}

const live = (held: Held[]) => held.filter((h) => !h.released);
const pick = <T>(items: T[], index: number): T => items[index % items.length]!;
const issue = { category: 'HARDWARE', summary: 'fuzzed fault' };

function expectStatus(response: { status: number; body: unknown }, allowed: number[], what: string) {
  expect(allowed, `${what} → ${response.status} ${JSON.stringify(response.body)}`).toContain(response.status);
}

/** Neither tenant's model holds the machine any more (or never did). */
const heldInModel = (m: Model, machineId: string) => [...live(m.acme), ...live(m.fixit)].some((h) => h.machineId === machineId);

// ---- commands ------------------------------------------------------------------------------------------------

class CreateInstance implements fc.AsyncCommand<Model, Real> {
  readonly machineType: 'gb200' | 'h100';
  constructor(machineType: 'gb200' | 'h100') {
    this.machineType = machineType;
  }
  check = () => true;
  async run(m: Model, { site, who }: Real) {
    const created = await site.call('POST', '/v2/org/acme/nico/instance', { token: who.tenant, body: { machineType: this.machineType } });
    expectStatus(created, [201, 409], 'create');
    if (created.status !== 201) return;
    expect(heldInModel(m, created.body.machineId), `machine ${created.body.machineId} handed out while held`).toBe(false);
    m.acme.push({ id: created.body.id, machineId: created.body.machineId, released: false });
  }
  toString = () => `create(${this.machineType})`;
}

class ReleaseWithIssue implements fc.AsyncCommand<Model, Real> {
  readonly index: number;
  constructor(index: number) {
    this.index = index;
  }
  check = (m: Readonly<Model>) => m.acme.length > 0;
  async run(m: Model, { site, who }: Real) {
    const target = pick(m.acme, this.index);
    const released = await site.call('DELETE', `/v2/org/acme/nico/instance/${target.id}`, { token: who.tenant, body: { machineHealthIssue: issue } });
    // Already released: 200 and nothing new; otherwise the release starts now.
    expectStatus(released, target.released ? [200] : [202], `release ${target.id}`);
    target.released = true;
  }
  toString = () => `release-with-issue(#${this.index})`;
}

/** A tenant runs an instance and hands it back with a fault at once: what puts machines up for repair. */
class ReportFault implements fc.AsyncCommand<Model, Real> {
  readonly machineType: 'gb200' | 'h100';
  constructor(machineType: 'gb200' | 'h100') {
    this.machineType = machineType;
  }
  check = () => true;
  async run(m: Model, real: Real) {
    const before = m.acme.length;
    await new CreateInstance(this.machineType).run(m, real);
    if (m.acme.length > before) await new ReleaseWithIssue(m.acme.length - 1).run(m, real);
  }
  toString = () => `report-fault(${this.machineType})`;
}

type AdminMachine = { id: string; instanceId?: string; state: string };

class RepairClaim implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, { site, who }: Real) {
    const awaiting = async () => (await site.call('GET', '/admin/machines?healthOverride=repair-request', { token: who.admin })).body.items as AdminMachine[];
    // A machine just released with a fault is cleaned first; give the simulated agent a moment to finish.
    const inCleanup = (await awaiting()).some((x) => x.state === 'Cleanup');
    const free = inCleanup
      ? await site.eventually(async () => (await awaiting()).find((x) => x.state === 'Ready' && !x.instanceId), 2_000).catch(() => undefined)
      : (await awaiting()).find((x) => x.state === 'Ready' && !x.instanceId);
    if (!free) return;
    const created = await site.call('POST', '/v2/org/fixit/nico/instance', { token: who.repairer, body: { machineId: free.id } });
    // The machine can be taken between the listing and the claim (a meta-instance does not take quarantined ones).
    expectStatus(created, [201, 409], `claim ${free.id}`);
    if (created.status !== 201) return;
    expect(heldInModel(m, free.id), `machine ${free.id} claimed while held`).toBe(false);
    m.fixit.push({ id: created.body.id, machineId: free.id, released: false });
  }
  toString = () => 'repair-claim';
}

class RepairLabel implements fc.AsyncCommand<Model, Real> {
  readonly index: number;
  readonly status: 'InProgress' | 'Completed';
  constructor(index: number, status: 'InProgress' | 'Completed') {
    this.index = index;
    this.status = status;
  }
  check = (m: Readonly<Model>) => live(m.fixit).length > 0;
  async run(m: Model, { site, who }: Real) {
    const target = pick(live(m.fixit), this.index);
    const patched = await site.call('PATCH', `/v2/org/fixit/nico/machine/${target.machineId}`, {
      token: who.repairer,
      body: { labels: { repair_status: this.status } },
    });
    expectStatus(patched, [200], `label ${target.machineId} ${this.status}`);
  }
  toString = () => `repair-label(#${this.index}, ${this.status})`;
}

class RepairRelease implements fc.AsyncCommand<Model, Real> {
  readonly index: number;
  constructor(index: number) {
    this.index = index;
  }
  check = (m: Readonly<Model>) => live(m.fixit).length > 0;
  async run(m: Model, { site, who }: Real) {
    const target = pick(live(m.fixit), this.index);
    const released = await site.call('DELETE', `/v2/org/fixit/nico/instance/${target.id}`, { token: who.repairer, body: { isRepairTenant: true } });
    expectStatus(released, [202], `repair release ${target.id}`);
    target.released = true;
  }
  toString = () => `repair-release(#${this.index})`;
}

class AddOverride implements fc.AsyncCommand<Model, Real> {
  readonly machineId: string;
  readonly template: keyof typeof adminTemplates;
  constructor(machineId: string, template: keyof typeof adminTemplates) {
    this.machineId = machineId;
    this.template = template;
  }
  check = () => true;
  async run(m: Model, { site, who }: Real) {
    const added = await site.call('POST', `/admin/machines/${this.machineId}/health-overrides`, { token: who.admin, body: { template: this.template } });
    expectStatus(added, [201], `add ${this.template} on ${this.machineId}`);
    expect(added.body.source).toBe(adminTemplates[this.template]);
    m.overrides.add(`${this.machineId}|${adminTemplates[this.template]}`);
  }
  toString = () => `add-override(${this.machineId}, ${this.template})`;
}

class RemoveOverride implements fc.AsyncCommand<Model, Real> {
  readonly index: number;
  constructor(index: number) {
    this.index = index;
  }
  check = (m: Readonly<Model>) => m.overrides.size > 0;
  async run(m: Model, { site, who }: Real) {
    const entry = pick([...m.overrides].sort(), this.index);
    const [machineId, source] = entry.split('|') as [string, string];
    const removed = await site.call('DELETE', `/admin/machines/${machineId}/health-overrides/${source}`, { token: who.admin });
    expectStatus(removed, [204], `remove ${source} from ${machineId}`);
    m.overrides.delete(entry);
    const after = await site.call('GET', `/admin/machines/${machineId}/health-overrides`, { token: who.admin });
    expect((after.body.items as HealthOverride[]).map((o) => o.source)).not.toContain(source);
  }
  toString = () => `remove-override(#${this.index})`;
}

class CreateMeta implements fc.AsyncCommand<Model, Real> {
  readonly machineType: 'gb200' | 'h100';
  readonly minNodes: 1 | 2;
  constructor(machineType: 'gb200' | 'h100', minNodes: 1 | 2) {
    this.machineType = machineType;
    this.minNodes = minNodes;
  }
  check = () => true;
  async run(m: Model, { site, who }: Real) {
    const created = await site.call('POST', '/v2/org/acme/nico/meta-instance', {
      token: who.tenant,
      body: { machineType: this.machineType, minNodes: this.minNodes },
    });
    expectStatus(created, [201], `meta ${this.machineType}×${this.minNodes}`);
    m.metas.push({ id: created.body.id, deleted: false });
  }
  toString = () => `create-meta(${this.machineType}, ${this.minNodes})`;
}

class DeleteMeta implements fc.AsyncCommand<Model, Real> {
  readonly index: number;
  constructor(index: number) {
    this.index = index;
  }
  check = (m: Readonly<Model>) => m.metas.some((x) => !x.deleted);
  async run(m: Model, { site, who }: Real) {
    const target = pick(
      m.metas.filter((x) => !x.deleted),
      this.index,
    );
    const deleted = await site.call('DELETE', `/v2/org/acme/nico/meta-instance/${target.id}`, { token: who.tenant });
    expectStatus(deleted, [202], `delete meta ${target.id}`);
    target.deleted = true;
  }
  toString = () => `delete-meta(#${this.index})`;
}

class Heartbeat implements fc.AsyncCommand<Model, Real> {
  readonly machineId: string;
  readonly stopped: boolean;
  constructor(machineId: string, stopped: boolean) {
    this.machineId = machineId;
    this.stopped = stopped;
  }
  check = () => true;
  async run(_m: Model, { site }: Real) {
    const response = await site.call('POST', `/_sim/machines/${this.machineId}/heartbeat`, { body: { stopped: this.stopped } });
    expectStatus(response, [200], `heartbeat ${this.stopped ? 'stop' : 'start'} ${this.machineId}`);
  }
  toString = () => `heartbeat-${this.stopped ? 'stop' : 'start'}(${this.machineId})`;
}

/** After every command the stream's reconcilers run to quiescence; then the invariants must hold. */
const settled = (command: fc.AsyncCommand<Model, Real>): fc.AsyncCommand<Model, Real> => {
  const run = command.run.bind(command);
  command.run = async (m, r) => {
    await run(m, r);
    await r.site.streamIdle();
    await checkInvariants(r.site, command.toString());
  };
  return command;
};

const machine = fc.constantFrom(...machineIds);
const machineType = fc.constantFrom('gb200' as const, 'h100' as const);
const index = fc.nat({ max: 7 });
// Claims listed twice: a repair needs a fault, then a claim, before labels and a repair release matter.
const releaseWithIssue = index.map((i) => new ReleaseWithIssue(i));
const repairClaim = fc.constant(null).map(() => new RepairClaim());
const commands = [
  machineType.map((t) => new CreateInstance(t)),
  releaseWithIssue,
  machineType.map((t) => new ReportFault(t)),
  repairClaim,
  repairClaim,
  fc.tuple(index, fc.constantFrom('InProgress' as const, 'Completed' as const)).map(([i, s]) => new RepairLabel(i, s)),
  index.map((i) => new RepairRelease(i)),
  fc.tuple(machine, fc.constantFrom(...(Object.keys(adminTemplates) as Array<keyof typeof adminTemplates>))).map(([id, t]) => new AddOverride(id, t)),
  index.map((i) => new RemoveOverride(i)),
  fc.tuple(machineType, fc.constantFrom(1 as const, 2 as const)).map(([t, n]) => new CreateMeta(t, n)),
  index.map((i) => new DeleteMeta(i)),
  fc.tuple(machine, fc.boolean()).map(([id, stopped]) => new Heartbeat(id, stopped)),
].map((arbitrary) => arbitrary.map(settled));

// ---- invariants over the whole table -------------------------------------------------------------------------

type Item = Record<string, any>;

async function checkInvariants(site: TestSite, after: string) {
  const items = (await scanTable(site)) as Item[];
  const machines = items.filter((i) => i.sk === '#MACHINE');
  const instances = items.filter((i) => i.sk === '#INSTANCE');
  const metas = new Map(items.filter((i) => i.sk === '#META').map((i) => [i.id as string, i]));
  const context = (what: string, offenders: unknown[]) => `${what} after ${after}: ${JSON.stringify(offenders)}`;

  const holding = instances.filter((i) => i.status !== 'Terminated' && i.status !== 'Failed');
  const byMachine = new Map<string, Item[]>();
  for (const i of holding) byMachine.set(i.machineId, [...(byMachine.get(i.machineId) ?? []), i]);
  const heldTwice = [...byMachine].filter(([, held]) => held.length > 1).map(([id, held]) => ({ id, instances: held.map((i) => `${i.id} ${i.status}`) }));
  expect(heldTwice, context('no machine held twice', heldTwice)).toEqual([]);
  const instanceById = new Map(instances.map((i) => [i.id as string, i]));
  const mismatched = machines.filter((mc) => mc.instanceId && instanceById.get(mc.instanceId)?.machineId !== mc.id).map((mc) => `${mc.id} → ${mc.instanceId}`);
  expect(mismatched, context("a machine's instance runs on that machine", mismatched)).toEqual([]);

  const orphans = instances
    .filter((i) => i.metaInstanceId && ['Provisioning', 'Ready', 'Repairing'].includes(i.status))
    .filter((i) => !metas.has(i.metaInstanceId) || ['Deleting', 'Deleted'].includes(metas.get(i.metaInstanceId)!.status))
    .map((i) => `${i.id} of ${i.metaInstanceId}`);
  expect(orphans, context('no orphaned member', orphans)).toEqual([]);

  const sourceless = machines.flatMap((mc) =>
    (mc.healthOverrides as HealthOverride[]).filter((o) => typeof o.source !== 'string' || o.source === '').map(() => mc.id),
  );
  expect(sourceless, context('every override has a source', sourceless)).toEqual([]);

  const allocatableButPrevented = machines
    .filter((mc) => mc.allocPk && preventingSources(mc.healthOverrides).length > 0)
    .map((mc) => `${mc.id}: ${preventingSources(mc.healthOverrides).join(',')}`);
  expect(allocatableButPrevented, context('no allocatable machine carries a PreventAllocations override', allocatableButPrevented)).toEqual([]);
}

// ---- the run -------------------------------------------------------------------------------------------------

let site: TestSite;
let who: Actors;

beforeAll(async () => {
  site = await startTestSite({ config: testConfig(fleet) });
  who = await actors(site);
  await waitForFleet(site, who.admin, machineIds.length);
}, 120_000);
afterAll(async () => site?.stop());

/** Back to a healthy, idle fleet between runs: what the previous run left is released, removed or restarted. */
async function quiesce() {
  const call = (method: string, path: string, token: string, body?: unknown) => site.call(method, path, { token, ...(body ? { body } : {}) });
  for (const [org, token, body] of [
    ['acme', who.tenant, undefined],
    ['fixit', who.repairer, { isRepairTenant: true }],
  ] as const) {
    const listed = await call('GET', `/v2/org/${org}/nico/instance?limit=500`, token);
    for (const instance of listed.body.items.filter((i: Item) => !['Terminating', 'Terminated', 'Failed'].includes(i.status))) {
      await call('DELETE', `/v2/org/${org}/nico/instance/${instance.id}`, token, body);
    }
  }
  const metas = await call('GET', '/v2/org/acme/nico/meta-instance?limit=500', who.tenant);
  for (const meta of metas.body.items.filter((x: Item) => !['Deleting', 'Deleted'].includes(x.status)))
    await call('DELETE', `/v2/org/acme/nico/meta-instance/${meta.id}`, who.tenant);
  for (const id of machineIds) {
    await site.call('POST', `/_sim/machines/${id}/heartbeat`, { body: { stopped: false } });
    const overrides = await call('GET', `/admin/machines/${id}/health-overrides`, who.admin);
    for (const o of overrides.body.items as HealthOverride[]) await call('DELETE', `/admin/machines/${id}/health-overrides/${o.source}`, who.admin);
    await call('PATCH', `/admin/machines/${id}/labels`, who.admin, { labels: { repair_status: null } });
  }
  await site.streamIdle();
}

describe('model-based runs', () => {
  it('keep the fleet invariants after every command, and every answer matches the model', { timeout: 300_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 12, size: 'medium' }), async (cmds) => {
        await quiesce();
        const setup = () => ({ model: { acme: [], fixit: [], metas: [], overrides: new Set<string>() } as Model, real: { site, who } });
        await fc.asyncModelRun(setup, cmds);
      }),
      fuzzSettings('fuzz-model', 6),
    );
  });
});
