import type { Instance, Machine, MetaInstance } from '#domain/core/model.ts';
import type { DynamoFleetStore } from '#store/dynamo-store.ts';

// What must hold at the end of the scale soak, once the churn is over and the site is quiet: checked on the store's
// records, so a unit test holds the check itself to known good and broken fleets.

/** An instance holds its machine in these; Terminated and Failed ones do not. */
const HOLDING: ReadonlySet<Instance['status']> = new Set(['Provisioning', 'Ready', 'Repairing', 'Terminating']);

export interface Failure {
  machineId: string;
  metaInstanceId: string;
  kind: 'override' | 'heartbeat';
  /** ms from the failure call being sent until the meta-instance has a new Ready member; undefined: never. */
  replacedMs?: number;
}

/** What must hold once the churn is over and the site is quiet. */
export function checkInvariants(input: { machines: Machine[]; instances: Instance[]; metas: MetaInstance[]; failures: Failure[] }) {
  const { machines, instances, metas, failures } = input;
  const holding = instances.filter((i) => HOLDING.has(i.status));
  const holders = new Map<string, string[]>();
  for (const instance of holding) holders.set(instance.machineId, [...(holders.get(instance.machineId) ?? []), instance.id]);
  const machineById = new Map(machines.map((m) => [m.id, m]));
  const metaById = new Map(metas.map((m) => [m.id, m]));
  const heldTwice = [...holders].filter(([, ids]) => ids.length > 1).map(([machineId, ids]) => `${machineId}: ${ids.join(', ')}`);
  // The machine's own record must name the instance that holds it, and nothing else.
  const disagreeing = holding.filter((i) => machineById.get(i.machineId)?.instanceId !== i.id).map((i) => `${i.id} on ${i.machineId}`);
  const orphaned = holding
    .filter((i) => i.metaInstanceId !== undefined)
    .filter((i) => {
      const meta = metaById.get(i.metaInstanceId!);
      return !meta || meta.status === 'Deleted';
    })
    .map((i) => `${i.id} of ${i.metaInstanceId}`);
  const failedMachines = new Set(failures.map((f) => f.machineId));
  const readyMembers = (metaId: string) => holding.filter((i) => i.metaInstanceId === metaId && i.status === 'Ready' && !failedMachines.has(i.machineId));
  const notReplaced = failures
    .filter((f) => f.replacedMs === undefined || readyMembers(f.metaInstanceId).length < (metaById.get(f.metaInstanceId)?.minNodes ?? Infinity))
    .map((f) => `${f.metaInstanceId} (failed ${f.machineId} by ${f.kind})`);
  const metasShort = metas
    .filter((m) => m.status !== 'Ready' || readyMembers(m.id).length < m.minNodes)
    .map((m) => `${m.id} ${m.status} ${readyMembers(m.id).length}/${m.minNodes}`);
  return {
    machine_held_twice: heldTwice,
    machine_and_instance_disagree: disagreeing,
    orphaned_members: orphaned,
    failures_not_replaced: notReplaced,
    meta_instances_short: metasShort,
    ok: heldTwice.length + disagreeing.length + orphaned.length + notReplaced.length + metasShort.length === 0,
  };
}

/** Every page of a store listing. */
export async function everything<T>(
  list: (page: { limit: number; nextToken?: string | undefined }) => Promise<{ items: T[]; nextToken?: string | undefined }>,
): Promise<T[]> {
  const all: T[] = [];
  let nextToken: string | undefined;
  do {
    const page = await list({ limit: 500, nextToken });
    all.push(...page.items);
    nextToken = page.nextToken;
  } while (nextToken);
  return all;
}

/** Every machine, meta-instance and instance (of `orgs`) the table holds, read back for the invariants. */
export async function readBack(store: DynamoFleetStore, orgs: readonly string[]) {
  const [machines, metas, instances] = await Promise.all([
    everything((page) => store.listMachines(page)),
    everything((page) => store.listMetaInstances(null, page)),
    Promise.all(orgs.map((org) => everything((page) => store.listInstances(org, page)))).then((lists) => lists.flat()),
  ]);
  return { machines, metas, instances };
}
