import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliFor, shown, type CliRunner } from '#test/support/cli.ts';
import { startTestSite, type TestSite } from '#test/support/local-site.ts';

// `fleetward reservation create|list|show|release` against a local site (API.md "Reservations").

describe('fleetward reservation', () => {
  let site: TestSite;
  let admin: CliRunner;
  let tenant: CliRunner;

  const ok = async (cli: CliRunner, args: string[]) => {
    const result = await cli(args);
    expect(result.code, shown(args, result)).toBe(0);
    return result;
  };

  beforeAll(async () => {
    site = await startTestSite();
    const token = await site.token('provider', ['provider-admin']);
    await site.eventually(async () => (await site.call('GET', '/admin/machines?allocatable=true', { token })).body.items.length === 6);
    admin = cliFor(site.url, token);
    tenant = cliFor(site.url, await site.token('acme', ['tenant'], 'alice'));
  });
  afterAll(async () => site?.stop());

  it('create, list (all, and an org its own), show, release; an ask that cannot be met is refused whole', async () => {
    const created = (await ok(admin, ['reservation', 'create', 'acme', 'gb200', '--count', '2', '--name', 'train', '-o', 'json'])).json();
    expect(created).toMatchObject({ org: 'acme', machineType: 'gb200', name: 'train', state: 'Active' });
    expect(created.machineIds).toHaveLength(2);

    const listed = await ok(admin, ['reservation', 'list']);
    expect(listed.stdout).toMatch(/^ID\s+ORG\s+NAME\s+TYPE\s+STATE\s+MACHINES\s+HEALTHY\s+IN USE\s+QUARANTINED\s+CREATED$/m);
    expect(listed.stdout).toMatch(new RegExp(`^${created.id}\\s+acme\\s+train\\s+gb200\\s+Active\\s+2\\s`, 'm'));
    const own = (await ok(tenant, ['reservation', 'list', '--org', 'acme', '-o', 'json'])).json();
    expect(own.items.map((r: { id: string }) => r.id)).toEqual([created.id]);

    const show = await ok(admin, ['reservation', 'show', created.id]);
    expect(show.stdout).toMatch(/^state:\s+Active$/m);
    expect(show.stdout).toMatch(/^health:\s+\d machines, \d healthy, 0 in use, 0 quarantined$/m);

    const refused = await admin(['reservation', 'create', 'acme', 'h100', '--count', '3']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('(409 insufficient-capacity)');
    expect((await admin(['reservation', 'create', 'acme', 'gb200'])).code).toBe(2);

    const released = await ok(admin, ['reservation', 'release', created.id]);
    expect(released.stdout).toMatch(/^state:\s+Released$/m);
  });
});
