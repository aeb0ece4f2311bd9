import type { AuditEntry } from '#domain/events/audit.ts';
import type { Aggregate } from '#store/aggregate.ts';
import { AUDIT_KIND, auditActorPartition, auditItem, auditTargetPartition, fromAuditItem } from '#store/aggregates/audit-items.ts';
import type { Page } from '#store/paging.ts';
import type { PageRequest } from '#store/port.ts';
import { indexes } from '#store/table.ts';

/** Which audit entries to list; each given filter narrows the listing. `since` is an ISO time (UTC, with ms). */
export interface AuditFilter {
  actor?: string | undefined;
  target?: string | undefined;
  since?: string | undefined;
}

export interface AuditStore {
  /** Provider actions, newest first. */
  listAudit(filter: AuditFilter, page: PageRequest): Promise<Page<AuditEntry>>;
}

export const audit: Aggregate<AuditStore> = {
  writes: (change, to) => {
    if (change.audit) to.created(auditItem(change.audit, to.uniqueSuffix()));
  },
  store: ({ items }) => ({
    /**
     * One Query whatever the filter: a target's own partition (an actor too: filtered after Limit), else the actor's
     * index partition, else every entry through byKind. `since` is a range on the time-led sort key.
     */
    async listAudit(filter, page) {
      const [index, partition] =
        filter.target !== undefined
          ? [undefined, auditTargetPartition(filter.target)]
          : filter.actor !== undefined
            ? [indexes.auditByActor, auditActorPartition(filter.actor)]
            : [indexes.byKind, AUDIT_KIND];
      const result = await items.queryItems(
        {
          ...(index ? { index } : {}),
          partition,
          // Sort keys are `<ISO time>#<unique>`: every one from `since` on sorts below '~'.
          ...(filter.since !== undefined ? { sort: { between: [filter.since, '~'] as [string, string] } } : {}),
          descending: true,
          limit: page.limit,
          ...(filter.target !== undefined && filter.actor !== undefined ? { where: { attribute: 'actor', equals: filter.actor } } : {}),
        },
        page.nextToken,
      );
      return { items: result.items.map(fromAuditItem), nextToken: result.nextToken };
    },
  }),
};
