import { expect } from 'vitest';
import { startTestSite, type TestSite } from './local-site.ts';

// The steps of the repair workflow as a tenant, a repair tenant and an operator take them over HTTP.

export interface Actors {
  tenant: string;
  repairer: string;
  admin: string;
}

export async function actors(site: TestSite): Promise<Actors> {
  const admin = await site.token('provider', ['provider-admin']);
  const repairer = await site.token('fixit', ['tenant'], 'repair-bot');
  await site.call('PUT', '/admin/tenants/fixit', { token: admin, body: { capabilities: { targetedInstanceCreation: true } } });
  return { tenant: await site.token('acme', ['tenant']), repairer, admin };
}

/**
 * Until `count` machines are listed allocatable: a readiness wait, as long as the site's own start waits for
 * commissioning (a loaded host, or AWS's semantics throttling the listing, take a while); an answer that is not a
 * listing (a 503 throttled) is asked again.
 */
export async function waitForFleet(site: TestSite, admin: string, count: number) {
  const listed = async () => (await site.call('GET', '/admin/machines?allocatable=true&limit=500', { token: admin })).body?.items?.length ?? 0;
  await site.eventually(async () => (await listed()) >= count, 60_000);
}

/** A test site (with `overrides` of its options) and its actors, once at least `count` machines are allocatable. */
export async function readySite(count: number, overrides: Parameters<typeof startTestSite>[0] = {}): Promise<{ site: TestSite; who: Actors }> {
  const site = await startTestSite(overrides);
  const who = await actors(site);
  await waitForFleet(site, who.admin, count);
  return { site, who };
}

export async function instanceStatus(site: TestSite, token: string, org: string, id: string, status: string) {
  return site.eventually(async () => {
    const { body } = await site.call('GET', `/v2/org/${org}/nico/instance/${id}`, { token });
    return body.status === status ? body : undefined;
  });
}

export async function machine(site: TestSite, admin: string, id: string) {
  return (await site.call('GET', `/admin/machines/${id}`, { token: admin })).body;
}

/** Wait until the site agent has sanitized the machine (it is back in state Ready, whatever its overrides). */
export async function cleanedUp(site: TestSite, admin: string, id: string) {
  return site.eventually(async () => {
    const m = await machine(site, admin, id);
    return m.state === 'Ready' ? m : undefined;
  });
}

type Delivered = { type: string; detail: Record<string, any> };

/** The events of one type (about one machine) the site's bus has delivered: what repair automation was told. */
/** Events of a type as a consumer sees them: delivery is at least once, so redeliveries are deduped on `id`. */
export const deliveredOf = (site: TestSite, type: string, machineId?: string): Delivered[] => {
  const matching = site.events.delivered.filter((e) => e.type === type && (machineId === undefined || e.detail.machineId === machineId));
  return [...new Map(matching.map((e) => [e.detail.id, e])).values()] as Delivered[];
};

export const sources = (m: { healthOverrides: Array<{ source: string }> }) => m.healthOverrides.map((o) => o.source).sort();

/**
 * A tenant runs an instance on a machine of `type`; returns the instance once Ready. The create picks from the
 * allocatable index, so it waits until that shows the machines the test just freed.
 */
export async function runInstance(site: TestSite, who: Actors, type = 'gb200') {
  await site.indexesCaughtUp();
  const created = await site.call('POST', '/v2/org/acme/nico/instance', { token: who.tenant, body: { machineType: type } });
  expect(created.status).toBe(201);
  return instanceStatus(site, who.tenant, 'acme', created.body.id, 'Ready');
}

/** A tenant releases its instance reporting an issue; returns the machine id once cleanup is done. */
export async function reportIssue(
  site: TestSite,
  who: Actors,
  issue: { category: string; summary: string; details?: string } = { category: 'hardware', summary: 'ECC errors', details: 'DIMM 2' },
) {
  const instance = await runInstance(site, who);
  const released = await site.call('DELETE', `/v2/org/acme/nico/instance/${instance.id}`, { token: who.tenant, body: { machineHealthIssue: issue } });
  expect(released.status).toBe(202);
  await instanceStatus(site, who.tenant, 'acme', instance.id, 'Terminated');
  await cleanedUp(site, who.admin, instance.machineId);
  return instance.machineId as string;
}

/** A repair tenant claims the machine by targeted creation and marks the repair InProgress. */
export async function claimForRepair(site: TestSite, who: Actors, machineId: string) {
  const created = await site.call('POST', '/v2/org/fixit/nico/instance', { token: who.repairer, body: { machineId } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  await instanceStatus(site, who.repairer, 'fixit', created.body.id, 'Ready');
  await setRepairStatus(site, who, machineId, 'InProgress');
  return created.body.id as string;
}

export async function setRepairStatus(site: TestSite, who: Actors, machineId: string, status: string | null) {
  const patched = await site.call('PATCH', `/v2/org/fixit/nico/machine/${machineId}`, { token: who.repairer, body: { labels: { repair_status: status } } });
  expect(patched.status, JSON.stringify(patched.body)).toBe(200);
}

/** A repair tenant's release; returns the machine once cleaned up and, when the release started one, validated. */
export async function repairRelease(site: TestSite, who: Actors, instanceId: string, machineId: string, issue?: unknown) {
  const released = await site.call('DELETE', `/v2/org/fixit/nico/instance/${instanceId}`, {
    token: who.repairer,
    body: { isRepairTenant: true, ...(issue ? { machineHealthIssue: issue } : {}) },
  });
  expect(released.status, JSON.stringify(released.body)).toBe(202);
  await cleanedUp(site, who.admin, machineId);
  return validated(site, who.admin, machineId);
}

/** Wait until no validation of the machine is running (docs/api.md "Validated return"). */
export async function validated(site: TestSite, admin: string, id: string) {
  return site.eventually(async () => {
    const m = await machine(site, admin, id);
    return m.validation?.state === 'running' ? undefined : m;
  });
}

/**
 * The ids a list answers once it includes `id`: lists read indexes, which may lag a moment behind a write
 * (docs/api.md; FLEETWARD_AWS_SEMANTICS=index-lag), so a test waits for its write to show rather than reading once.
 */
export async function listedWith(site: TestSite, path: string, token: string, id: string): Promise<string[]> {
  return site.eventually(async () => {
    const { status, body } = await site.call('GET', path, { token });
    if (status !== 200) throw new Error(`GET ${path} answered ${status}: ${JSON.stringify(body)}`);
    const ids = (body.items as Array<{ id: string }>).map((item) => item.id);
    return ids.includes(id) ? ids : undefined;
  });
}

/** A fast simulated site agent with these machines, for a site's TOML. */
export const fastSimulator = (machines: string) => `
[instance_create_retry]
base_delay_ms = 10
[simulator]
machines = ${machines}
heartbeat_interval_seconds = 0.2
provision_ms = 10
cleanup_ms = 10
`;

/** A machine's history, newest first, up to 500 entries. */
export async function machineHistory(site: TestSite, admin: string, machineId: string): Promise<Array<Record<string, any>>> {
  return (await site.call('GET', `/admin/machines/${machineId}/history?limit=500`, { token: admin })).body.items;
}
