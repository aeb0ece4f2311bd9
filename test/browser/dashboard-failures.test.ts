import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { until, type TestBrowser } from '#test/support/browser.ts';
import { useDashboardSite } from '#test/support/dashboard-site.ts';
import type { TestSite } from '#test/support/local-site.ts';

// The dashboard in Debian's Chromium when the API is not all there: panels an older API lacks, a failing call, a
// site that mints no tokens. The API's answers are fixed in the page's network layer; the site itself is healthy.

// 4 gb200 and 2 h100 machines, as dashboard.test.ts has them.
const site6 = `
[instance_create_retry]
base_delay_ms = 10
timeout_ms = 2000
[simulator]
machines = [ { type = "gb200", count = 4, racks = 2 }, { type = "h100", count = 2, racks = 1 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 20
cleanup_ms = 20
`;

describe('dashboard, when the API is not all there', () => {
  const dashboard = useDashboardSite(site6, 6);
  let site: TestSite;
  let browser: TestBrowser;
  let page: Page;
  /** A machine the fixed answers name as held back and stuck. */
  const held = 'gb200-r1-01';

  const text = async (testid: string, p = page) => (await p.getByTestId(testid).first().textContent()) ?? '';
  const count = async (testid: string) => (await page.getByTestId(testid).locator('.value').textContent())?.trim();
  const row = (table: string, machineId: string, p = page) => p.getByTestId(table).locator('tbody tr').filter({ hasText: machineId });

  beforeAll(async () => {
    ({ site, browser, page } = dashboard());
    await page.goto(`${site.url}/`);
    await until(page, 'six machines', async () => (await count('total-count')) === '6');
  });

  it('shows the repair-storm breaker and stuck repairs when the API answers, and hides them on 404', async () => {
    const only = (path: string) => (url: URL) => url.pathname === path;
    // Whatever this API version answers, fix the answers: absent first, in both shapes of a 404 (API Gateway's own
    // for a route it does not have, and a problem document).
    await page.route(only('/admin/safety'), (route) => route.fulfill({ status: 404, contentType: 'application/json', body: '{"message":"Not Found"}' }));
    await page.route(only('/admin/repairs'), (route) =>
      route.fulfill({ status: 404, contentType: 'application/problem+json', body: '{"status":404,"code":"route-not-found"}' }),
    );
    await until(
      page,
      'no safety panel',
      async () => !(await page.getByTestId('safety').isVisible()) && (await page.getByTestId('pipeline-stuck').count()) === 0,
    );
    expect(await page.getByTestId('errors').isVisible()).toBe(false);

    await page.unrouteAll();
    const since = new Date(Date.now() - 90 * 60_000).toISOString();
    await page.route(only('/admin/safety'), (route) =>
      route.fulfill({ json: { repairStorm: { state: 'tripped', trippedAt: since, heldBack: [held] }, replacementsInFlight: 1 } }),
    );
    await page.route(only('/admin/repairs'), (route) =>
      route.fulfill({ json: { items: [{ machineId: held, since, waitingMinutes: 90, stage: 'unclaimed' }] } }),
    );
    await until(page, 'the tripped breaker', async () => (await page.getByTestId('safety').isVisible()) && (await text('breaker-state')).startsWith('tripped'));
    expect(await text('held-back')).toBe(held);
    const stuck = row('pipeline-stuck', held);
    await until(page, 'the stuck repair', async () => (await stuck.count()) === 1);
    expect(await stuck.locator('td').allTextContents()).toEqual([held, 'unclaimed', '1 h 30 min', expect.any(String)]);
    await page.unrouteAll();
  });

  it('shows a failing API call instead of staying silent, and recovers', async () => {
    await page.route(
      (url) => url.pathname === '/admin/machines',
      (route) =>
        route.fulfill({
          status: 500,
          contentType: 'application/problem+json',
          body: JSON.stringify({ status: 500, code: 'internal-error', detail: 'An internal error occurred' }),
        }),
    );
    await until(
      page,
      'the error',
      async () =>
        (await page.getByTestId('errors').isVisible()) &&
        (await text('errors')).includes('GET /admin/machines?limit=500: 500 internal-error: An internal error occurred'),
    );
    expect(await text('refresh-status')).toMatch(/^Refresh failed at .*; showing data from /);
    expect(await count('total-count')).toBe('6'); // the last data stays on screen
    await page.unrouteAll();
    await until(
      page,
      'the recovery',
      async () => !(await page.getByTestId('errors').isVisible()) && (await text('refresh-status')).startsWith('Last refreshed'),
    );
  });

  it('asks for a token where the API cannot mint one, and keeps it for the tab', async () => {
    const other = await browser.newPage();
    try {
      await other.route(
        (url) => url.pathname === '/_local/token',
        (route) => route.fulfill({ status: 404, body: 'not found' }),
      );
      await other.goto(`${site.url}/dashboard/`);
      const login = other.getByTestId('login');
      await until(other, 'the sign-in form', async () => login.isVisible());
      expect(await other.getByRole('heading', { name: 'Sign in' }).isVisible()).toBe(true);
      expect(await other.locator('#main').isVisible()).toBe(false);
      await other.getByLabel('Bearer token').fill(await site.token('ops', ['provider-admin'], 'alice'));
      await other.getByRole('button', { name: 'Use token' }).click();
      await until(other, 'the fleet', async () => (await other.getByTestId('total-count').locator('.value').textContent()) === '6');
      expect(await login.isVisible()).toBe(false);
      await other.reload();
      await until(other, 'the fleet after a reload', async () => (await other.getByTestId('total-count').locator('.value').textContent()) === '6');
      expect(await login.isVisible()).toBe(false);
    } finally {
      await other.close();
    }
  });

  it('had no script errors', () => {
    expect(dashboard().pageErrors).toEqual([]);
  });
});
