import { describe, expect, it } from 'vitest';
import { checkRouteOverrides, defaultSiteConfig, parseSiteConfig, SiteConfigError } from '#config/site-config.ts';
import { apiRouteSpecs, routeKeyOf } from '#lib/api-routes.ts';

const createRoute = 'POST /v2/org/{org}/nico/instance';

function failure(toml: string): string {
  try {
    parseSiteConfig(toml, 'test.toml');
  } catch (error) {
    expect(error).toBeInstanceOf(SiteConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a SiteConfigError');
}

describe('site config: sweep, site agent, API and Lambda limits', () => {
  it('has defaults for every new key', () => {
    const config = defaultSiteConfig();
    expect(config.sweep).toEqual({ interval_seconds: 60, outbox_grace_seconds: 300, capacity_history_seconds: 300 });
    expect(config.site_agent).toEqual({ report_timeout_seconds: 60 });
    expect(config.api).toEqual({ rate_limit: 200, burst_limit: 400, routes: {} });
    expect(config.lambda).toEqual({
      tenant_reserved_concurrency: 100,
      admin_reserved_concurrency: 10,
      site_agent_reserved_concurrency: 20,
      account_concurrency: 1000,
    });
    expect(config.simulator.heartbeat_parts).toBe(1);
  });

  it('reads per-route overrides keyed by route key, either limit alone', () => {
    const config = parseSiteConfig(`
[api]
rate_limit = 300
[api.routes."${createRoute}"]
rate_limit = 50
burst_limit = 100
[api.routes."POST /site/v1/heartbeats"]
burst_limit = 1000
`);
    expect(config.api).toEqual({
      rate_limit: 300,
      burst_limit: 400,
      routes: { [createRoute]: { rate_limit: 50, burst_limit: 100 }, 'POST /site/v1/heartbeats': { burst_limit: 1000 } },
    });
  });

  it('names the key of a bad value, quoting route keys as TOML does', () => {
    expect(failure('[sweep]\ninterval_seconds = 0\n')).toMatch(/^test\.toml: sweep\.interval_seconds: /);
    expect(failure('[site_agent]\nreport_timeout_seconds = 1.5\n')).toMatch(/site_agent\.report_timeout_seconds: /);
    expect(failure('[api]\nrate_limit = 0\n')).toMatch(/api\.rate_limit: /);
    expect(failure('[lambda]\nadmin_reserved_concurrency = 0\n')).toMatch(/lambda\.admin_reserved_concurrency: /);
    expect(failure(`[api.routes."${createRoute}"]\nburst_limit = -1\n`)).toContain(`api.routes."${createRoute}".burst_limit: `);
  });

  it('names an unknown key, in a route override too', () => {
    expect(failure(`[api.routes."${createRoute}"]\nrate = 5\n`)).toContain(`api.routes."${createRoute}".rate: unknown key`);
    expect(failure('[sweep]\ninterval = 5\n')).toContain('sweep.interval: unknown key');
  });

  it('wants a route key to be "<METHOD> <path>"', () => {
    expect(failure('[api.routes."post /v2/things"]\nrate_limit = 5\n')).toContain('api.routes."post /v2/things": a route key is "<METHOD> <path>"');
  });

  it('accepts overrides of routes the API has, and names those it does not', () => {
    const routeKeys = apiRouteSpecs().map(routeKeyOf);
    expect(routeKeys).toContain(createRoute);
    checkRouteOverrides(parseSiteConfig(`[api.routes."${createRoute}"]\nrate_limit = 5\n`), routeKeys);

    const config = parseSiteConfig('[api.routes."POST /v2/org/{org}/nico/instances"]\nrate_limit = 5\n[api.routes."GET /nowhere"]\nrate_limit = 5\n');
    expect(() => checkRouteOverrides(config, routeKeys, 'test.toml')).toThrow(SiteConfigError);
    expect(() => checkRouteOverrides(config, routeKeys, 'test.toml')).toThrow(
      'test.toml: api.routes."POST /v2/org/{org}/nico/instances": no such route; api.routes."GET /nowhere": no such route',
    );
  });
});
