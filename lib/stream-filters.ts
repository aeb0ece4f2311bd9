import { keys } from '#store/keys.ts';
import { recordSources } from '#reconcilers/records.ts';
import { registry } from '#reconcilers/registry.ts';

/**
 * Lambda event filters for the table's stream, matching exactly the records functions/handlers/stream.ts acts
 * on, so the function is not invoked (nor billed) for the rest (heartbeat roster, tenants, catalog, deletes).
 * Lambda takes at most 5 filters per mapping (10 on request), so each kind of interest is one filter whose rules
 * list every key it covers:
 * - entities: INSERT or MODIFY of a record some reconciler watches (the registry's `watchedRecordKinds`:
 *   `<KIND>#<id>` / `#<KIND>`). The pk prefixes and sk values are listed side by side, so a key pairing one kind's
 *   pk with another's sk would pass too; no such item exists, and the local poller counts any record the filters
 *   pass that the handler then ignores (test/support/local-site.ts fails a test on one).
 * - events: INSERT of a machine or site history entry carrying an `event` (the outbox of events). The `event`
 *   attribute is a map `{ type, detail }` (functions/domain/events/events.ts); "exists" only works on leaves, so the filter
 *   asks for its `type` string.
 * The key prefixes come from the store's own key functions, so they cannot drift from the items written. The
 * patterns are plain JSON (what CDK's FilterCriteria.filter would stringify), so the local runner applies the same
 * ones without loading CDK.
 */
export function streamFilterPatterns(): Array<Record<string, unknown>> {
  const watched = registry.watchedRecordKinds.map((kind) => recordSources[kind].key);
  const entities = {
    eventName: ['INSERT', 'MODIFY'],
    dynamodb: { Keys: { pk: { S: watched.map((key) => ({ prefix: key.pk })) }, sk: { S: watched.map((key) => key.sk) } } },
  };
  const events = {
    eventName: ['INSERT'],
    dynamodb: {
      // Site-level events (SiteAgentSilent) live in the site's history.
      Keys: { pk: { S: [{ prefix: keys.machine('').pk }, keys.siteHistory('').pk] }, sk: { S: [{ prefix: keys.historyPrefix }] } },
      NewImage: { event: { M: { type: { S: [{ exists: true }] } } } },
    },
  };
  return [entities, events];
}

/** The mapping's `filters`, as CDK takes them. */
export const streamFilters = () => streamFilterPatterns().map((pattern) => ({ pattern: JSON.stringify(pattern) }));
