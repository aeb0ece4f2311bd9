import { readFileSync, statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliFor, shown, type CliRunner } from '#test/support/cli.ts';
import { startTestSite, type TestSite } from '#test/support/local-site.ts';

// The `fleetward` CLI as operators and tenants use it (the seed docs' commands), run as a child process against a
// local site.

describe('fleetward CLI', () => {
  let site: TestSite;
  let admin: CliRunner;
  let adminToken: string;
  let tenantToken: string;
  let machineId: string;

  /** Runs and expects exit 0. */
  const ok = async (cli: CliRunner, args: string[], options?: Parameters<CliRunner>[1]) => {
    const result = await cli(args, options);
    expect(result.code, shown(args, result)).toBe(0);
    return result;
  };

  beforeAll(async () => {
    site = await startTestSite();
    adminToken = await site.token('provider', ['provider-admin'], 'ops');
    tenantToken = await site.token('acme', ['tenant'], 'alice');
    admin = cliFor(site.url, adminToken);
    const fleet = await site.eventually(async () => {
      const { items } = (await site.call('GET', '/admin/machines?allocatable=true', { token: adminToken })).body;
      return items.length === 6 ? (items as Array<{ id: string; machineType: string }>) : undefined;
    });
    machineId = fleet.find((m) => m.machineType === 'h100')!.id;
  });
  afterAll(async () => site?.stop());

  it('machine list: an aligned table for people, JSON for scripts', async () => {
    const [table, jsonRun] = await Promise.all([ok(admin, ['machine', 'list']), ok(admin, ['machine', 'list', '--output', 'json', '--machine-type', 'h100'])]);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+TYPE\s+RACK\s+STATE\s+INSTANCE\s+ALLOCATABLE\s+OVERRIDES\s+HEARTBEAT$/);
    expect(lines).toHaveLength(7);
    // Aligned: every row has its TYPE where the header has it.
    const typeColumn = lines[0]!.indexOf('TYPE');
    for (const line of lines.slice(1)) expect(line.slice(typeColumn)).toMatch(/^(gb200|h100) /);
    expect(table.stdout).toContain(machineId);

    const json = jsonRun.json();
    expect(json.items).toHaveLength(2);
    expect(json.items.map((m: { id: string }) => m.id)).toContain(machineId);
    expect(json.items[0]).toMatchObject({ machineType: 'h100', state: 'Ready', allocatable: true });
  });

  it('machine show: the machine as a block, or as JSON', async () => {
    const [human, jsonRun] = await Promise.all([ok(admin, ['machine', 'show', machineId]), ok(admin, ['-o', 'json', 'machine', 'show', machineId])]);
    expect(human.stdout).toMatch(new RegExp(`^id:\\s+${machineId}$`, 'm'));
    expect(human.stdout).toMatch(/^allocatable:\s+yes$/m);
    expect(human.stdout).toContain('Health overrides:\n  no health overrides');
    expect(jsonRun.json()).toMatchObject({ id: machineId, machineType: 'h100', healthOverrides: [], allocatable: true });
  });

  it('health-override add --template RequestRepair, show, remove (FAQ Q1 and Q5)', async () => {
    const added = await ok(admin, [
      'machine',
      'health-override',
      'add',
      machineId,
      '--template',
      'RequestRepair',
      '--message',
      'Manual repair trigger for tenant-reported issue',
    ]);
    expect(added.stdout).toContain(`added health override repair-request to machine ${machineId}`);

    const shownTable = await ok(admin, ['machine', 'health-override', 'show', machineId]);
    expect(shownTable.stdout).toMatch(/^SOURCE\s+MODE\s+ALERTS\s+CLASSIFICATIONS/m);
    expect(shownTable.stdout).toMatch(/^repair-request\s+merge\s+RequestRepair\s+PreventAllocations,SuppressExternalAlerting/m);
    expect(shownTable.stdout).toContain('Manual repair trigger for tenant-reported issue');
    // `health-report` is the same command group.
    const json = (await ok(admin, ['machine', 'health-report', 'show', machineId, '-o', 'json'])).json();
    expect(json.items).toEqual([expect.objectContaining({ source: 'repair-request', createdBy: 'ops' })]);
    expect((await ok(admin, ['machine', 'show', machineId, '-o', 'json'])).json()).toMatchObject({
      allocatable: false,
      notAllocatableReasons: ['health-override:repair-request'],
    });

    const removed = await ok(admin, ['machine', 'health-override', 'remove', machineId, 'repair-request']);
    expect(removed.stdout).toContain(`removed health override repair-request from machine ${machineId}`);
    expect((await ok(admin, ['machine', 'health-override', 'show', machineId])).stdout.trim()).toBe('no health overrides');
  });

  it('an unknown template: non-zero exit, the problem detail on stderr (or the problem as JSON)', async () => {
    const args = ['machine', 'health-override', 'add', machineId, '--template', 'Bogus'];
    const [result, json] = await Promise.all([admin(args), admin([...args, '-o', 'json'])]);
    expect(result.code, shown(args, result)).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('unknown health override template "Bogus"');
    expect(result.stderr).toContain('(422 unknown-template)');

    expect(json.code).toBe(1);
    expect(JSON.parse(json.stderr)).toMatchObject({ status: 422, code: 'unknown-template', detail: expect.stringContaining('Bogus') });
  });

  it('field errors are listed under the detail; usage mistakes exit 2', async () => {
    const tenant = cliFor(site.url, tenantToken);
    const args = ['instance', 'release', 'i-whatever', '--summary', 'no category given'];
    const [result, usage, noToken, denied] = await Promise.all([
      tenant(args),
      admin(['machine', 'health-override', 'add', machineId]),
      admin(['machine', 'list'], { token: null }),
      tenant(['machine', 'health-override', 'add', machineId, '--template', 'degraded']),
    ]);
    expect(result.code, shown(args, result)).toBe(1);
    expect(result.stderr).toContain('(422 validation-failed)');
    expect(result.stderr).toMatch(/^ {2}machineHealthIssue\.category: /m);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("required option '--template <name>' not specified");
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain('no token');
    expect(denied.code).toBe(1);
    expect(denied.stderr).toContain('(403 forbidden)');
  });

  it('machine metadata add-label and remove-labels', async () => {
    const added = (
      await ok(admin, ['machine', 'metadata', 'add-label', machineId, 'repair_status=Completed', 'repair_details=thermal_paste_replaced', '-o', 'json'])
    ).json();
    expect(added.labels).toEqual({ repair_status: 'Completed', repair_details: 'thermal_paste_replaced' });
    const table = await ok(admin, ['machine', 'metadata', 'remove-labels', machineId, 'repair_details']);
    expect(table.stdout).toMatch(/^KEY\s+VALUE$/m);
    expect(table.stdout).toMatch(/^repair_status\s+Completed$/m);
    expect(table.stdout).not.toContain('repair_details');
    const bad = await admin(['machine', 'metadata', 'add-label', machineId, 'no-equals-sign']);
    expect(bad.code).toBe(2);
  });

  it('version --show-runtime-config shows the site config in force', async () => {
    const [human, json, plain] = await Promise.all([
      ok(admin, ['version', '--show-runtime-config']),
      ok(admin, ['version', '--show-runtime-config', '-o', 'json']),
      ok(admin, ['version'], { token: null }),
    ]);
    expect(human.stdout).toMatch(/^fleetward CLI \d+\.\d+\.\d+/);
    expect(human.stdout).toMatch(/\[auto_machine_repair_plugin\]\nenabled = true/);
    expect(json.json()).toMatchObject({ version: expect.any(String), config: { auto_machine_repair_plugin: { enabled: true } } });
    expect(plain.stdout).toMatch(/^fleetward CLI /);
  });

  it('version shows the site release and its data version; admin migrations lists the migrations, all done on a new table', async () => {
    const shown = await ok(admin, ['version']);
    expect(shown.stdout).toMatch(/^site .*: release \d+\.\d+\.\d+, data version (\d+) of \1$/m);
    const json = (await ok(admin, ['version', '-o', 'json'])).json();
    expect(json).toMatchObject({ release: json.cli, migrations: { pending: 0, running: 0 } });
    expect(json.dataVersion).toBe(json.latestDataVersion);
    const migrations = (await ok(admin, ['admin', 'migrations', '-o', 'json'])).json();
    expect(migrations.items.length).toBe(json.latestDataVersion);
    expect(migrations.items.every((m: { state: string }) => m.state === 'done')).toBe(true);
    expect((await ok(admin, ['admin', 'migrations', '--watch'])).stdout).toMatch(/^ID\s+NAME\s+STATE/m);
  });

  it('tenant set-capability turns targeted instance creation on and off', async () => {
    const on = (await ok(admin, ['tenant', 'set-capability', 'fixit', '--targeted-instance-creation', 'true', '-o', 'json'])).json();
    expect(on).toMatchObject({ org: 'fixit', capabilities: { targetedInstanceCreation: true } });
    const repairer = cliFor(site.url, await site.token('fixit', ['tenant']));
    expect((await ok(repairer, ['machine', 'list', '-o', 'json'])).json().items.length).toBeGreaterThan(0);
    const off = await ok(admin, ['tenant', 'set-capability', 'fixit', '--targeted-instance-creation', 'false']);
    expect(off.stdout).toMatch(/^targetedInstanceCreation:\s+false$/m);
    const refused = await repairer(['machine', 'list']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('(403 capability-required)');
    expect((await admin(['tenant', 'set-capability', 'fixit', '--targeted-instance-creation', 'maybe'])).code).toBe(2);
  });

  it('tenant quota set and show: the quota per type and what the org holds; a malformed quota is a usage error', async () => {
    const set = (await ok(admin, ['tenant', 'quota', 'set', 'quota-org', 'gb200=3', 'h100=0', '-o', 'json'])).json();
    expect(set).toMatchObject({ org: 'quota-org', quotas: { gb200: 3, h100: 0 } });
    const shown = await ok(admin, ['tenant', 'quota', 'show', 'quota-org']);
    expect(shown.stdout).toMatch(/^MACHINE TYPE\s+QUOTA\s+USED$/m);
    expect(shown.stdout).toMatch(/^gb200\s+3\s+0$/m);
    expect(shown.stdout).toMatch(/^h100\s+0\s+0$/m);
    expect((await admin(['tenant', 'quota', 'set', 'quota-org', 'gb200'])).code).toBe(2);
    expect((await ok(admin, ['tenant', 'quota', 'set', 'quota-org', '-o', 'json'])).json().quotas).toEqual({});
  });

  it('instance create --wait, show, list, release with an issue --wait; the machine is quarantined, then back in the pool', async () => {
    const tenant = cliFor(site.url, tenantToken);
    const created = await ok(tenant, ['instance', 'create', '--machine-type', 'gb200', '--name', 'train-1', '--label', 'team=ml', '--wait', '-o', 'json']);
    const instance = created.json();
    expect(instance).toMatchObject({ name: 'train-1', status: 'Ready', org: 'acme', labels: { team: 'ml' } });
    expect(created.stderr).toMatch(new RegExp(`✓ instance ${instance.id}: Ready after \\d+\\.\\ds`));

    const show = await ok(tenant, ['instance', 'show', instance.id]);
    expect(show.stdout).toMatch(/^status:\s+Ready$/m);
    expect(show.stdout).toMatch(new RegExp(`^machine:\\s+${instance.machineId}$`, 'm'));
    const list = await ok(tenant, ['instance', 'list', '--status', 'Ready']);
    expect(list.stdout).toMatch(/^ID\s+NAME\s+STATUS\s+TYPE\s+MACHINE/);
    expect(list.stdout).toMatch(new RegExp(`^${instance.id}\\s+train-1\\s+Ready\\s+gb200\\s+${instance.machineId}`, 'm'));

    const released = await ok(tenant, [
      'instance',
      'release',
      instance.id,
      '--issue-category',
      'hardware',
      '--summary',
      'Memory errors during training',
      '--details',
      'Job crashed with ECC errors on DIMM slot 2',
      '--wait',
    ]);
    expect(released.stdout).toMatch(/^status:\s+Terminated$/m);
    expect(released.stderr).toContain(`✓ instance ${instance.id}: Terminated after`);

    // (With six machines the repair-storm breaker may hold the repair request back: tenant-reported-issue is certain.)
    const machine = (await ok(admin, ['machine', 'show', instance.machineId, '-o', 'json'])).json();
    expect(machine.healthOverrides.map((o: { source: string }) => o.source)).toContain('tenant-reported-issue');
    expect(machine.allocatable).toBe(false);
    expect(machine.healthOverrides.find((o: { source: string }) => o.source === 'tenant-reported-issue').issue).toEqual({
      category: 'HARDWARE',
      summary: 'Memory errors during training',
      details: 'Job crashed with ECC errors on DIMM slot 2',
    });
    const overrides = await ok(admin, ['machine', 'health-override', 'show', instance.machineId]);
    expect(overrides.stdout).toMatch(/^tenant-reported-issue\s+merge\s+TenantReportedIssue\s+.*HARDWARE: Memory errors during training/m);

    // Releasing again changes nothing and still succeeds (API.md: 200 with its current state).
    expect((await ok(tenant, ['instance', 'release', instance.id, '-o', 'json'])).json().status).toBe('Terminated');

    // The operator clears the issue; `--wait-allocatable` waits until the machine is back in the pool.
    for (const source of machine.healthOverrides.map((o: { source: string }) => o.source)) {
      await ok(admin, ['machine', 'health-override', 'remove', instance.machineId, source]);
    }
    const back = await ok(admin, ['machine', 'show', instance.machineId, '--wait-allocatable', '--timeout', '20', '-o', 'json']);
    expect(back.json()).toMatchObject({ id: instance.machineId, allocatable: true, healthOverrides: [] });
  });

  it('instance online-repair enable and disable (Ready ⇄ Repairing); release is refused meanwhile', async () => {
    const tenant = cliFor(site.url, tenantToken);
    const instance = (await ok(tenant, ['instance', 'create', '--machine-type', 'h100', '--wait', '-o', 'json'])).json();
    const enabled = (
      await ok(tenant, ['instance', 'online-repair', 'enable', instance.id, '--issue-category', 'NETWORK', '--summary', 'slow InfiniBand', '-o', 'json'])
    ).json();
    expect(enabled.status).toBe('Repairing');
    const refused = await tenant(['instance', 'release', instance.id]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('(409 online-repair-active)');
    expect((await ok(tenant, ['instance', 'online-repair', 'disable', instance.id, '-o', 'json'])).json().status).toBe('Ready');
    await ok(tenant, ['instance', 'release', instance.id, '--wait']);
  });

  it('dev token mints a token on the local runner that the CLI can use', async () => {
    const [minted, bad] = await Promise.all([
      ok(admin, ['dev', 'token', '--sub', 'bob', '--org', 'acme', '--roles', 'tenant'], { token: null }),
      admin(['dev', 'token', '--sub', 'bob', '--org', 'acme', '--roles', 'wizard'], { token: null }),
    ]);
    const token = minted.stdout.trim();
    expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString())).toMatchObject({ sub: 'bob', org: 'acme', roles: ['tenant'] });
    const listed = await ok(admin, ['instance', 'list', '-o', 'json'], { token });
    expect(listed.json().items.every((i: { org: string }) => i.org === 'acme')).toBe(true);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('(422 validation-failed)');
  });

  it('profiles: url and token from a named profile; flags beat the environment, --profile beats it too', async () => {
    const cli = cliFor('http://127.0.0.1:9', undefined); // FLEETWARD_URL points nowhere
    const unreachable = await cli(['machine', 'list'], { token: adminToken });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain('cannot reach http://127.0.0.1:9');

    await ok(cli, ['profile', 'set', 'local', '--url', site.url, '--token', '-'], { stdin: `${adminToken}\n` });
    expect(statSync(cli.configFile).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(cli.configFile, 'utf8'))).toMatchObject({
      defaultProfile: 'local',
      profiles: { local: { url: site.url, token: adminToken } },
    });
    await ok(cli, ['profile', 'set', 'acme', '--url', site.url, '--token', tenantToken, '--org', 'acme']);

    // FLEETWARD_URL is set (to nowhere): the default profile loses to it, an explicit --profile wins over it.
    expect((await cli(['machine', 'list'])).code).toBe(1);
    expect((await ok(cli, ['--profile', 'local', 'machine', 'list', '-o', 'json'])).json().items).toHaveLength(6);
    const withoutEnv = cliFor('', undefined);
    await ok(withoutEnv, ['profile', 'set', 'local', '--url', site.url, '--token', adminToken], { env: { FLEETWARD_URL: '' } });
    expect((await ok(withoutEnv, ['machine', 'list', '-o', 'json'], { env: { FLEETWARD_URL: '' } })).json().items).toHaveLength(6);
    // A flag beats the profile.
    expect((await ok(cli, ['--profile', 'local', '--url', site.url, '--token', tenantToken, 'instance', 'list', '-o', 'json'])).json()).toHaveProperty('items');

    const profiles = await ok(cli, ['profile', 'list']);
    expect(profiles.stdout).toMatch(/^\*\s+local\s+http:\/\/127\.0\.0\.1:\d+\s+provider\s+ops\s+provider-admin$/m);
    expect(profiles.stdout).not.toContain(adminToken);
    const unknown = await cli(['--profile', 'nope', 'machine', 'list']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no profile "nope"');
  });
  it('machine validate --wait asks the agent and shows the outcome; machine retire takes a free machine out for good', async () => {
    const { items } = (await site.call('GET', '/admin/machines?allocatable=true&machineType=gb200', { token: adminToken })).body;
    const id = items[0].id as string;
    const validated = await ok(admin, ['machine', 'validate', id, '--wait', '--timeout', '30', '-o', 'json']);
    expect(validated.json()).toMatchObject({ state: 'passed', reason: 'provider', suite: 'standard' });
    const shown = await ok(admin, ['machine', 'show', id]);
    expect(shown.stdout).toMatch(/^lifecycle:\s+available$/m);
    expect(shown.stdout).toMatch(/^validation:\s+passed \(provider, standard\)/m);

    const retired = await ok(admin, ['machine', 'retire', id, '--reason', 'end of life', '-o', 'json']);
    expect(retired.json()).toMatchObject({ id, lifecycle: 'retired', allocatable: false, retired: { reason: 'end of life', by: 'ops' } });
    expect(retired.json().notAllocatableReasons).toContain('retired');
    const withoutReason = await admin(['machine', 'retire', id]);
    expect(withoutReason.code).toBe(2);
  });
});
