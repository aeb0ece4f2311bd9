import { Command } from 'commander';
import type { Item } from '#client/api.ts';

type AuditEntry = Item<'/admin/audit'>;
import { renderTable, type Column } from '../output.ts';
import { action, parsePositiveInt, type RuntimeDeps } from '../runtime.ts';

// `fleetward audit list` (provider): who did what to which resource, newest first (GET /admin/audit).

const change = (entry: AuditEntry): string =>
  [
    entry.before === undefined ? undefined : `before ${JSON.stringify(entry.before)}`,
    entry.after === undefined ? undefined : `after ${JSON.stringify(entry.after)}`,
  ]
    .filter((part) => part !== undefined)
    .join(' ');

export const auditColumns: Column<AuditEntry>[] = [
  { header: 'at', value: (e) => e.at },
  { header: 'actor', value: (e) => e.actor },
  { header: 'action', value: (e) => e.action },
  { header: 'target', value: (e) => e.target },
  { header: 'request', value: (e) => e.requestId },
  { header: 'change', value: change },
];

export function auditCommand(deps: RuntimeDeps): Command {
  const audit = new Command('audit').description('the audit log of provider actions (provider)');

  audit
    .command('list')
    .description('provider actions, newest first: who, when, what, on which resource, the request id, before and after')
    .option('--actor <sub>', "only this actor's actions (the token's sub)")
    .option('--target <resource>', 'only actions on this resource: machines/<id>, tenants/<org>, safety/repair-storm, machines')
    .option('--since <time>', 'only actions at or after this ISO 8601 time')
    .option('--limit <n>', 'at most this many (default: all)', parsePositiveInt)
    .action(
      action(deps, async (rt, _args, o: { actor?: string; target?: string; since?: string; limit?: number }) => {
        const query = { ...(o.actor ? { actor: o.actor } : {}), ...(o.target ? { target: o.target } : {}), ...(o.since ? { since: o.since } : {}) };
        const items = await rt.client.list('/admin/audit', { params: { query } }, o.limit);
        rt.out.result({ items }, () => (items.length === 0 ? 'no audit entries' : renderTable(items, auditColumns)));
      }),
    );

  return audit;
}
