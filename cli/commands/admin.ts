import { Command } from 'commander';
import type { Item } from '#client/api.ts';
import { renderTable, type Column } from '../output.ts';
import { action, type RuntimeDeps } from '../runtime.ts';

// `fleetward admin migrations [--watch]`: the data migrations of the site's release (GET /admin/migrations), which
// run in the background after a deploy; --watch follows them until none is pending or running.

type Migration = Item<'/admin/migrations'>;

const progress = (m: Migration): string => {
  if (m.itemsTotal === undefined || m.itemsTotal === 0) return String(m.itemsDone);
  return `${m.itemsDone}/${m.itemsTotal} (${Math.min(100, Math.round((100 * m.itemsDone) / m.itemsTotal))}%)`;
};

const columns: Column<Migration>[] = [
  { header: 'id', value: (m) => m.id },
  { header: 'name', value: (m) => m.name },
  { header: 'state', value: (m) => m.state },
  { header: 'items', value: progress },
  { header: 'migrated', value: (m) => m.itemsMigrated },
  { header: 'started', value: (m) => m.startedAt },
  { header: 'done by', value: (m) => m.finishedAt ?? m.estimatedDoneAt },
  { header: 'error', value: (m) => m.error },
];

export const renderMigrations = (items: Migration[]): string => renderTable(items, columns);

const settled = (items: Migration[]) => items.every((m) => m.state === 'done');

export function adminCommand(deps: RuntimeDeps): Command {
  const admin = new Command('admin').description("the site's own upkeep (provider)");
  admin
    .command('migrations')
    .description("the data migrations of the site's release and where each stands; --watch follows them until all are done")
    .option('--watch', 'poll until every migration is done (FLEETWARD_POLL_MS between polls)')
    .action(
      action(deps, async (rt, _args, o: { watch?: boolean }) => {
        let items = (await rt.client.get('/admin/migrations')).items;
        while (o.watch && !settled(items)) {
          if (!rt.out.forScripts) rt.out.note(renderMigrations(items));
          await new Promise((resolve) => setTimeout(resolve, Number(process.env.FLEETWARD_POLL_MS ?? 2000)));
          items = (await rt.client.get('/admin/migrations')).items;
        }
        rt.out.result({ items }, () => renderMigrations(items));
      }),
    );
  return admin;
}
