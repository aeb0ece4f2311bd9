import type { HeartbeatView } from '#domain/core/health.ts';
import type { Machine } from '#domain/core/model.ts';
import {
  claimChunk,
  claimStep,
  handBackChunk,
  handBackStep,
  RESERVATION_CHUNK,
  resolveDomains,
  resolvingDomains,
  workPending,
  type ClaimRead,
  type DomainRead,
  type Reservation,
} from '#domain/reservations/reservations.ts';
import type { AppContext } from '#runtime/context.ts';
import { loadHeartbeatView } from '#runtime/heartbeat-view.ts';
import { nvlinkDomainSizes, readDomains } from '#runtime/nvlink-domain-reads.ts';
import { defineReconciler } from '#reconcilers/reconciler.ts';
import { reservationDueAt } from '#reconcilers/due-times.ts';

// A reservation too large for one transaction, one bounded step per pass (domain/reservations/reservations.ts): its domains
// resolved to machines, then a chunk of machines claimed, undone or handed back per step, each step one transaction
// carrying the reservation's progress with the machines it changed. The `due` index holds the reservation while a
// step remains, so a crash between steps is finished by the next sweep.

export interface ReservationSnapshot {
  reservation: Reservation;
  heartbeat: HeartbeatView;
  now: Date;
  /** The domains of a reservation of whole NVLink domains, read to resolve its machines. */
  domains?: DomainRead[];
  /** The next candidates of a claim step. */
  claim?: ClaimRead;
  /** The machines of a hand-back step's chunk. */
  machines?: Map<string, Machine>;
}

/** Beyond a chunk, a page of the shared pool holds some more, for those it may hold that are no longer free. */
const CANDIDATE_SLACK = 16;

export const reservationReconciler = defineReconciler({
  kind: 'reservation',
  watches: {
    reservation: {
      concerns: (_before, after, id) => (after && workPending(after) ? [id] : []),
      dueAt: reservationDueAt,
    },
  },

  async load(ctx: AppContext, id: string): Promise<ReservationSnapshot | null> {
    const reservation = await ctx.store.getReservation(id);
    if (!reservation) return null;
    const snapshot: ReservationSnapshot = { reservation, heartbeat: await loadHeartbeatView(ctx), now: ctx.clock.now() };
    const work = reservation.work;
    if (work === undefined) return snapshot;
    if (work.kind !== 'claim') return { ...snapshot, machines: await ctx.store.getMachines(handBackChunk(reservation)) };
    if (resolvingDomains(reservation)) {
      const domains = reservation.nvlinkDomains ?? [];
      const sizes = await nvlinkDomainSizes(ctx, reservation.machineType, snapshot.heartbeat);
      return { ...snapshot, domains: await readDomains(ctx, reservation.machineType, domains, sizes) };
    }
    const targets = claimChunk(reservation);
    if (work.targets !== undefined) {
      const found = await ctx.store.getMachines(targets);
      const candidates = targets.flatMap((target) => found.get(target) ?? []);
      const last = reservation.machineIds.length + targets.length >= work.targets.length;
      return { ...snapshot, claim: { candidates, exhausted: last, unknown: targets.length - candidates.length } };
    }
    const needed = Math.min(reservation.wanted - reservation.machineIds.length, RESERVATION_CHUNK);
    const page = await ctx.store.allocatableMachinesPage(reservation.machineType, { limit: needed + CANDIDATE_SLACK, nextToken: work.nextToken });
    return { ...snapshot, claim: { candidates: page.items, exhausted: page.nextToken === undefined, nextToken: page.nextToken } };
  },

  decide(s: ReservationSnapshot) {
    const r = s.reservation;
    if (!workPending(r)) return {};
    const change = s.domains
      ? resolveDomains(r, s.domains, s.heartbeat, s.now)
      : s.claim
        ? claimStep(r, s.claim, s.heartbeat, s.now)
        : handBackStep(r, s.machines ?? new Map(), s.now);
    if (!change) return {};
    const after = change.reservations?.[0]?.after;
    return { change, requeueAt: s.now, summary: `reservation ${r.id}: ${after?.state ?? r.state}, ${after?.machineIds.length ?? 0} held` };
  },
});
