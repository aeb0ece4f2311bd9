import { stampRequestId } from '#domain/core/request-id.ts';
import type { FleetStore } from '#store/port.ts';
import type { AppContext, Log } from '#runtime/context.ts';

/** Powertools' key for a correlation id: a log line found by it belongs to the same story. */
export const CORRELATION_KEY = 'correlation_id';

function correlatedLog(log: Log, requestId: string): Log {
  const fields = (extra?: Record<string, unknown>) => ({ [CORRELATION_KEY]: requestId, ...extra });
  return {
    info: (message, extra) => log.info(message, fields(extra)),
    warn: (message, extra) => log.warn(message, fields(extra)),
    error: (message, extra) => log.error(message, fields(extra)),
  };
}

/** The store, except that every commit is stamped with the request it is made for. */
function stampingStore(store: FleetStore, requestId: string): FleetStore {
  return new Proxy(store, {
    get(target, property) {
      if (property === 'commit') return (change: Parameters<FleetStore['commit']>[0]) => target.commit(stampRequestId(change, requestId));
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * The context of work done for API request `requestId` (the request itself, or a stream reaction to a record it
 * changed): its log lines carry the id as correlation id, the records and events it commits name it, and the site
 * agent is told it (`x-request-id`). Done here once, so no service or reconciler has to remember to.
 */
export function forRequest(ctx: AppContext, requestId: string | undefined, deadline?: number): AppContext {
  if (deadline !== undefined) return { ...forRequest(ctx, requestId), deadline };
  if (!requestId || ctx.requestId === requestId) return ctx;
  const agent = ctx.agent;
  return {
    ...ctx,
    requestId,
    log: correlatedLog(ctx.log, requestId),
    store: stampingStore(ctx.store, requestId),
    agent: {
      create: (request) => agent.create(request, { requestId }),
      delete: (name) => agent.delete(name, { requestId }),
      status: (name) => agent.status(name, { requestId }),
      startMaintenance: (machineId, request) => agent.startMaintenance(machineId, request, { requestId }),
      validate: (machineId, request) => agent.validate(machineId, request, { requestId }),
      power: (name, request) => agent.power(name, request, { requestId }),
    },
  };
}

/** The API request that made a record what it is, for records that carry one (roster records do not). */
export const requestIdOf = (record: object | null): string | undefined =>
  record && 'lastRequestId' in record && typeof record.lastRequestId === 'string' ? record.lastRequestId : undefined;
