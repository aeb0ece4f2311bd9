import type { HistoryEntry, IssueCategory } from '#domain/core/model.ts';
import { SOURCES } from '#domain/core/overrides.ts';
import type { ticketActions, ticketStates } from '#domain/core/vocabulary.ts';

// An org's repair tickets (docs/api.md "Repair tickets"): each is one of its reports (a release with an issue), told
// from the machine's history after it, what repair and validation did. Nothing is kept besides the history.

export interface RepairTicket {
  id: string;
  machineId: string;
  instanceId: string;
  category: IssueCategory;
  summary: string;
  state: (typeof ticketStates)[number];
  openedAt: string;
  updatedAt: string;
  closedAt?: string;
  action?: (typeof ticketActions)[number];
}

/** The entries of the machine's history read after a report, at most: a ticket told from more reads only these. */
export const TICKET_HISTORY_READ = 100;

/** A ticket's id names its report: the machine and the instant, so the same report is always the same ticket. */
export const ticketId = (report: HistoryEntry): string => `${report.machineId}@${report.at}`;

type Step = Pick<RepairTicket, 'state' | 'action'>;

/**
 * What one instant of the machine's history does to the ticket. Entries of one transaction share their instant and
 * are stored in no particular order among themselves, so an instant is judged whole, by precedence.
 */
function stepOf(entries: HistoryEntry[]): Step | null {
  const has = (action: string) => entries.some((e) => e.action === action);
  const event = (type: string) => entries.some((e) => e.event?.type === type);
  if (has('machine-retired')) return { state: 'resolved', action: 'retired' };
  if (has('validation-passed')) return { state: 'resolved', action: 'validated' };
  if (has('validation-failed')) return { state: 'in-repair' };
  if (event('RepairCompleted')) return has('validation-requested') ? { state: 'in-repair' } : { state: 'resolved', action: 'repaired' };
  if (event('RepairFailed')) return { state: 'unresolved' };
  // The tenant's quarantine lifted with no repair: a provider found nothing wrong.
  const lifted = entries.some((e) => e.action === 'health-override-removed' && e.changes?.healthOverride?.from === SOURCES.tenantReportedIssue);
  if (lifted) return { state: 'resolved', action: 'no-fault-found' };
  // A repair tenant claimed the machine (nobody else can while it is quarantined), or people took it out for repair.
  if (has('instance-created') || event('RepairEscalated')) return { state: 'in-repair' };
  return null;
}

/**
 * The ticket of `report`, told from `history`: the machine's entries from the report's instant on, oldest first. It
 * ends where the machine is resolved (back to the pool or retired), or where another report opens the next ticket.
 */
export function ticketOf(report: HistoryEntry, history: HistoryEntry[]): RepairTicket {
  const instants = new Map<string, HistoryEntry[]>();
  for (const entry of history) {
    if (entry.at < report.at || (entry.reportingOrg && entry.at > report.at)) break;
    if (entry.at === report.at && entry.action === report.action) continue;
    instants.set(entry.at, [...(instants.get(entry.at) ?? []), entry]);
  }
  let now: Step = { state: 'open' };
  let updatedAt = report.at;
  for (const [at, entries] of instants) {
    const step = stepOf(entries);
    if (!step) continue;
    now = step;
    updatedAt = at;
    if (step.state === 'resolved') break;
  }
  const closed = now.state === 'resolved' || now.state === 'unresolved';
  return {
    id: ticketId(report),
    machineId: report.machineId,
    instanceId: report.instanceId ?? '',
    category: report.issue?.category ?? 'OTHER',
    summary: report.issue?.summary ?? '',
    state: now.state,
    openedAt: report.at,
    updatedAt,
    ...(closed ? { closedAt: updatedAt } : {}),
    ...(now.action ? { action: now.action } : {}),
  };
}
