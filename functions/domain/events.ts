import type { HistoryEntry, Issue, Machine } from './model.ts';

/**
 * An event for repair automation, carried by a history entry so that it is committed in the same transaction as
 * the change it reports; the stream then publishes it (see handlers/stream.ts).
 */
export function repairEvent(
  type: string,
  machine: Machine,
  context: { actor: string; issue?: Issue | undefined },
  at: string,
  instanceId?: string,
  extra: Record<string, unknown> = {},
): HistoryEntry {
  return {
    machineId: machine.id,
    at,
    actor: context.actor,
    action: 'event-emitted',
    message: type,
    ...(instanceId ? { instanceId } : {}),
    event: {
      type,
      detail: {
        machineId: machine.id,
        machineType: machine.machineType,
        rack: machine.rack,
        ...(instanceId ? { instanceId } : {}),
        ...(context.issue ? { issue: context.issue } : {}),
        overrides: machine.healthOverrides.map((o) => o.source),
        labels: machine.labels,
        at,
        ...extra,
      },
    },
  };
}
