import type { Change, Versioned } from '#domain/core/change.ts';

/** A record that remembers the API request that last changed it, so a stream reaction can log under that id. */
interface Traceable {
  lastRequestId?: string;
}

const stamped = <T extends Traceable>(pairs: Versioned<T>[] | undefined, requestId: string) =>
  pairs?.map((pair) => ({ ...pair, after: { ...pair.after, lastRequestId: requestId } }));

/**
 * The change as committed on behalf of request `requestId`: every machine, instance and meta-instance it writes
 * remembers the id, and every event it carries names it (unless the event already names the request it came from).
 */
export function stampRequestId(change: Change, requestId: string): Change {
  const machines = stamped(change.machines, requestId);
  const instances = stamped(change.instances, requestId);
  const metaInstances = stamped(change.metaInstances, requestId);
  return {
    ...change,
    ...(machines ? { machines } : {}),
    ...(instances ? { instances } : {}),
    ...(metaInstances ? { metaInstances } : {}),
    history: change.history.map((entry) =>
      entry.event && entry.event.detail.requestId === undefined ? { ...entry, event: { ...entry.event, detail: { ...entry.event.detail, requestId } } } : entry,
    ),
  };
}
