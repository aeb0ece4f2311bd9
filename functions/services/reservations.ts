import { auditEntry, auditTargets, type Requester } from '#domain/events/audit.ts';
import { rackPicker } from '#domain/machines/catalog.ts';
import type { HeartbeatView } from '#domain/core/health.ts';
import type { Machine } from '#domain/core/model.ts';
import { reservationHealth } from '#domain/capacity/org-capacity.ts';
import { notFound, unprocessable } from '#domain/core/rejection.ts';
import { reservationResponse, type ReservationView } from '#domain/reservations/reservation-responses.ts';
import {
  decidedAtOnce,
  domainsFree,
  MAX_RESERVATION_MACHINES,
  newReservation,
  release,
  releasedAtOnce,
  reserveAtOnce,
  type Reservation,
  type ReservationAsk,
} from '#domain/reservations/reservations.ts';
import type { AppContext } from '#runtime/context.ts';
import { loadHeartbeatView } from '#runtime/heartbeat-view.ts';
import { nvlinkDomainSizes, readDomains } from '#runtime/nvlink-domain-reads.ts';
import { retryOnStale } from '#runtime/retry-on-stale.ts';
import type { Page } from '#store/paging.ts';
import type { PageRequest } from '#store/port.ts';

// Capacity reservations (domain/reservations/reservations.ts): one small enough for a transaction is decided here, Active or 409;
// a larger one is recorded Pending and claimed by the reservation reconciler. Release hands the machines back here
// when they fit one transaction, and through the reconciler otherwise.

export interface CreateReservationRequest {
  org: string;
  machineType: string;
  count?: number | undefined;
  machineIds?: string[] | undefined;
  nvlinkDomains?: string[] | undefined;
  name?: string | undefined;
}

/** A small reservation by count reads this many more of the shared pool than it asks for: some may no longer be free. */
const CANDIDATE_SLACK = 16;

export async function createReservation(ctx: AppContext, request: CreateReservationRequest, by: Requester): Promise<ReservationView> {
  const { org, machineType } = request;
  const [catalog, heartbeat] = await Promise.all([ctx.store.getCatalog(), loadHeartbeatView(ctx)]);
  if (!catalog.types[machineType]) throw unprocessable('unknown-machine-type', `this site has no machines of type ${machineType}`);
  const { ask, wanted, sizes } = await askOf(ctx, request, heartbeat);
  if (wanted > MAX_RESERVATION_MACHINES) {
    throw unprocessable('reservation-too-large', `the reservation asks for ${wanted} machines; one holds at most ${MAX_RESERVATION_MACHINES}`);
  }
  const id = ctx.ids.next('rsv');
  const pending = newReservation(id, { org, machineType, name: request.name, ask, wanted }, by.actor, ctx.clock.now());
  const audit = (after: Reservation) =>
    auditEntry(by, ctx.clock.now(), 'reservation-created', auditTargets.reservation(id), { after: { org, machineType, ask, state: after.state } });
  if (!decidedAtOnce(wanted)) {
    await ctx.store.commit({ reservations: [{ before: null, after: pending }], history: [], audit: audit(pending) });
    return viewOf(ctx, pending, heartbeat);
  }
  return retryOnStale(async () => {
    const now = ctx.clock.now();
    const fromRack = rackPicker(catalog.types[machineType]!.racks)();
    const { candidates, whole } = await candidatesOf(ctx, pending, { sizes, fromRack }, heartbeat, now);
    const change = reserveAtOnce({ ...pending, createdAt: now.toISOString(), updatedAt: now.toISOString() }, candidates, heartbeat, now, whole);
    const active = change.reservations![0]!.after;
    await ctx.store.commit({ ...change, audit: audit(active) });
    return viewOf(ctx, active, heartbeat);
  });
}

/** What the request asks for, and how many machines that is (for domains, their machines as the fleet summary counts them). */
async function askOf(ctx: AppContext, request: CreateReservationRequest, heartbeat: HeartbeatView) {
  if (request.count !== undefined) return { ask: { count: request.count } as ReservationAsk, wanted: request.count, sizes: {} };
  if (request.machineIds !== undefined) return { ask: { machineIds: request.machineIds }, wanted: request.machineIds.length, sizes: {} };
  const domains = request.nvlinkDomains ?? [];
  const sizes = await nvlinkDomainSizes(ctx, request.machineType, heartbeat);
  const unknown = domains.filter((d) => !sizes[d]);
  if (unknown.length > 0) {
    throw unprocessable('unknown-nvlink-domain', `no ${request.machineType} machine is in NVLink domain(s) ${unknown.slice(0, 10).join(', ')}`);
  }
  return { ask: { nvlinkDomains: domains }, wanted: domains.reduce((sum, d) => sum + sizes[d]!, 0), sizes };
}

/** The machines a small reservation decides on, in the order they are preferred, and whether all it names were found. */
async function candidatesOf(
  ctx: AppContext,
  r: Reservation,
  { sizes, fromRack }: { sizes: Record<string, number>; fromRack: string | undefined },
  heartbeat: HeartbeatView,
  now: Date,
): Promise<{ candidates: Machine[]; whole: boolean }> {
  if ('count' in r.ask) {
    // From a rack picked at random: concurrent reservations spread over the free machines instead of racing for the first.
    const from = fromRack === undefined ? undefined : { rack: fromRack, enough: r.wanted };
    const ids = await ctx.store.allocatableMachineIds(r.machineType, r.wanted + CANDIDATE_SLACK, from);
    const found = await ctx.store.getMachines(ids);
    return { candidates: ids.flatMap((id) => found.get(id) ?? []), whole: true };
  }
  if ('machineIds' in r.ask) {
    const found = await ctx.store.getMachines(r.ask.machineIds);
    return { candidates: r.ask.machineIds.flatMap((id) => found.get(id) ?? []), whole: found.size === r.ask.machineIds.length };
  }
  const { whole, machines } = domainsFree(r, await readDomains(ctx, r.machineType, r.ask.nvlinkDomains, sizes), heartbeat, now);
  return { candidates: machines, whole };
}

export async function releaseReservation(ctx: AppContext, id: string, by: Requester): Promise<ReservationView> {
  const released = await retryOnStale(async () => {
    const reservation = await requireReservation(ctx, id);
    const handBack = releasedAtOnce(reservation);
    const machines = handBack.length > 0 ? await ctx.store.getMachines(handBack) : null;
    const change = release(reservation, machines, ctx.clock.now());
    if (!change) return reservation;
    const after = change.reservations![0]!.after;
    const audit = auditEntry(by, ctx.clock.now(), 'reservation-released', auditTargets.reservation(id), {
      before: { state: reservation.state },
      after: { state: after.state },
    });
    await ctx.store.commit({ ...change, audit });
    return after;
  });
  return viewOf(ctx, released);
}

async function requireReservation(ctx: AppContext, id: string, org?: string): Promise<Reservation> {
  const reservation = await ctx.store.getReservation(id);
  if (!reservation || (org !== undefined && reservation.org !== org)) throw notFound(`reservation ${id}`);
  return reservation;
}

export async function showReservation(ctx: AppContext, id: string): Promise<ReservationView> {
  return viewOf(ctx, await requireReservation(ctx, id));
}

/** Newest first: one org's (the tenant's own), or every org's. */
export async function listReservations(ctx: AppContext, org: string | null, page: PageRequest): Promise<Page<ReservationView>> {
  const [listed, heartbeat] = await Promise.all([ctx.store.listReservations(org, page), loadHeartbeatView(ctx)]);
  // The index may lag: only the org's own are shown.
  const items = listed.items.filter((r) => org === null || r.org === org);
  // Health: each org on the page once (its 4 counter shards), so a page costs at most its size in reads.
  const shards = new Map(await Promise.all([...new Set(items.map((r) => r.org))].map(async (o) => [o, await ctx.store.orgCapacityShards(o)] as const)));
  return { items: items.map((r) => view(r, reservationHealth(shards.get(r.org) ?? [], r.id, heartbeat, ctx.clock.now()))), nextToken: listed.nextToken };
}

/**
 * The reservation with its health, from its org's capacity counters (one bounded read, whatever it holds): those
 * counters count each reserved machine the org has under its reservation too (domain/capacity/org-capacity.ts).
 */
async function viewOf(ctx: AppContext, r: Reservation, known?: HeartbeatView): Promise<ReservationView> {
  const [shards, heartbeat] = await Promise.all([ctx.store.orgCapacityShards(r.org), known ?? loadHeartbeatView(ctx)]);
  return view(r, reservationHealth(shards, r.id, heartbeat, ctx.clock.now()));
}

function view(r: Reservation, health: ReservationView['health']): ReservationView {
  const progress = r.state === 'Pending' || r.state === 'Failed';
  return reservationResponse.parse({
    id: r.id,
    org: r.org,
    machineType: r.machineType,
    name: r.name,
    machineIds: r.machineIds,
    nvlinkDomains: r.nvlinkDomains,
    state: r.state,
    ...(progress ? { wanted: r.wanted } : {}),
    ...(r.state === 'Failed' ? { free: r.free } : {}),
    createdAt: r.createdAt,
    releasedAt: r.releasedAt,
    health,
  });
}
