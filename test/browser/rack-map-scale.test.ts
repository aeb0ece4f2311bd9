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
  let admin: string;

  beforeAll(async () => {
    ensureChromium();
    site = await startTestSite({
      // What is drawn is the map, not commissioning: a thousand first validations would only slow the start.
      config: testConfig(`
[validation]
after = []
[simulator]
machines = [ { type = "gb200", count = ${RACK * RACKS}, racks = ${RACKS}, nvlink_domain_size = ${DOMAIN} } ]
heartbeat_interval_seconds = 5
`),
    });
    ({ admin } = await actors(site));
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

  it("outlines the squares of reserved NVLink domains in their reservation's colour, names each in the key, and keeps the tiles as they were", async () => {
    const map = page.getByTestId('rack-map').locator('.rack-map');
    const tiles = () => map.getByTestId('rack').evaluateAll((racks) => racks.map((r) => JSON.stringify(r.getBoundingClientRect())));
    const before = await tiles();
    const domains = await map.getByTestId('nvlink-domain').evaluateAll((groups) => groups.map((g) => g.getAttribute('data-domain')!));
    // The first rack's first domain, and the last rack's last: two reservations far apart on the map.
    const reserved = [domains[0]!, domains.at(-1)!];
    const ids: string[] = [];
    for (const [i, domain] of reserved.entries()) {
      const org = `org-${i}`;
      const created = await site.call('POST', '/admin/reservations', { token: admin, body: { org, machineType: 'gb200', nvlinkDomains: [domain] } });
      expect(created.status).toBe(201);
      ids.push((created.body as { id: string }).id);
    }
    const outlined = map.locator('a.cell.reserved');
    await until(page, 'both domains outlined', async () => (await outlined.count()) === 2 * DOMAIN, 30_000);
    for (const [i, domain] of reserved.entries()) {
      const squares = map.locator(`[data-domain="${domain}"] a.cell`);
      expect(await squares.evaluateAll((all) => all.map((a) => a.getAttribute('data-reservation')))).toEqual(Array(DOMAIN).fill(ids[i]));
      const key = page.getByTestId('rack-map').locator(`[data-testid="reservation-key"][data-reservation="${ids[i]}"]`);
      expect(await key.textContent()).toBe(` reservation ${ids[i]} (org org-${i}): ${DOMAIN} machines`);
      const colour = await key.locator('.cell').evaluate((swatch) => getComputedStyle(swatch).outlineColor);
      expect(new Set(await squares.evaluateAll((all) => all.map((a) => getComputedStyle(a).outlineColor)))).toEqual(new Set([colour]));
    }
    expect(await tiles()).toEqual(before);
  });
});
