import { describe, expect, it } from 'vitest';
import { until } from '#test/support/browser.ts';
import { useDashboardSite } from '#test/support/dashboard-site.ts';
import { runInstance } from '#test/support/repair-steps.ts';

// The dashboard's capacity page of an org, in Chromium: its delivered, healthy, reserved and in-use machines over
// time, drawn from the history the sweep keeps (a point a second here), so a reload draws the same past. And the
// rack map's NVLink domains: gb200 in domains of 4 over racks of 3, so gb200-nvl1 spans rack-1 and rack-2.

const config = `
[instance_create_retry]
base_delay_ms = 10
timeout_ms = 2000
[sweep]
capacity_history_seconds = 1
[simulator]
machines = [ { type = "gb200", count = 6, racks = 2, nvlink_domain_size = 4 }, { type = "h100", count = 2, racks = 1 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 20
cleanup_ms = 20
`;

type Counts = Array<number[]>;

describe('dashboard capacity page and NVLink domains', () => {
  const dashboard = useDashboardSite(config, 8);

  const chart = (type: string) => dashboard().page.getByTestId('capacity').locator(`[data-testid="capacity-chart"][data-type="${type}"]`);
  const countsOf = async (type: string): Promise<Counts> => JSON.parse((await chart(type).getAttribute('data-counts')) ?? '[]');

  it("draws an org's delivered, healthy, reserved and in-use machines over time, and the same past after a reload", async () => {
    const { site, who, page, pageErrors } = dashboard();
    await runInstance(site, who);
    await runInstance(site, who);
    // The history holds a point from before the instances were Ready and one with both in use.
    await site.eventually(async () => {
      const points = (await site.call('GET', '/admin/tenants/acme/capacity/history', { token: who.admin })).body.items;
      return points.length >= 2 && points.at(-1).byType.gb200?.inUse.machines === 2;
    }, 20_000);

    // The org reads the same history as the provider, and not another org's.
    const since = encodeURIComponent(new Date(Date.now() - 3_600_000).toISOString());
    const [own, provider] = await Promise.all([
      site.call('GET', `/v2/org/acme/nico/capacity/history?since=${since}`, { token: who.tenant }),
      site.call('GET', `/admin/tenants/acme/capacity/history?since=${since}`, { token: who.admin }),
    ]);
    // A point may be taken between the two reads: the ones both saw must agree.
    const both = Math.min(own.body.items.length, provider.body.items.length);
    expect(both).toBeGreaterThanOrEqual(2);
    expect(own.body.items.slice(0, both)).toEqual(provider.body.items.slice(0, both));
    expect((await site.call('GET', '/v2/org/globex/nico/capacity/history', { token: who.tenant })).status).toBe(404);

    await page.goto(`${site.url}/dashboard/#capacity/acme`);
    await until(page, "the page's heading", () => page.getByRole('heading', { name: 'Capacity of acme, last 24 hours' }).isVisible());
    const drawn = await until(page, 'a chart of gb200 with both instances in use', async () => {
      const counts = await countsOf('gb200').catch((): Counts => []);
      return counts.length === 4 && counts[3]!.at(-1) === 2 ? counts : undefined;
    });
    const [delivered, healthy, reserved, inUse] = drawn;
    expect(delivered!.at(-1)).toBe(2);
    expect(healthy!.at(-1)).toBe(2);
    expect(reserved!.every((n) => n === 0)).toBe(true);
    expect(inUse!.length).toBeGreaterThanOrEqual(2);
    expect(await chart('h100').count()).toBe(0);
    expect(await page.getByTestId('capacity').locator('canvas').count()).toBe(1);

    await page.reload();
    const again = await until(page, 'the chart after a reload', async () => {
      const counts = await countsOf('gb200').catch((): Counts => []);
      return counts.length === 4 && counts[0]!.length >= drawn[0]!.length ? counts : undefined;
    });
    // Every point drawn before the reload is drawn again, as it was.
    expect(again.map((series) => series.slice(0, drawn[0]!.length))).toEqual(drawn);

    // Another org, named in the form: nothing recorded.
    await page.getByLabel('Org').fill('globex');
    await page.getByRole('button', { name: 'Show' }).click();
    await until(page, 'the empty page of globex', async () =>
      (await page.getByTestId('capacity-message').textContent())?.includes('No capacity recorded for globex'),
    );
    expect(page.url()).toMatch(/#capacity\/globex$/);
    expect(pageErrors).toEqual([]);
  });

  it('outlines each NVLink domain within its racks, a domain that spans racks in each', async () => {
    const { site, page } = dashboard();
    await page.goto(`${site.url}/dashboard/`);
    const map = page.getByTestId('rack-map').locator('.rack-map');
    await until(page, 'the gb200 racks', async () => (await map.locator('a.cell').count()) === 6);
    const groups = await map.getByTestId('rack').evaluateAll((racks) =>
      racks.map((rack) => ({
        rack: rack.getAttribute('data-rack'),
        domains: [...rack.querySelectorAll('[data-testid="nvlink-domain"]')].map((g) => ({
          domain: g.getAttribute('data-domain'),
          cells: g.querySelectorAll('a.cell').length,
          outlined: getComputedStyle(g).outlineStyle === 'solid',
          title: g.getAttribute('title'),
        })),
      })),
    );
    expect(groups).toEqual([
      { rack: 'rack-1', domains: [{ domain: 'gb200-nvl1', cells: 3, outlined: true, title: expect.stringMatching(/^NVLink domain gb200-nvl1: 3 here/) }] },
      {
        rack: 'rack-2',
        domains: [
          { domain: 'gb200-nvl1', cells: 1, outlined: true, title: expect.stringMatching(/^NVLink domain gb200-nvl1: 1 here/) },
          { domain: 'gb200-nvl2', cells: 2, outlined: true, title: expect.stringMatching(/^NVLink domain gb200-nvl2: 2 here/) },
        ],
      },
    ]);
    // h100 machines carry no domain: their squares are not grouped.
    await page.locator('#rack-type').selectOption('h100');
    await until(page, 'the h100 rack', async () => (await map.locator('a.cell').count()) === 2);
    expect(await map.getByTestId('nvlink-domain').count()).toBe(0);
  });
});
