import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '#test/support/browser.ts';
import { type DashboardSite, dashboardSiteTimeoutMs, startDashboardSite } from '#test/support/dashboard-site.ts';
import type { TestSite } from '#test/support/local-site.ts';
import { claimForRepair, cleanedUp, repairRelease, reportIssue, runInstance, setRepairStatus, type Actors } from '#test/support/repair-steps.ts';

// The dashboard in Debian's Chromium, asserting what a person sees (and dashboard-failures.test.ts, when the API is not).

// 4 gb200 and 2 h100 machines; the repair-storm breaker out of the way (with 6 machines one report would trip it).
const site6 = `
[instance_create_retry]
base_delay_ms = 10
timeout_ms = 2000
[repair_storm]
max_quarantines = 100
max_fraction = 1
[simulator]
machines = [ { type = "gb200", count = 4, racks = 2 }, { type = "h100", count = 2, racks = 1 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 20
cleanup_ms = 20
`;

describe('dashboard', () => {
  let dashboard: DashboardSite | undefined;
  let site: TestSite;
  let who: Actors;
  let page: Page;
  let pageErrors: string[];
  let repaired = '';

  const text = async (testid: string, p = page) => (await p.getByTestId(testid).first().textContent()) ?? '';
  const count = async (testid: string) => (await page.getByTestId(testid).locator('.value').textContent())?.trim();
  const row = (table: string, machineId: string, p = page) => p.getByTestId(table).locator('tbody tr').filter({ hasText: machineId });

  beforeAll(async () => {
    dashboard = await startDashboardSite(site6, 6);
    ({ site, who, page, pageErrors } = dashboard);
  }, dashboardSiteTimeoutMs);

  afterAll(() => dashboard?.stop());

  it('is served at / and signs in by itself with a local provider token', async () => {
    await page.goto(`${site.url}/`);
    expect(page.url()).toBe(`${site.url}/dashboard/`);
    await until(page, 'six allocatable machines', async () => (await count('allocatable-count')) === '6');
    expect(await count('total-count')).toBe('6');
    expect(await page.getByTestId('by-state').locator('tbody tr').allTextContents()).toEqual(['Ready6', 'Assigned0', 'Cleanup0']);
    expect(await text('refresh-status')).toMatch(/^Last refreshed .* \(refreshes every 2 s\)$/);
    expect(await page.getByRole('heading', { name: 'Repair pipeline' }).isVisible()).toBe(true);
    expect(await page.getByTestId('errors').isVisible()).toBe(false);
    expect(await page.getByTestId('login').isVisible()).toBe(false);
    // Every machine is listed, each a link to its detail.
    expect(await page.getByTestId('machines-table').locator('tbody tr a.machine').count()).toBe(6);
    expect(await count('stale-count')).toBe('0');
    expect(await text('release')).toMatch(/^release \d+\.\d+\.\d+ · data version (\d+) of \1$/);
  });

  // Every mutation under <main> (the panels) is recorded as where it happened: the panel, the table, and the machine
  // of the row or rack-map square. The header's status line changes every poll by design and is not watched.
  const watchMutations = () =>
    page.evaluate(() => {
      const seen: string[] = [];
      Object.assign(window, { mutationsSeen: seen });
      const where = (node: Node) => {
        const el = node instanceof Element ? node : node.parentElement;
        const machine = el?.closest('tbody tr')?.querySelector('[data-machine]') ?? el?.closest('a.cell');
        const places = [el?.closest('section')?.dataset.testid, el?.closest('table')?.dataset.testid, machine?.getAttribute('data-machine')];
        return places.filter(Boolean).join(' ');
      };
      const observer = new MutationObserver((records) => seen.push(...records.map((r) => where(r.target))));
      observer.observe(document.getElementById('main')!, { subtree: true, childList: true, attributes: true, characterData: true });
    });
  /** Where the page changed since the last call. */
  const mutationsSeen = async () => {
    const seen = await page.evaluate(() => (window as unknown as { mutationsSeen: string[] }).mutationsSeen.splice(0));
    return [...new Set(seen)].sort();
  };
  const polls = async (n: number) => {
    const refreshes = async () => Number(await page.getByTestId('refresh-status').getAttribute('data-refreshes'));
    const from = await refreshes();
    await until(page, `${n} more refreshes`, async () => (await refreshes()) >= from + n);
  };

  it('writes to the page only what changed: nothing on a quiet poll, one row or square for a changed machine; focus and scroll stay', async () => {
    const machines = page.getByTestId('machines-table');
    const ids = await machines.locator('tbody tr a.machine').evaluateAll((links) => links.map((a) => a.getAttribute('data-machine')!));
    const [focused, labelled] = ids;
    await machines.scrollIntoViewIfNeeded();
    await machines.locator(`a.machine[data-machine="${focused}"]`).focus();
    const scrolled = await page.evaluate(() => window.scrollY);
    // The rows on the page now, marked on the element (not in an attribute, which a changed row loses): a row drawn
    // again would be a new element, unmarked.
    const rows = machines.locator('tbody tr');
    await rows.evaluateAll((all) => {
      for (const r of all) Object.assign(r, { wasHere: true });
    });
    const kept = async () => {
      expect(await rows.evaluateAll((all) => all.filter((r) => !('wasHere' in r)).length)).toBe(0);
      expect(await page.evaluate(() => document.activeElement?.getAttribute('data-machine'))).toBe(focused);
      expect(await page.evaluate(() => window.scrollY)).toBe(scrolled);
    };
    await watchMutations();

    await polls(2);
    expect(await mutationsSeen()).toEqual([]);
    await kept();

    // A label on one machine: its row changes, and the audit log records the change; nothing else.
    await site.call('PATCH', `/admin/machines/${labelled}/labels`, { token: who.admin, body: { labels: { note: 'rendered' } } });
    const row = machines.locator(`tbody tr:has(a.machine[data-machine="${labelled}"])`);
    await until(page, 'the new label', async () => (await row.textContent())?.includes('note=rendered'));
    await polls(1);
    expect((await mutationsSeen()).filter((at) => !at.startsWith('audit '))).toEqual([`machines machines-table ${labelled}`]);
    await kept();

    // A tenant's instance on one machine: on the rack map, its square changes and no other.
    const instance = await runInstance(site, who);
    const assigned = instance.machineId as string;
    const cell = page.getByTestId('rack-map').locator(`a.cell[data-machine="${assigned}"]`);
    await until(page, `${assigned} assigned on the rack map`, async () => (await cell.getAttribute('class')) === 'cell state-Assigned');
    await polls(1);
    const changed = await mutationsSeen();
    expect(changed.filter((at) => at.startsWith('rack-map'))).toEqual([`rack-map ${assigned}`]);
    expect(changed.filter((at) => at.startsWith('machines '))).toEqual([`machines machines-table ${assigned}`]);
    await kept();

    expect((await site.call('DELETE', `/v2/org/acme/nico/instance/${instance.id}`, { token: who.tenant })).status).toBe(202);
    await cleanedUp(site, who.admin, assigned);
    await site.call('PATCH', `/admin/machines/${labelled}/labels`, { token: who.admin, body: { labels: { note: null } } });
    await until(page, 'the machine ready again', async () => (await cell.getAttribute('class')) === 'cell state-Ready');
    await until(page, 'the label gone', async () => !(await row.textContent())?.includes('note='));
  });

  it('the machine table is filtered by the server', async () => {
    const machines = page.getByTestId('machines-table');
    const types = () => machines.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.children[1]?.textContent ?? ''));
    await page.locator('#filter-type').fill('h100');
    await page.locator('#filter-type').press('Enter');
    await until(page, 'only h100 machines', async () => JSON.stringify(await types()) === JSON.stringify(['h100', 'h100']));
    expect(await machines.locator('caption').textContent()).toBe('Machines (h100), page 1: 2 shown');
    await page.locator('#filter-allocatable').selectOption('false');
    await until(page, 'no match', async () => (await machines.locator('tbody').textContent()) === 'No machine matches.');
    expect(await page.getByTestId('page-next').isDisabled()).toBe(true);
    await page.locator('#filter-allocatable').selectOption('');
    await page.locator('#filter-type').fill('');
    await page.locator('#filter-type').press('Enter');
    await until(page, 'all six again', async () => (await machines.locator('tbody tr a.machine').count()) === 6);
  });

  it('the rack map: every machine a cell, grouped by type and rack, coloured by state; a cell opens the machine', async () => {
    const map = page.getByTestId('rack-map');
    const racks = () =>
      map
        .getByTestId('rack')
        .evaluateAll((rows) => rows.map((r) => `${r.getAttribute('data-rack')}:${[...r.querySelectorAll('a.cell')].map((c) => c.className).join(',')}`));
    const ready = 'cell state-Ready';
    await until(
      page,
      'the gb200 racks',
      async () => JSON.stringify(await racks()) === JSON.stringify([`rack-1:${ready},${ready}`, `rack-2:${ready},${ready}`]),
    );
    await page.locator('#rack-type').selectOption('h100');
    await until(page, 'the h100 rack', async () => JSON.stringify(await racks()) === JSON.stringify([`rack-3:${ready},${ready}`]));
    const cell = map.locator('a.cell').first();
    const machineId = (await cell.getAttribute('data-machine'))!;
    await cell.click();
    const detail = page.getByTestId('machine-detail');
    await until(
      page,
      'the machine from the map',
      async () => (await detail.isVisible()) && ((await detail.getByRole('heading', { level: 2 }).textContent()) ?? '').includes(machineId),
    );
    await detail.getByRole('link', { name: 'Close' }).click();
    await page.locator('#rack-type').selectOption('gb200');
  });

  it("the rack map: a reserved machine's square is outlined in its reservation's colour and named in the key; released, it is not", async () => {
    const map = page.getByTestId('rack-map');
    await page.locator('#rack-type').selectOption('h100');
    const cells = map.locator('a.cell');
    await until(page, 'the h100 squares', async () => (await cells.count()) === 2);
    const [held, free] = (await cells.evaluateAll((all) => all.map((a) => a.getAttribute('data-machine')))) as [string, string];
    // Only a free machine is reserved: an earlier test's cleanup, or a late beat on a loaded host, may hold it a while.
    const reserve = () => site.call('POST', '/admin/reservations', { token: who.admin, body: { org: 'acme', machineType: 'h100', machineIds: [held] } });
    const created = await site.eventually(async () => reserve().then((answer) => (answer.status === 409 ? undefined : answer)), 50_000);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const reservation = (created.body as { id: string }).id;
    const square = (id: string) => map.locator(`a.cell[data-machine="${id}"]`);
    const outline = (id: string) => square(id).evaluate((a) => getComputedStyle(a).outlineStyle);
    await until(page, `${held} outlined on the rack map`, async () => ((await square(held).getAttribute('class')) ?? '').includes('reserved'));
    expect(await outline(held)).toBe('solid');
    expect(await outline(free)).toBe('none');
    expect(await square(held).getAttribute('data-reservation')).toBe(reservation);
    expect(await square(held).getAttribute('title')).toBe(`${held} · Ready · reservation ${reservation} (org acme)`);
    expect(await square(free).getAttribute('class')).toBe('cell state-Ready');
    expect(await map.getByTestId('reservation-key').allTextContents()).toEqual([` reservation ${reservation} (org acme): 1 machine`]);
    const keyColour = await map
      .getByTestId('reservation-key')
      .locator('.cell')
      .evaluate((swatch) => getComputedStyle(swatch).outlineColor);
    expect(await square(held).evaluate((a) => getComputedStyle(a).outlineColor)).toBe(keyColour);

    expect((await site.call('DELETE', `/admin/reservations/${reservation}`, { token: who.admin })).status).toBe(200);
    await until(page, `${held} no longer outlined`, async () => (await square(held).getAttribute('class')) === 'cell state-Ready');
    expect(await outline(held)).toBe('none');
    expect(await map.getByTestId('reservation-key').count()).toBe(0);
    await page.locator('#rack-type').selectOption('gb200');
  }, 60_000);

  it('a release with an issue: the machine waits for a repair tenant with its issue, and the counts change', async () => {
    repaired = await reportIssue(site, who, { category: 'hardware', summary: 'ECC errors', details: 'DIMM 2' });
    const waiting = row('pipeline-waiting', repaired);
    await until(page, `${repaired} waiting for a repair tenant`, async () => (await waiting.count()) === 1);
    const cells = await waiting.locator('td').allTextContents();
    expect(cells[0]).toBe(repaired);
    expect(cells[1]).toBe('HARDWARE ECC errors');
    expect(cells[2]).toMatch(/^\d+ s/); // waiting for: seconds so far
    await until(page, 'five allocatable machines', async () => (await count('allocatable-count')) === '5');
    expect(await count('waiting-count')).toBe('1');
    const byOverride = await page.getByTestId('by-override').locator('tbody tr').allTextContents();
    expect(byOverride).toEqual(['repair-request1', 'tenant-reported-issue1']);
  });

  it('a repair: in repair with its repair_status, then completed and back in the allocatable count', async () => {
    const instanceId = await claimForRepair(site, who, repaired);
    const inRepair = row('pipeline-in-repair', repaired);
    await until(page, `${repaired} in repair`, async () => (await inRepair.count()) === 1 && (await inRepair.textContent())?.includes('InProgress'));
    expect(await inRepair.textContent()).toContain(instanceId);
    expect(await row('pipeline-waiting', repaired).count()).toBe(0);

    await setRepairStatus(site, who, repaired, 'Completed');
    await repairRelease(site, who, instanceId, repaired);
    const outcome = row('pipeline-outcomes', repaired);
    await until(page, `${repaired} completed`, async () => (await outcome.count()) === 1);
    const cells = await outcome.locator('td').allTextContents();
    expect(cells[1]).toBe('Completed');
    expect(cells[3]).toBe('Completed');
    expect(cells[4]).toBe('HARDWARE ECC errors'); // what was repaired
    await until(page, 'six allocatable machines again', async () => (await count('allocatable-count')) === '6');
    expect(await count('in-repair-count')).toBe('0');
    expect(await page.getByTestId('by-override').locator('tbody tr').allTextContents()).toEqual(['No machine has a health override.']);
  });

  // Right after the repair, while the repaired machine cannot yet have been picked for another report.
  it('machine detail: overrides, labels and the history timeline', async () => {
    await row('pipeline-outcomes', repaired).getByRole('link', { name: repaired }).click();
    const detail = page.getByTestId('machine-detail');
    await until(page, 'the machine detail', async () => (await detail.isVisible()) && (await page.getByTestId('history-entry').count()) > 0);
    expect(page.url()).toBe(`${site.url}/dashboard/#machine/${repaired}`);
    expect(await detail.getByRole('heading', { level: 2 }).textContent()).toContain(`Machine ${repaired}`);
    expect(await text('detail-allocatable')).toBe('yes');
    expect(await page.getByTestId('detail-overrides').locator('tbody').textContent()).toBe('No health overrides.');
    expect(await page.getByTestId('detail-labels').locator('tbody tr').allTextContents()).toContain('repair_statusCompleted');
    // Wait for the delivery entries the stream adds after the release.
    await until(page, 'RepairCompleted delivered', async () => (await text('history')).includes('event-delivered RepairCompleted'));
    const timeline = await page.getByTestId('history-entry').allTextContents();
    const has = (fragment: string) => timeline.some((entry) => entry.includes(fragment));
    expect(has('instance-released ')).toBe(true);
    expect(has('Issue: HARDWARE ECC errors — DIMM 2')).toBe(true);
    expect(has('instance-released-by-repair-tenant repair_status: Completed by repair-bot')).toBe(true);
    expect(has('event-emitted RepairCompleted')).toBe(true);
    expect(has('event-emitted RepairRequested')).toBe(true);
    expect(has('health-override-removed')).toBe(true);
    expect(has('healthOverride: repair-request → ∅')).toBe(true);
    // Newest first.
    expect(timeline.findIndex((e) => e.includes('RepairCompleted'))).toBeLessThan(timeline.findIndex((e) => e.includes('RepairRequested')));

    const dir = await mkdtemp(join(tmpdir(), 'fleetward-dashboard-'));
    const file = join(dir, 'dashboard.png');
    await page.screenshot({ path: file, fullPage: true });
    console.log(`dashboard screenshot: ${file}`);

    await detail.getByRole('link', { name: 'Close' }).click();
    await until(page, 'the detail closed', async () => !(await detail.isVisible()));
  });

  it('a failed repair: quarantined again with the default issue, listed as failed', async () => {
    const machineId = await reportIssue(site, who, { category: 'network', summary: 'IB link flaps', details: 'port 3' });
    const instanceId = await claimForRepair(site, who, machineId);
    await setRepairStatus(site, who, machineId, null);
    await repairRelease(site, who, instanceId, machineId);
    const quarantined = row('pipeline-quarantined', machineId);
    await until(page, `${machineId} quarantined`, async () => (await quarantined.count()) === 1);
    expect(await quarantined.textContent()).toContain('OTHER RepairSystem processing incomplete');
    const outcome = row('pipeline-outcomes', machineId);
    await until(page, `${machineId} failed`, async () => (await outcome.count()) === 1);
    expect((await outcome.locator('td').allTextContents())[1]).toBe('Failed');
    expect(await count('quarantined-count')).toBe('1');
    const { machineType } = (await site.call('GET', `/admin/machines/${machineId}`, { token: who.admin })).body;
    await page.locator('#rack-type').selectOption(machineType);
    const cell = page.getByTestId('rack-map').locator(`a.cell[data-machine="${machineId}"]`);
    await until(page, `${machineId} red on the rack map`, async () => (await cell.getAttribute('class')) === 'cell state-Ready quarantined');
    expect(await page.getByTestId('rack-map').locator('a.cell.quarantined').count()).toBe(1);
    await page.locator('#rack-type').selectOption('gb200');
  });

  // The plots hold the counts uPlot was given (read back from the chart instance into data-counts), summed over the
  // 30 days: two reports (each a quarantine and a repair request), one completed and one failed repair so far.
  const plotted = async (testid: string): Promise<number[][]> => JSON.parse((await page.getByTestId(testid).getAttribute('data-counts')) ?? '[]');
  const sum = (values: number[] | undefined) => (values ?? []).reduce((a, b) => a + b, 0);

  it('plots quarantines, repairs completed and failed per day, and time to repair, from history', async () => {
    const panel = page.getByTestId('repair-stats');
    await until(page, 'two quarantines, one completed and one failed repair plotted', async () => {
      if (!(await panel.isVisible())) return false;
      const [quarantined] = await plotted('plot-quarantines');
      const [completed, failed] = await plotted('plot-repairs');
      return sum(quarantined) === 2 && sum(completed) === 1 && sum(failed) === 1;
    });
    for (const testid of ['plot-quarantines', 'plot-repairs']) {
      expect(await page.getByTestId(testid).getAttribute('data-days')).toBe('30');
      expect(await page.getByTestId(testid).locator('canvas').count()).toBe(1);
    }
    // Today is the last day of the window: everything happened during this test run.
    const [quarantined] = await plotted('plot-quarantines');
    const [completed, failed] = await plotted('plot-repairs');
    expect([quarantined?.at(-1), completed?.at(-1), failed?.at(-1)]).toEqual([2, 1, 1]);
    expect(await text('ttr-count')).toMatch(/^time to repair over 1 repairs, last 30 days/);
    expect(await text('ttr-median')).toMatch(/^median \d+(\.\d)? min$/);
    const stats = (await site.call('GET', '/admin/fleet/repair-stats?days=30', { token: who.admin })).body;
    expect(await text('ttr-median')).toBe(`median ${stats.timeToRepairMinutes.median} min`);
    expect(await text('ttr-p90')).toBe(`p90 ${stats.timeToRepairMinutes.p90} min`);
  });

  it('each plot shows the counts of each day as the API gives them', async () => {
    const days = [
      { day: '2026-01-01', quarantined: 3, repairsCompleted: 0, repairsFailed: 1 },
      { day: '2026-01-02', quarantined: 0, repairsCompleted: 4, repairsFailed: 0 },
      { day: '2026-01-03', quarantined: 7, repairsCompleted: 2, repairsFailed: 5 },
    ];
    await page.route(
      (url) => url.pathname === '/admin/fleet/repair-stats',
      (route) => route.fulfill({ json: { days, timeToRepairMinutes: { median: 42.5, p90: 120, count: 6 } } }),
    );
    await until(page, 'the answered counts plotted', async () => JSON.stringify(await plotted('plot-quarantines')) === JSON.stringify([[3, 0, 7]]));
    expect(await plotted('plot-repairs')).toEqual([
      [0, 4, 2],
      [1, 0, 5],
    ]);
    expect(await page.getByTestId('plot-repairs').getAttribute('data-days')).toBe('3');
    expect(await text('ttr-median')).toBe('median 42.5 min');
    expect(await text('ttr-p90')).toBe('p90 120 min');
    expect(await text('ttr-count')).toBe('time to repair over 6 repairs, last 3 days (UTC)');
    await page.unrouteAll();
  });

  it('meta-instances with their status', async () => {
    const created = await site.call('POST', '/v2/org/acme/nico/meta-instance', { token: who.tenant, body: { machineType: 'h100', minNodes: 2 } });
    expect(created.status).toBe(201);
    const meta = page.getByTestId('meta-row').filter({ hasText: created.body.id });
    await until(page, 'the meta-instance Ready', async () => (await meta.count()) === 1 && (await meta.textContent())?.includes('Ready'));
    const cells = await meta.locator('td').allTextContents();
    expect(cells.slice(0, 5)).toEqual([created.body.id, 'acme', 'h100', '2 of 2', 'Ready']);
  });

  it('lists provider actions in the audit table, newest first, with the request id', async () => {
    const patched = await site.call('PATCH', `/admin/machines/${repaired}/labels`, { token: who.admin, body: { labels: { audited: 'yes' } } });
    expect(patched.status).toBe(200);
    const requestId = patched.headers.get('apigw-requestid')!;
    const newest = page.getByTestId('audit-table').locator('tbody tr').first();
    await until(page, 'the label change at the top of the audit table', async () => ((await newest.textContent()) ?? '').includes(requestId));
    expect(await newest.locator('td').allTextContents()).toEqual([
      expect.any(String),
      'provider-user',
      'labels-changed',
      `machines/${repaired}`,
      expect.any(String),
      expect.stringContaining('"audited":"yes"'),
      requestId,
    ]);
    expect(await page.getByRole('heading', { name: 'Audit log' }).isVisible()).toBe(true);
  });

  it('a machine the site agent reports: its alerts in the detail, marked in the table and on the rack map', async () => {
    const id = 'h100-r3-02';
    const alerts = [{ id: 'GpuXid79', message: 'GPU 3 fell off the bus', classifications: ['PreventAllocations'] }];
    expect((await site.call('POST', `/_sim/machines/${id}/health`, { body: { alerts } })).status).toBe(200);
    await page.goto(`${site.url}/dashboard/#machine/${id}`);
    const shown = page.getByTestId('detail-alerts');
    await until(page, `the alerts of ${id}`, async () => (await shown.count()) === 1);
    expect(await shown.locator('tbody tr td').allTextContents()).toEqual(['GpuXid79', 'PreventAllocations', 'GPU 3 fell off the bus']);
    expect(await row('machines-table', id).locator('code.hardware-health').getAttribute('title')).toBe('GpuXid79');
    await page.locator('#rack-type').selectOption('h100');
    const cell = page.getByTestId('rack-map').locator(`a.cell[data-machine="${id}"]`);
    await until(page, `${id} marked on the rack map`, async () => ((await cell.getAttribute('class')) ?? '').includes('hardware-health'));

    await site.call('POST', `/_sim/machines/${id}/health`, { body: { alerts: [] } });
    await until(page, 'the alerts gone from the detail', async () => (await shown.count()) === 0);
    await page.locator('#rack-type').selectOption('gb200');
  });

  it('had no script errors', () => {
    expect(pageErrors).toEqual([]);
  });
});
