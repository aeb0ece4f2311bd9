import type { Change, Versioned } from '#domain/core/change.ts';
import { allocatability, type HeartbeatView } from '#domain/core/health.ts';
import type { HistoryEntry, Machine } from '#domain/core/model.ts';
import { conflict } from '#domain/core/rejection.ts';
import { iso } from '#domain/core/time.ts';

// Capacity pinned to one org (CAP04). A reservation is all or nothing: every machine it asks for is free and
// allocatable and all are taken, or none is. A machine carries its reservation (`Machine.reservation`), written under
// the machine's version guard, so no machine is ever in two. One small enough for one transaction is decided in the
// request; a larger one is recorded Pending and claims its machines a chunk per step (the reservation reconciler),
// each step one transaction carrying the reservation's progress, and ends Active, or Failed with every claim undone.

export type ReservationState = 'Pending' | 'Active' | 'Failed' | 'Released';

/** What was asked for: a number of machines of the type, these machines, or every machine of these NVLink domains. */
export type ReservationAsk = { count: number } | { machineIds: string[] } | { nvlinkDomains: string[] };

/**
 * The work a reservation still has to do, one chunk per step: claim its machines (from the type's free machines, or
 * the `targets` named or resolved from its domains; `nextToken` is where the free machines' read stands), undo its
 * claims after it fell short (it then ends Failed), or hand its machines back to the shared pool (`left`) once released.
 */
export type ReservationWork = { kind: 'claim'; targets?: string[]; nextToken?: string } | { kind: 'undo' } | { kind: 'return'; left: string[] };

export interface Reservation {
  id: string;
  org: string;
  machineType: string;
  name?: string;
  ask: ReservationAsk;
  /** The machines it holds: claimed so far while Pending; all of them once Active; none once Failed. */
  machineIds: string[];
  nvlinkDomains?: string[];
  state: ReservationState;
  /** How many machines it asked for. */
  wanted: number;
  /** On Failed: how many of the machines it asked for were free when it fell short. */
  free?: number;
  work?: ReservationWork;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
  releasedAt?: string;
  /** The API request that last changed it (stamped by the store on that request's behalf; see domain/core/request-id.ts). */
  lastRequestId?: string;
  version: number;
}

/**
 * Machines one step claims, undoes or returns: each is a machine write and its history entry, beside the reservation
 * and (in a request) the audit entry, within a transaction's 100 items.
 */
export const RESERVATION_CHUNK = 49;
/** The most machines one reservation may hold: its record lists them all (an item is at most 400 KB). */
export const MAX_RESERVATION_MACHINES = 5_000;

/** Why the machine cannot join a reservation of this type now; empty when it can. */
export function unclaimableReasons(machine: Machine, machineType: string, heartbeat: HeartbeatView, now: Date): string[] {
  const reasons = allocatability(machine, heartbeat, now).notAllocatableReasons;
  if (machine.machineType !== machineType) reasons.push(`machine-type:${machine.machineType}`);
  if (machine.reservation) reasons.push(`reserved:${machine.reservation.id}`);
  return reasons;
}

/** A reserved machine is allocatable to its reservation's org alone. */
export const reservedForAnother = (machine: Machine, org: string): boolean => machine.reservation !== undefined && machine.reservation.org !== org;

/** The insufficient-capacity refusal: how many machines were asked for and how many of them were free. */
function insufficientCapacity(machineType: string, wanted: number, free: number) {
  return conflict('insufficient-capacity', `the reservation needs ${wanted} ${machineType} machine(s) free; ${free} are`, { wanted, free });
}

export interface ReservationRequest {
  org: string;
  machineType: string;
  name?: string | undefined;
  ask: ReservationAsk;
  /** How many machines the ask means (for domains, their machines as the fleet summary counts them). */
  wanted: number;
}

export function newReservation(id: string, request: ReservationRequest, createdBy: string, now: Date): Reservation {
  const at = iso(now);
  return {
    id,
    org: request.org,
    machineType: request.machineType,
    ...(request.name !== undefined ? { name: request.name } : {}),
    ask: request.ask,
    machineIds: [],
    ...('nvlinkDomains' in request.ask ? { nvlinkDomains: request.ask.nvlinkDomains } : {}),
    state: 'Pending',
    wanted: request.wanted,
    work: { kind: 'claim', ...('machineIds' in request.ask ? { targets: request.ask.machineIds } : {}) },
    createdBy,
    createdAt: at,
    updatedAt: at,
    version: 0,
  };
}

/** Small enough to be decided in the request, in one transaction. */
export const decidedAtOnce = (wanted: number): boolean => wanted <= RESERVATION_CHUNK;

const ACTOR = 'reservations';

function reserveMachine(machine: Machine, r: Reservation, at: string): { pair: Versioned<Machine>; entry: HistoryEntry } {
  return {
    pair: { before: machine, after: { ...machine, reservation: { id: r.id, org: r.org }, updatedAt: at } },
    entry: { machineId: machine.id, at, actor: ACTOR, action: 'reserved', message: `reserved for org ${r.org} (reservation ${r.id})` },
  };
}

function unreserveMachine(machine: Machine, r: Reservation, at: string, why: string): { pair: Versioned<Machine>; entry: HistoryEntry } {
  const { reservation: _left, ...rest } = machine;
  return {
    pair: { before: machine, after: { ...rest, updatedAt: at } },
    entry: { machineId: machine.id, at, actor: ACTOR, action: 'unreserved', message: `${why} (reservation ${r.id} of org ${r.org})` },
  };
}

function changeOf(before: Reservation | null, after: Reservation, moves: Array<{ pair: Versioned<Machine>; entry: HistoryEntry }>): Change {
  return { reservations: [{ before, after }], machines: moves.map((m) => m.pair), history: moves.map((m) => m.entry) };
}

/**
 * A small reservation decided at once over the machines read for it (in the order they are preferred): Active with
 * every machine it asks for, or 409 insufficient-capacity. A count takes the first free ones; named machines or
 * domains must all be free (`candidates` are all of them, and `whole` says the domains' machines were all found).
 */
export function reserveAtOnce(pending: Reservation, candidates: Machine[], heartbeat: HeartbeatView, now: Date, whole = true): Change {
  const free = candidates.filter((m) => unclaimableReasons(m, pending.machineType, heartbeat, now).length === 0);
  const byCount = 'count' in pending.ask;
  if (free.length < pending.wanted || (!byCount && (free.length !== candidates.length || !whole))) {
    throw insufficientCapacity(pending.machineType, pending.wanted, Math.min(free.length, pending.wanted));
  }
  const at = iso(now);
  const taken = free.slice(0, pending.wanted);
  const { work: _done, ...settled } = pending;
  const active: Reservation = { ...settled, machineIds: taken.map((m) => m.id), state: 'Active', updatedAt: at };
  return changeOf(
    null,
    active,
    taken.map((m) => reserveMachine(m, active, at)),
  );
}

/** One NVLink domain as read for a reservation: its size (the fleet summary's count) and its free machines found. */
export interface DomainRead {
  domain: string;
  size: number;
  free: Machine[];
}

/** Whether every domain's machines are all free for the reservation, and how many of them are. */
export function domainsFree(r: Pick<Reservation, 'machineType'>, domains: DomainRead[], heartbeat: HeartbeatView, now: Date) {
  const claimable = (m: Machine) => m.nvlinkDomain !== undefined && unclaimableReasons(m, r.machineType, heartbeat, now).length === 0;
  const perDomain = domains.map((d) => ({ ...d, claimable: d.free.filter((m) => claimable(m) && m.nvlinkDomain === d.domain) }));
  return {
    whole: perDomain.every((d) => d.size > 0 && d.claimable.length === d.size),
    machines: perDomain.flatMap((d) => d.claimable),
  };
}

/**
 * A reservation of whole NVLink domains with its domains read: their machines become its targets (claimed a chunk per
 * step), or it fails when a domain is not wholly free.
 */
export function resolveDomains(r: Reservation, domains: DomainRead[], heartbeat: HeartbeatView, now: Date): Change {
  const at = iso(now);
  const { whole, machines } = domainsFree(r, domains, heartbeat, now);
  if (!whole) return fallShort(r, Math.min(machines.length, r.wanted), at);
  const targets = machines.map((m) => m.id);
  return changeOf(r, { ...r, wanted: targets.length, work: { kind: 'claim', targets }, updatedAt: at }, []);
}

/** A reservation of NVLink domains whose machines are not resolved yet: its next step reads its domains. */
export const resolvingDomains = (r: Reservation): boolean => r.work?.kind === 'claim' && r.work.targets === undefined && 'nvlinkDomains' in r.ask;

/** The targets the next claim step reads (by named machines or resolved domains); none by count. */
export function claimChunk(r: Reservation): string[] {
  if (r.work?.kind !== 'claim' || r.work.targets === undefined) return [];
  return r.work.targets.slice(r.machineIds.length, r.machineIds.length + RESERVATION_CHUNK);
}

/** What one claim step of a Pending reservation read: the next candidates, in order, and whether more exist. */
export interface ClaimRead {
  /** By count: free machines of the type from the shared index; by targets: the next unclaimed targets. */
  candidates: Machine[];
  /** No candidate lies beyond these (the index's end, or the last targets). */
  exhausted: boolean;
  /** Where the read of the type's free machines goes on next (by count). */
  nextToken?: string | undefined;
  /** By targets: how many of the next targets no machine answers to. */
  unknown?: number;
}

/**
 * One step of a Pending reservation: the next chunk claimed (Active once it holds all it asked for); or, when it
 * falls short, the step that starts undoing its claims (Failed at once when it holds none).
 */
export function claimStep(r: Reservation, read: ClaimRead, heartbeat: HeartbeatView, now: Date): Change {
  const at = iso(now);
  const needed = r.wanted - r.machineIds.length;
  const claimable = (m: Machine) => unclaimableReasons(m, r.machineType, heartbeat, now).length === 0;
  const byCount = 'count' in r.ask;
  const free = read.candidates.filter(claimable);
  const short = byCount ? free.length < Math.min(needed, RESERVATION_CHUNK) && read.exhausted : free.length < read.candidates.length || (read.unknown ?? 0) > 0;
  if (short) return fallShort(r, r.machineIds.length + Math.min(free.length, needed), at);
  const taken = free.slice(0, Math.min(needed, RESERVATION_CHUNK));
  const held = [...r.machineIds, ...taken.map((m) => m.id)];
  if (held.length >= r.wanted) {
    const active: Reservation = { ...withoutWork(r), machineIds: held, state: 'Active', updatedAt: at };
    return changeOf(
      r,
      active,
      taken.map((m) => reserveMachine(m, active, at)),
    );
  }
  const work = r.work?.kind === 'claim' ? r.work : { kind: 'claim' as const };
  // The read goes on past this page only once the page's free machines are all taken: those claimed leave the
  // shared pool, so the same place read again shows the ones left.
  const nextToken = !byCount ? undefined : free.length > taken.length ? work.nextToken : read.nextToken;
  const { nextToken: _old, ...rest } = work;
  const next: Reservation = { ...r, machineIds: held, work: { ...rest, ...(nextToken ? { nextToken } : {}) }, updatedAt: at };
  return changeOf(
    r,
    next,
    taken.map((m) => reserveMachine(m, next, at)),
  );
}

const withoutWork = (r: Reservation): Reservation => {
  const { work: _done, ...rest } = r;
  return rest;
};

/** It fell short: Failed with what it found, its claims to be undone first (Failed at once when it holds none). */
function fallShort(r: Reservation, free: number, at: string): Change {
  const next: Reservation =
    r.machineIds.length === 0 ? { ...withoutWork(r), state: 'Failed', free, updatedAt: at } : { ...r, free, work: { kind: 'undo' }, updatedAt: at };
  return changeOf(r, next, []);
}

/**
 * One step handing machines back: of a reservation that fell short (its claims undone, then Failed) or of a
 * released one (its machines returned to the shared pool). A machine is handed back only while it is still this
 * reservation's; `machines` are those the step's chunk names, as read.
 */
export function handBackStep(r: Reservation, machines: Map<string, Machine>, now: Date): Change | null {
  const at = iso(now);
  const work = r.work;
  if (work?.kind !== 'undo' && work?.kind !== 'return') return null;
  const list = work.kind === 'undo' ? r.machineIds : work.left;
  const chunk = list.slice(0, RESERVATION_CHUNK);
  const rest = list.slice(chunk.length);
  const why = work.kind === 'undo' ? 'the reservation fell short' : 'the reservation was released';
  const moves = chunk.flatMap((id) => {
    const machine = machines.get(id);
    return machine?.reservation?.id === r.id ? [unreserveMachine(machine, r, at, why)] : [];
  });
  const next: Reservation =
    work.kind === 'undo'
      ? rest.length === 0
        ? { ...withoutWork(r), machineIds: [], state: 'Failed', updatedAt: at }
        : { ...r, machineIds: rest, updatedAt: at }
      : rest.length === 0
        ? { ...withoutWork(r), updatedAt: at }
        : { ...r, work: { kind: 'return', left: rest }, updatedAt: at };
  return changeOf(r, next, moves);
}

/** The machines the next hand-back step reads. */
export function handBackChunk(r: Reservation): string[] {
  if (r.work?.kind === 'undo') return r.machineIds.slice(0, RESERVATION_CHUNK);
  if (r.work?.kind === 'return') return r.work.left.slice(0, RESERVATION_CHUNK);
  return [];
}

/**
 * Released: its machines go back to the shared pool. A machine holding the org's instance keeps it (the instance is
 * untouched) and joins the pool once released. Small ones hand back in this change (`machines` read); larger ones
 * leave the work to the reconciler. A Pending reservation is released with what it claimed so far.
 */
export function release(r: Reservation, machines: Map<string, Machine> | null, now: Date): Change | null {
  if (r.state === 'Released') return null;
  if (r.state === 'Failed') throw conflict('reservation-failed', `reservation ${r.id} failed and holds no machine`);
  const at = iso(now);
  const released: Reservation = { ...withoutWork(r), state: 'Released', releasedAt: at, updatedAt: at };
  if (r.machineIds.length === 0) return changeOf(r, released, []);
  const returning: Reservation = { ...released, work: { kind: 'return', left: r.machineIds } };
  if (!machines) return changeOf(r, returning, []);
  const step = handBackStep(returning, machines, now)!;
  return { ...step, reservations: [{ before: r, after: step.reservations![0]!.after }] };
}

/** The machines a release reads to hand back in its own change; none when the reconciler does it in chunks. */
export const releasedAtOnce = (r: Reservation): string[] => (r.machineIds.length <= RESERVATION_CHUNK ? r.machineIds : []);

/** Whether a step remains to be done: the reconciler is due. */
export const workPending = (r: Reservation): boolean => r.work !== undefined;

// What a Change carries of this file's records (core/change.ts).
declare module '#domain/core/change.ts' {
  interface Change {
    /** Capacity reservations, with the machines they claim or hand back. */
    reservations?: Versioned<Reservation>[];
  }
}
