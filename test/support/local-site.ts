import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';
import { parseSiteConfig, type SiteConfig } from '#config/site-config.ts';
import type { Role } from '#domain/model.ts';
import { startLocalSite, type LocalSite, type LocalSiteOptions } from '#local/site.ts';

/** A site config for tests: the demo fleet made small and the simulator fast. */
export function testConfig(toml = ''): SiteConfig {
  return parseSiteConfig(
    toml ||
      `
[instance_create_retry]
base_delay_ms = 10
timeout_ms = 2000
[simulator]
machines = [ { type = "gb200", count = 4, racks = 2 }, { type = "h100", count = 2, racks = 1 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 20
cleanup_ms = 20
`,
  );
}

export interface TestSite extends LocalSite {
  token(org: string, roles: Role[], sub?: string): Promise<string>;
  call(method: string, path: string, options?: { token?: string; body?: unknown; headers?: Record<string, string> }): Promise<{ status: number; body: any; headers: Headers }>;
  /** Polls until `check` returns a truthy value (or throws after `timeoutMs`). */
  eventually<T>(check: () => Promise<T | undefined | null | false>, timeoutMs?: number): Promise<T>;
}

/** A whole local site on the test run's DynamoDB Local, with its own tables and ports. */
export async function startTestSite(overrides: Partial<LocalSiteOptions> = {}): Promise<TestSite> {
  const id = randomUUID().slice(0, 8);
  const lines: string[] = [];
  const site = await startLocalSite({
    config: testConfig(),
    port: 0,
    dynamoEndpoint: inject('dynamoEndpoint'),
    tableNames: { table: `e2e-${id}`, idempotencyTable: `e2e-${id}-idempotency` },
    sweepIntervalMs: 500,
    log: (line) => {
      lines.push(line);
      if (process.env.FLEETWARD_TEST_LOG) console.log(line);
    },
    ...overrides,
  });
  const call: TestSite['call'] = async (method, path, options = {}) => {
    const response = await fetch(`${site.url}${path}`, {
      method,
      headers: {
        ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
        ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...options.headers,
      },
      ...(options.body !== undefined ? { body: typeof options.body === 'string' ? options.body : JSON.stringify(options.body) } : {}),
    });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      // keep the text
    }
    return { status: response.status, body, headers: response.headers };
  };
  const eventually: TestSite['eventually'] = async (check, timeoutMs = 10_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await check();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; last log lines:\n${lines.slice(-15).join('\n')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  return {
    ...site,
    token: (org, roles, sub = `${org}-user`) => site.issuer.mint({ sub, org, roles }),
    call,
    eventually,
  };
}
