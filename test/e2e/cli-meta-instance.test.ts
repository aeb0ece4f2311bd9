import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliFor, shown, type CliRunner } from '#test/support/cli.ts';
import { startTestSite, type TestSite } from '#test/support/local-site.ts';

// `fleetward meta-instance create|list|show|delete` against a local site (API.md meta-instance routes).

describe('fleetward meta-instance', () => {
  let site: TestSite;
  let tenant: CliRunner;

  const ok = async (cli: CliRunner, args: string[]) => {
    const result = await cli(args);
    expect(result.code, shown(args, result)).toBe(0);
    return result;
  };

  beforeAll(async () => {
    site = await startTestSite();
    const admin = await site.token('provider', ['provider-admin']);
    await site.eventually(async () => (await site.call('GET', '/admin/machines?allocatable=true', { token: admin })).body.items.length === 6);
    tenant = cliFor(site.url, await site.token('acme', ['tenant'], 'alice'));
  });
  afterAll(async () => site?.stop());

  it('create --wait places it on one rack; list and show it; delete --wait releases its instances', async () => {
    const created = await ok(tenant, [
      'meta-instance',
      'create',
      '--machine-type',
      'gb200',
      '--min-nodes',
      '2',
      '--same-rack',
      '--label',
      'job=llm',
      '--wait',
      '-o',
      'json',
    ]);
    const meta = created.json();
    // --wait waits for the members too: Ready says placement is done, readyMembers that they are up.
    expect(meta).toMatchObject({ org: 'acme', machineType: 'gb200', minNodes: 2, placement: { sameRack: true }, status: 'Ready', readyMembers: 2 });
    expect(meta.instanceIds).toHaveLength(2);

    const list = await ok(tenant, ['meta-instance', 'list']);
    expect(list.stdout).toMatch(/^ID\s+STATUS\s+TYPE\s+NODES\s+SAME RACK\s+FAILURES\s+ERROR$/m);
    expect(list.stdout).toMatch(new RegExp(`^${meta.id}\\s+Ready\\s+gb200\\s+2/2\\s+yes\\s+0`, 'm'));
    expect((await ok(tenant, ['meta-instance', 'list', '-o', 'json'])).json().items.map((m: { id: string }) => m.id)).toEqual([meta.id]);

    const show = await ok(tenant, ['meta-instance', 'show', meta.id]);
    expect(show.stdout).toMatch(/^status:\s+Ready$/m);
    expect(show.stdout).toMatch(/^nodes:\s+2 of 2$/m);
    expect(show.stdout).toMatch(/^ready:\s+2 of 2$/m);
    // Its instances belong to the org and point back at it; all on one rack.
    const instances = await Promise.all(meta.instanceIds.map(async (id: string) => (await ok(tenant, ['instance', 'show', id, '-o', 'json'])).json()));
    expect(instances.every((i) => i.metaInstanceId === meta.id && i.status === 'Ready')).toBe(true);
    expect(new Set(instances.map((i) => i.machineId.split('-')[1])).size).toBe(1);

    const deleted = await ok(tenant, ['meta-instance', 'delete', meta.id, '--wait']);
    expect(deleted.stdout).toContain(`meta-instance ${meta.id} deleted`);
    expect(deleted.stderr).toContain(`✓ meta-instance ${meta.id}: deleted after`);
    const gone = await tenant(['meta-instance', 'show', meta.id]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('(404 not-found)');
    await site.eventually(async () => {
      const statuses = await Promise.all(meta.instanceIds.map(async (id: string) => (await tenant(['instance', 'show', id, '-o', 'json'])).json().status));
      return statuses.every((s) => s === 'Terminated');
    }, 20_000);
  });

  it('create without --wait answers at once; an impossible request is refused with its detail', async () => {
    const created = (await ok(tenant, ['meta-instance', 'create', '--machine-type', 'h100', '-o', 'json'])).json();
    expect(['Placing', 'Ready']).toContain(created.status);
    expect(created.minNodes).toBe(1);
    const deleting = await ok(tenant, ['meta-instance', 'delete', created.id]);
    expect(deleting.stdout).toContain(`deleting meta-instance ${created.id}`);

    const impossible = await tenant(['meta-instance', 'create', '--machine-type', 'h100', '--min-nodes', '3', '--same-rack']);
    expect(impossible.code).toBe(1);
    expect(impossible.stderr).toMatch(/\(422 unsatisfiable\)/);
  });
});
