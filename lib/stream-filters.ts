import { FilterCriteria, FilterRule } from 'aws-cdk-lib/aws-lambda';
import { keys } from '#store/items.ts';
import { recordSources } from '#reconcilers/records.ts';
import { registry } from '#reconcilers/registry.ts';

/**
 * Lambda event filters for the table's stream, matching exactly the records functions/handlers/stream.ts acts
 * on, so the function is not invoked (nor billed) for the rest (heartbeat roster, tenants, catalog, deletes):
 * - entityOfRecord: INSERT or MODIFY of a record some reconciler watches (the registry's `watchedRecordKinds`:
 *   `<KIND>#<id>` / `#<KIND>`);
 * - eventOfRecord: INSERT of a machine or site history entry carrying an `event` (the outbox of events). The
 *   `event` attribute is a map `{ type, detail }` (functions/domain/events.ts); filter "exists" only works on
 *   leaves, so the filter asks for its `type` string.
 * The key prefixes come from the store's own key functions, so they cannot drift from the items written.
 */
function entityFilter(key: { pk: string; sk: string }) {
  return FilterCriteria.filter({
    eventName: FilterRule.or('INSERT', 'MODIFY'),
    dynamodb: { Keys: { pk: { S: FilterRule.beginsWith(key.pk) }, sk: { S: FilterRule.isEqual(key.sk) } } },
  });
}

function outboxFilter(pk: ReturnType<typeof FilterRule.beginsWith>) {
  return FilterCriteria.filter({
    eventName: FilterRule.isEqual('INSERT'),
    dynamodb: {
      Keys: { pk: { S: pk }, sk: { S: FilterRule.beginsWith(keys.historyPrefix) } },
      NewImage: { event: { M: { type: { S: FilterRule.exists() } } } },
    },
  });
}

export function streamFilters(): Array<{ [key: string]: unknown }> {
  return [
    ...registry.watchedRecordKinds.map((kind) => entityFilter(recordSources[kind].key)),
    outboxFilter(FilterRule.beginsWith(keys.machine('').pk)),
    // Site-level events (SiteAgentSilent) live in the site's history.
    outboxFilter(FilterRule.isEqual(keys.siteHistory('').pk)),
  ];
}
