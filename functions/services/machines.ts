import { auditEntry, auditTargets, type Requester } from '#domain/audit.ts';
import { catalogAfter } from '#domain/catalog.ts';
import type { Change, Versioned } from '#domain/change.ts';
import { machineView, registerMachine, type MachineRegistration, type MachineView } from '#domain/machines.ts';
import type { Machine } from '#domain/model.ts';
import type { Page } from '#store/paging.ts';
import type { AppContext } from './context.ts';
import { loadHeartbeatView } from './heartbeat-view.ts';
import { requireMachine } from './instances.ts';
import { retryOnStale } from './retry-on-stale.ts';

/** Machines per transaction: each needs its record and a history entry, plus the catalog and roster reset. */
const REGISTRATION_CHUNK = 40;

/**
 * Register or re-describe machines; each chunk is one transaction with the site catalog it changes and one audit
 * entry counting what it did (so a call of up to REGISTRATION_CHUNK machines is one entry).
 */
export async function registerMachines(ctx: AppContext, registrations: MachineRegistration[], by: Requester): Promise<{ upserted: number }> {
  let upserted = 0;
  for (let start = 0; start < registrations.length; start += REGISTRATION_CHUNK) {
    const chunk = registrations.slice(start, start + REGISTRATION_CHUNK);
    upserted += await retryOnStale(async () => {
      const now = ctx.clock.now();
      const existing = await Promise.all(chunk.map((r) => ctx.store.getMachine(r.id)));
      const changes = chunk.map((r, i) => registerMachine(existing[i] ?? null, r, by.actor, now)).filter((c): c is Change => c !== null);
      if (changes.length === 0) return 0;
      const machines: Versioned<Machine>[] = changes.flatMap((c) => c.machines ?? []);
      const catalog = await ctx.store.getCatalog();
      const nextCatalog = catalogAfter(catalog, machines);
      const added = machines.filter((m) => m.before === null).length;
      const counts = { added, updated: machines.length - added, unchanged: chunk.length - machines.length };
      await ctx.store.commit({
        audit: auditEntry(by, now, 'machines-registered', auditTargets.registration, { after: counts }),
        machines,
        history: changes.flatMap((c) => c.history),
        ...(nextCatalog ? { catalog: { before: catalog.version === 0 && Object.keys(catalog.types).length === 0 ? null : catalog, after: nextCatalog } } : {}),
        resetHeartbeatRoster: machines.some((m) => m.before === null),
      });
      return changes.length;
    });
  }
  return { upserted };
}

export interface MachineFilter {
  state?: Machine['state'] | undefined;
  machineType?: string | undefined;
  healthOverride?: string | undefined;
  allocatable?: boolean | undefined;
}

const matches = (view: MachineView, filter: MachineFilter): boolean =>
  (filter.state === undefined || view.state === filter.state) &&
  (filter.machineType === undefined || view.machineType === filter.machineType) &&
  (filter.healthOverride === undefined || view.healthOverrides.some((o) => o.source === filter.healthOverride)) &&
  (filter.allocatable === undefined || view.allocatable === filter.allocatable);

/** The provider's fleet listing; filters apply to each page (a page may hold fewer than `limit` matches). */
export async function listMachines(ctx: AppContext, page: { limit: number; nextToken?: string | undefined }, filter: MachineFilter): Promise<Page<MachineView>> {
  const heartbeat = await loadHeartbeatView(ctx);
  const now = ctx.clock.now();
  // Repair tenants poll for repair requests: that listing comes from its own index, not a walk of the fleet.
  const result =
    filter.healthOverride === 'repair-request' ? await ctx.store.machinesAwaitingRepair(page) : await ctx.store.listMachines(page);
  return { items: result.items.map((m) => machineView(m, heartbeat, now)).filter((v) => matches(v, filter)), nextToken: result.nextToken };
}

export async function showMachine(ctx: AppContext, id: string): Promise<MachineView> {
  const machine = await requireMachine(ctx, id);
  return machineView(machine, await loadHeartbeatView(ctx), ctx.clock.now());
}

