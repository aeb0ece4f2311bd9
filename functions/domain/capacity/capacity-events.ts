import { eventEntry, eventIdOf } from '#domain/events/events.ts';
import { preventingSources } from '#domain/core/health.ts';
import { MAINTENANCE_SOURCE } from '#domain/maintenance/maintenance-waves.ts';
import type { HistoryEntry, Instance, Machine } from '#domain/core/model.ts';
import { SOURCES } from '#domain/core/overrides.ts';
import { VALIDATION_SOURCES } from '#domain/repair/validation.ts';
import type { capacityChanges, capacityReasons } from '#domain/core/vocabulary.ts';

// The capacity-events feed (CAP03): when capacity the provider hands an org arrives or goes, and why. Each machine's
// capacity node keeps the machine's standing as last accounted; the org-capacity reconciler compares it with the
// standing now and turns the difference into entries, written in the transaction that moves the node (guarded by its
// version), so a duplicated, late or reordered stream record finds the node in line and writes nothing again.
//
// An org has a machine in two ways, and the feed follows each:
// - through its reservation: every arrival (`reservation`, or back from `repair` / `maintenance`) and every departure
//   (`reservation-released`, or out for `repair`, `maintenance`, `retired`) is an entry, so for a reserved machine
//   delivered and withdrawn alternate;
// - through an instance of its own on an unreserved machine: the org created it and releases it itself, and its own
//   call answers both, so those are not entries; the provider taking the machine for repair or maintenance is
//   (`withdrawn`), and so is its return while the org still holds the machine (`delivered`).

export type CapacityChangeKind = (typeof capacityChanges)[number];

export type CapacityReason = (typeof capacityReasons)[number];

export type OutOfService = 'repair' | 'maintenance' | 'retired';

/** What the feed needs to know of a machine: whose it is, and whether it is out of service. */
export interface CapacityStanding {
  /** The org whose Provisioning, Ready or Repairing instance is on it. */
  holder?: string;
  /**
   * The instance holding it, live or releasing it: a later look that finds the machine free reads that instance to
   * tell whether the provider took the machine before its hold ended (`standingOf`'s `ended`).
   */
  heldBy?: string;
  reservation?: { id: string; org: string };
  /** Why it serves nobody now, even its holder or its reservation's org. */
  out?: OutOfService;
  /**
   * The org whose instance holds the machine (live or releasing it) although it went out of service after the
   * instance was assigned: the provider took it from that org, whether or not the feed saw the org have it.
   */
  takenFrom?: string;
}

/** One org's change of one machine. */
export interface CapacityMove {
  org: string;
  change: CapacityChangeKind;
  reason: CapacityReason;
}

/** An entry of an org's feed: `seq` numbers the org's entries from 1, without gaps, in the order they committed. */
export interface CapacityFeedEntry extends CapacityMove {
  seq: number;
  id: string;
  at: string;
  machineId: string;
  machineType: string;
}

const LIVE: ReadonlySet<Instance['status']> = new Set(['Provisioning', 'Ready', 'Repairing']);
/** An instance being released still holds its machine until the machine's cleanup ends. */
const HOLDING: ReadonlySet<Instance['status']> = new Set([...LIVE, 'Terminating']);

/** Overrides that put a machine in the repair flow: a reported fault, a repair request, an escalation, a failed validation. */
const REPAIR_SOURCES: ReadonlySet<string> = new Set([SOURCES.repairRequest, SOURCES.outForRepair, SOURCES.tenantReportedIssue, VALIDATION_SOURCES.failed]);

/**
 * Overrides by which the provider takes a machine from the instance holding it (a repair request, out for repair,
 * declared maintenance), or by which the org's own release sends it to repair (a reported issue). Validation is not
 * among them: it follows a repair tenant's release of a machine that was out before that tenant got it.
 */
const TAKING_SOURCES: ReadonlySet<string> = new Set([SOURCES.repairRequest, SOURCES.outForRepair, SOURCES.tenantReportedIssue, MAINTENANCE_SOURCE]);

/**
 * Why the machine is out of service, judged on the overrides in effect (as allocation judges them: an operator's
 * `replace` override hides the rest). Declared maintenance reaches a machine while its tenant still holds it (the
 * hand-back window): it takes the machine only once no instance holds it. A repair request takes it at once.
 */
function outOfService(machine: Machine, held: boolean): OutOfService | undefined {
  if (machine.retired) return 'retired';
  const preventing = preventingSources(machine.healthOverrides);
  const validating = machine.validation?.state === 'running' && preventing.includes(VALIDATION_SOURCES.running) ? machine.validation.reason : undefined;
  if (!held && (preventing.includes(MAINTENANCE_SOURCE) || validating === 'maintenance' || validating === 'provider')) return 'maintenance';
  if (preventing.some((source) => REPAIR_SOURCES.has(source)) || validating === 'repair') return 'repair';
  return undefined;
}

/**
 * Whether the machine went out of service while an instance held it, having been in service when assigned (`since`):
 * retired since, or an override that takes it set since (and by `until`, when the hold has ended), and none in effect
 * from before. Allocation hands an org only machines in service, so that org had it in service before; a repair
 * tenant claims a machine already out.
 */
function takenDuringHold(machine: Machine, since: string | undefined, until?: string): boolean {
  if (since === undefined) return false;
  const within = (at: string) => at >= since && (until === undefined || at <= until);
  const preventing = new Set(preventingSources(machine.healthOverrides));
  const effective = machine.healthOverrides.filter((o) => preventing.has(o.source));
  if (effective.some((o) => o.createdAt < since)) return false;
  if (machine.retired) return within(machine.retired.at);
  return effective.some((o) => TAKING_SOURCES.has(o.source) && within(o.createdAt));
}

/**
 * The machine's standing now, given the instance its record names (if loaded) and, when that is not the one its
 * standing last named, the instance that held it then (`ended`): a look that comes only after that instance's
 * cleanup still tells whether the provider took the machine from it, the instance's last update being when its hold
 * ended.
 */
export function standingOf(machine: Machine, instance: Instance | null, ended: Instance | null = null): CapacityStanding {
  const holding = instance && machine.instanceId === instance.id && instance.machineId === machine.id && HOLDING.has(instance.status) ? instance : null;
  const holder = holding && LIVE.has(holding.status) ? holding.org : undefined;
  const out = outOfService(machine, holder !== undefined);
  const over = !holding && ended?.machineId === machine.id && ended.id !== machine.instanceId && !HOLDING.has(ended.status) ? ended : null;
  const taker = holding ?? over;
  const takenFrom =
    taker && out && takenDuringHold(machine, holding ? machine.assignedAt : over?.createdAt, holding ? undefined : over?.updatedAt) ? taker.org : undefined;
  return {
    ...(holder !== undefined ? { holder } : {}),
    ...(holding ? { heldBy: holding.id } : {}),
    ...(machine.reservation ? { reservation: { id: machine.reservation.id, org: machine.reservation.org } } : {}),
    ...(out ? { out } : {}),
    ...(takenFrom !== undefined ? { takenFrom } : {}),
  };
}

/** The org a reserved machine serves: its reservation's, while in service and not held by another org. */
const servesReservation = (s: CapacityStanding | null): string | undefined =>
  s?.reservation && !s.out && (s.holder === undefined || s.holder === s.reservation.org) ? s.reservation.org : undefined;

/** The org an unreserved (for it) machine serves through its instance, while in service. */
const servesInstance = (s: CapacityStanding | null): string | undefined =>
  s?.holder !== undefined && !s.out && s.reservation?.org !== s.holder ? s.holder : undefined;

/** The org a machine was taken from through its instance, unless the org reserved it (its reservation's entries say it). */
const takenOf = (s: CapacityStanding | null): string | undefined =>
  s?.takenFrom !== undefined && s.reservation?.org !== s.takenFrom ? s.takenFrom : undefined;

const returnOf = (out: OutOfService | undefined): CapacityReason | undefined =>
  out === 'repair' ? 'repair-return' : out === 'maintenance' ? 'maintenance-return' : undefined;

/** The feed's changes between two standings of one machine, withdrawals first. */
export function capacityMovesOf(before: CapacityStanding | null, after: CapacityStanding | null): CapacityMove[] {
  const moves: CapacityMove[] = [];
  const [reservedBefore, reservedAfter] = [servesReservation(before), servesReservation(after)];
  const [heldBefore, heldAfter] = [servesInstance(before), servesInstance(after)];
  if (reservedBefore !== undefined && reservedBefore !== reservedAfter) {
    moves.push({ org: reservedBefore, change: 'withdrawn', reason: after?.out ?? 'reservation-released' });
  }
  // Out of service, the machine serves nobody: an org's own release is no entry, the provider taking it from the
  // org's instance is, whether the feed saw the org have it in service or reacts only now that it is out (the machine
  // says when it went out). Seen taken, or seen held while out, it is not taken again.
  const taken = takenOf(after);
  const seenOut = takenOf(before) === taken || (before?.holder === taken && heldBefore !== taken);
  if (taken !== undefined && after?.out && !seenOut) moves.push({ org: taken, change: 'withdrawn', reason: after.out });
  if (reservedAfter !== undefined && reservedAfter !== reservedBefore) {
    const arrived = before?.reservation?.org !== reservedAfter;
    moves.push({ org: reservedAfter, change: 'delivered', reason: arrived ? 'reservation' : (returnOf(before?.out) ?? 'reservation') });
  }
  const back = returnOf(before?.out);
  if (heldAfter !== undefined && heldAfter !== heldBefore && before?.holder === heldAfter && back) {
    moves.push({ org: heldAfter, change: 'delivered', reason: back });
  }
  return moves;
}

/** A feed entry's id: the same for the same change of the same machine, however often it is decided. */
export const capacityEntryId = (machineId: string, nodeVersion: number, change: CapacityChangeKind): string =>
  eventIdOf(`capacity-feed#${machineId}#${nodeVersion}#${change}`);

/**
 * The entries of the moves of a batch of machines, numbered on from each org's last committed `seq` (`heads`), and
 * the events that mirror them. A batch whose numbers another batch took first loses its race and is decided again.
 */
export function feedEntriesOf(
  moves: Array<{ machineId: string; machineType: string; nodeVersion: number; moves: CapacityMove[] }>,
  heads: ReadonlyMap<string, number>,
  at: string,
): { entries: CapacityFeedEntry[]; events: HistoryEntry[] } {
  const next = new Map(heads);
  const entries = moves.flatMap(({ machineId, machineType, nodeVersion, moves: ofMachine }) =>
    ofMachine.map((move) => {
      const seq = (next.get(move.org) ?? 0) + 1;
      next.set(move.org, seq);
      return { ...move, seq, id: capacityEntryId(machineId, nodeVersion, move.change), at, machineId, machineType };
    }),
  );
  return { entries, events: entries.map(capacityEvent) };
}

/** The `CapacityDelivered` / `CapacityWithdrawn` event of an entry, carried by the machine's history (the outbox). */
function capacityEvent(entry: CapacityFeedEntry): HistoryEntry {
  const type = entry.change === 'delivered' ? 'CapacityDelivered' : 'CapacityWithdrawn';
  const { id: entryId, org, machineId, machineType, reason, at } = entry;
  return eventEntry(machineId, 'org-capacity', type, at, { entryId, org, machineId, machineType, reason, at });
}

/** Entries of one page of an org's feed as read: those after `after`, up to the first missing number. */
export function contiguousAfter(after: number, entries: CapacityFeedEntry[]): CapacityFeedEntry[] {
  const run: CapacityFeedEntry[] = [];
  for (const entry of [...entries].sort((a, b) => a.seq - b.seq)) {
    if (entry.seq <= after) continue;
    if (entry.seq !== after + run.length + 1) break;
    run.push(entry);
  }
  return run;
}

// What a Change carries of this file's records (core/change.ts).
declare module '#domain/core/change.ts' {
  interface Change {
    /** Entries of orgs' capacity-events feeds, each written only while its org's `seq` is free. */
    capacityFeed?: CapacityFeedEntry[];
  }
}
