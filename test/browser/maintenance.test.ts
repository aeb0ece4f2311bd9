import { describe, expect, it } from 'vitest';
import { until } from '#test/support/browser.ts';
import { useDashboardSite } from '#test/support/dashboard-site.ts';
import { machine, runInstance } from '#test/support/repair-steps.ts';

// The dashboard's open maintenance, in Chromium: a rack in maintenance while a tenant holds one of its machines, drawn
// as a timeline with its hand-back deadlines (a deferral adds one), its waves, and a machine that overran its window.

const DAY = 86_400_000;
const WINDOW_MINUTES = 1;

const config = `
[instance_create_retry]
base_delay_ms = 10
[simulator]
machines = [ { type = "gb200", count = 4, racks = 2 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 20
cleanup_ms = 20
maintenance_ms = 100
validation_ms = 50
`;

describe('dashboard: open maintenance', () => {
  const dashboard = useDashboardSite(config, 4);

  it('shows each open maintenance as a timeline: deadlines and whose, waves, and the machines overdue', {
    timeout: WINDOW_MINUTES * 60_000 + 60_000,
  }, async () => {
    const { site, who, page, pageErrors } = dashboard();
    await page.goto(`${site.url}/`);
    const panel = page.getByTestId('maintenance');
    await until(page, 'the maintenance panel', async () => (await panel.isVisible()) && (await panel.getByTestId('no-maintenance').isVisible()));

    const instance = await runInstance(site, who);
    const rack = (await machine(site, who.admin, instance.machineId)).rack as string;
    const { items } = (await site.call('GET', '/admin/machines', { token: who.admin })).body;
    const free = items.find((m: { id: string; rack: string }) => m.rack === rack && m.id !== instance.machineId).id as string;
    // The free machine's validation never reports: it stays in its wave past its window.
    await site.call('POST', `/_sim/machines/${free}/validation`, { body: { outcome: 'never' } });
    const body = {
      kind: 'planned',
      category: 'network',
      reason: 'ToR switch replacement',
      scope: { racks: [rack] },
      handBackBy: new Date(Date.now() + 15 * DAY).toISOString(),
      windowMinutes: WINDOW_MINUTES,
      rollout: { maxInFlight: 1 },
    };
    const declared = await site.call('POST', '/admin/maintenance', { token: who.admin, body });
    expect(declared.status, JSON.stringify(declared.body)).toBe(201);
    const id = declared.body.id as string;

    const item = panel.locator(`[data-maintenance="${id}"]`);
    await until(page, 'the wave and the held machine', async () => {
      const phases = await item.getByTestId('maintenance-phases').textContent();
      return phases === '1 held, 1 validating' && (await item.getByTestId('wave').count()) === 1;
    });
    expect(await item.locator('h3').textContent()).toBe(`${id} planned network maintenance on 2 machines InProgress`);
    expect(await item.getByTestId('wave').textContent()).toBe('wave 1: 0/1 back');
    expect(await item.getByTestId('deadlines').textContent()).toMatch(/ \(acme: 1 still held\)$/);
    expect(await item.getByTestId('deadline-mark').count()).toBe(1);

    // A deferral accepted gives acme a deadline of its own: two marks on the axis.
    const until20 = new Date(Date.now() + 20 * DAY).toISOString();
    await site.call('POST', `/v2/org/acme/nico/maintenance/${id}/deferral`, { token: who.tenant, body: { until: until20, reason: 'a run ends' } });
    expect((await site.call('POST', `/admin/maintenance/${id}/deferrals/acme`, { token: who.admin, body: { decision: 'accept' } })).status).toBe(200);
    await until(page, 'two deadlines', async () => (await item.getByTestId('deadline-mark').count()) === 2);
    expect(await item.getByTestId('deadlines').textContent()).toMatch(/ \(0 still held\); .* \(acme: 1 still held\)$/);
    const [first, second] = await item.getByTestId('deadline-mark').evaluateAll((marks) => marks.map((m) => m.getBoundingClientRect().x));
    expect(second!).toBeGreaterThan(first!);

    // Past its window and still validating: overdue, with a link to the machine.
    const overdue = item.getByTestId('overdue-table');
    await until(page, 'the overdue machine', async () => (await overdue.locator('tbody tr').textContent())?.startsWith(free), WINDOW_MINUTES * 60_000 + 15_000);
    expect(await overdue.locator(`a.machine[data-machine="${free}"]`).count()).toBe(1);
    expect(await overdue.locator('tbody tr td').nth(1).textContent()).toBe('validating');

    expect((await site.call('POST', `/admin/maintenance/${id}/cancel`, { token: who.admin })).status).toBe(200);
    await until(page, 'no open maintenance once cancelled', async () => panel.getByTestId('no-maintenance').isVisible());
    expect(pageErrors).toEqual([]);
  });
});
