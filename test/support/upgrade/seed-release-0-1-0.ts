/**
 * Data a site on release 0.1.0 holds after some use, written through that release's own HTTP API: machines, instances
 * of two orgs in each state it can hold them in, a quarantined machine under repair, a meta-instance, provider
 * overrides, audit entries and history. Only routes and bodies that 0.1.0 had are used.
 */
export interface SeededSite {
  /** Instance id → what 0.1.0 said of it when seeding ended. */
  instances: Map<string, { org: string; status: string; machineId: string | undefined }>;
  metaInstanceId: string;
  overriddenMachine: string;
  repairMachine: string;
}

type Json = Record<string, any>;

export async function tokenFor(base: string, sub: string, org: string, roles: string[]): Promise<string> {
  const res = await fetch(`${base}/_local/token`, { method: 'POST', body: JSON.stringify({ sub, org, roles }) });
  if (!res.ok) throw new Error(`token: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { token: string }).token;
}

/** A caller as a tenant's client: `key` is the Idempotency-Key of a request sent again (a fresh one without it). */
export function caller(base: string, token: string) {
  return async (method: string, path: string, body?: unknown, key?: string): Promise<{ status: number; json: Json }> => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'idempotency-key': key ?? `seed-${method}-${path}-${Math.random().toString(36).slice(2)}`,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, json: text ? (JSON.parse(text) as Json) : {} };
  };
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`seeding 0.1.0: ${what} not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function expectStatus(what: string, answer: { status: number; json: Json }, ...statuses: number[]): Json {
  if (!statuses.includes(answer.status)) throw new Error(`seeding 0.1.0: ${what} answered ${answer.status} ${JSON.stringify(answer.json)}`);
  return answer.json;
}

export async function seedRelease010(base: string): Promise<SeededSite> {
  const acme = caller(base, await tokenFor(base, 'alice', 'acme', ['tenant']));
  const globex = caller(base, await tokenFor(base, 'gina', 'globex', ['tenant']));
  const admin = caller(base, await tokenFor(base, 'olga', 'provider', ['provider-admin']));
  const repairer = caller(base, await tokenFor(base, 'rita', 'fixit', ['tenant']));
  const sim = async (path: string, body: unknown) => {
    const res = await fetch(`${base}/_sim${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`seeding 0.1.0: /_sim${path} answered ${res.status}`);
  };
  expectStatus('the repair tenant', await admin('PUT', '/admin/tenants/fixit', { capabilities: { targetedInstanceCreation: true } }), 200);

  const ready = async (call: typeof acme, org: string, id: string) =>
    until(`${id} Ready`, async () => {
      const { json } = await call('GET', `/v2/org/${org}/nico/instance/${id}`);
      return json.status === 'Ready' ? json : undefined;
    });
  const create = async (call: typeof acme, org: string, machineType: string, name: string) =>
    String(expectStatus(`create ${name}`, await call('POST', `/v2/org/${org}/nico/instance`, { machineType, name }), 201).id);

  const acmeIds = [
    await create(acme, 'acme', 'gb200', 'a-train-1'),
    await create(acme, 'acme', 'gb200', 'a-train-2'),
    await create(acme, 'acme', 'h100', 'a-infer-1'),
  ];
  const globexIds = [await create(globex, 'globex', 'h100', 'g-infer-1'), await create(globex, 'globex', 'gb200', 'g-train-1')];
  for (const id of acmeIds) await ready(acme, 'acme', id);
  for (const id of globexIds) await ready(globex, 'globex', id);

  // Released with a hardware issue: quarantined, then claimed by the repair tenant (in repair).
  const broken = await ready(acme, 'acme', acmeIds[1]!);
  const repairMachine = String(broken.machineId);
  expectStatus(
    'release with an issue',
    await acme('DELETE', `/v2/org/acme/nico/instance/${acmeIds[1]}`, { machineHealthIssue: { category: 'HARDWARE', summary: 'GPU 2 XID 79' } }),
    202,
  );
  await until('repair request', async () => {
    const { json } = await admin('GET', `/admin/machines/${repairMachine}`);
    const overrides = (json.healthOverrides ?? json.overrides ?? []) as Json[];
    return JSON.stringify(overrides).includes('repair-request') && json.state === 'Ready' ? true : undefined;
  });
  const claim = expectStatus('repair claim', await repairer('POST', '/v2/org/fixit/nico/instance', { machineId: repairMachine, name: 'fix-1' }), 201);
  await ready(repairer, 'fixit', String(claim.id));

  // Released cleanly: Terminated.
  expectStatus('release', await globex('DELETE', `/v2/org/globex/nico/instance/${globexIds[0]}`), 202);

  // A provider's override on a free machine.
  const machines = expectStatus('machines', await admin('GET', '/admin/machines?allocatable=true&machineType=h100'), 200).items as Json[];
  const overriddenMachine = String(machines[0]!.id);
  expectStatus(
    'override',
    await admin('POST', `/admin/machines/${overriddenMachine}/health-overrides`, { template: 'internal-maintenance', message: 'cabling check' }),
    201,
    200,
  );

  // A meta-instance of two members.
  const meta = expectStatus(
    'meta-instance',
    await acme('POST', '/v2/org/acme/nico/meta-instance', { machineType: 'gb200', minNodes: 2, placement: { sameRack: false } }),
    201,
  );
  const metaInstanceId = String(meta.id);
  // 0.1.0 calls a meta-instance Ready once placed: its members are Ready only when the agent says so.
  await until('meta-instance members Ready', async () => {
    const { json } = await acme('GET', `/v2/org/acme/nico/meta-instance/${metaInstanceId}`);
    const members = (json.instanceIds ?? []) as string[];
    if (json.status !== 'Ready' || members.length !== 2) return undefined;
    for (const id of members) if ((await acme('GET', `/v2/org/acme/nico/instance/${id}`)).json.status !== 'Ready') return undefined;
    return true;
  });

  // One create still provisioning: the agent keeps timing out.
  await sim('/faults', { op: 'create', outcomes: ['timeout', 'timeout', 'timeout', 'timeout', 'timeout', 'timeout'] });
  globexIds.push(await create(globex, 'globex', 'h100', 'g-slow-1'));

  const instances: SeededSite['instances'] = new Map();
  for (const [call, org] of [
    [acme, 'acme'],
    [globex, 'globex'],
    [repairer, 'fixit'],
  ] as const) {
    const items = expectStatus(`${org}'s instances`, await call('GET', `/v2/org/${org}/nico/instance`), 200).items as Json[];
    for (const item of items) instances.set(String(item.id), { org, status: String(item.status), machineId: item.machineId as string | undefined });
  }
  return { instances, metaInstanceId, overriddenMachine, repairMachine };
}
