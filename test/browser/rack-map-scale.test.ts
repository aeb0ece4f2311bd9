import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureChromium, installTimeoutMs, launchBrowser, until, type TestBrowser } from '#test/support/browser.ts';
import { startTestSite, testConfig, type TestSite } from '#test/support/local-site.ts';
import { actors } from '#test/support/repair-steps.ts';

// The rack map of a big site, in Chromium: racks are tiles in a grid, so the map's height grows with the number of
// racks divided by the tiles a row holds, not with the number of racks. 14 racks of 72 machines, each 4 NVLink
// domains of 18 (outlined groups in the tile), are drawn for real; the grid they land in says how tall 10,000
// machines (139 such racks) would be.

const RACK = 72;
const RACKS = 14;
const DOMAIN = 18;
const SITE_MACHINES = 10_000;

describe('rack map at scale', () => {
  let site: TestSite;
  let browser: TestBrowser;
  let page: Page;

  beforeAll(async () => {
    ensureChromium();
    site = await startTestSite({
      config: testConfig(`
[simulator]
machines = [ { type = "gb200", count = ${RACK * RACKS}, racks = ${RACKS}, nvlink_domain_size = ${DOMAIN} } ]
heartbeat_interval_seconds = 5
`),
    });
    const { admin } = await actors(site);
    const allocatable = async () => (await site.call('GET', '/admin/fleet/summary', { token: admin })).body.allocatable === RACK * RACKS;
    await site.eventually(allocatable, 90_000);
    browser = await launchBrowser();
    page = await browser.newPage();
  }, installTimeoutMs + 120_000);

  afterAll(async () => {
    await browser?.close();
    await site?.stop();
  });

  it(`draws every machine by NVLink domain, and a ${SITE_MACHINES.toLocaleString('en')}-machine site of ${RACK}-machine racks fits on one screen`, async () => {
    await page.goto(`${site.url}/`);
    const map = page.getByTestId('rack-map').locator('.rack-map');
    await until(page, 'every machine on the rack map', async () => (await map.locator('a.cell').count()) === RACK * RACKS, 30_000);

    const tiles = await map
      .getByTestId('rack')
      .evaluateAll((racks) => racks.map((r) => r.getBoundingClientRect()).map((b) => ({ x: b.x, y: b.y, h: b.height })));
    expect(tiles).toHaveLength(RACKS);
    const domainsPerTile = await map.getByTestId('rack').evaluateAll((racks) => racks.map((r) => r.querySelectorAll('[data-testid="nvlink-domain"]').length));
    expect(domainsPerTile).toEqual(Array.from({ length: RACKS }, () => RACK / DOMAIN));
    const perRow = tiles.filter((t) => t.y === tiles[0]!.y).length;
    const rowPitch = Math.min(...tiles.filter((t) => t.y > tiles[0]!.y).map((t) => t.y - tiles[0]!.y));
    expect(perRow).toBeGreaterThan(1);
    expect(perRow).toBeLessThan(RACKS);

    const rows = Math.ceil(Math.ceil(SITE_MACHINES / RACK) / perRow);
    const height = (rows - 1) * rowPitch + tiles[0]!.h;
    const screen = page.viewportSize()!.height;
    console.log(`rack map: ${perRow} tiles of ${RACK} machines a row, ${rowPitch} px a row; ${SITE_MACHINES} machines: ${rows} rows, ${height} px`);
    expect(height).toBeLessThanOrEqual(screen);
  });
});
