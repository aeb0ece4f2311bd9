import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliFor, shown, type CliRunner } from '#test/support/cli.ts';
import { testConfig, type TestSite } from '#test/support/local-site.ts';
import { readySite, runInstance, type Actors } from '#test/support/repair-steps.ts';

// `fleetward maintenance declare|list|show|cancel|resume|defer|hand-back|decide` against a local site: the provider
// declares on a rack, the tenant sees its instance in it, asks for a deferral the provider accepts, hands back; a
// failed validation halts a rollout that `resume` restarts; an emergency maintenance is cancelled.

/**
 * Each flow is some twenty CLI processes and several waits of up to 20 s of their own (`until`), whose polls are CLI
 * processes too: longer than vitest's default 30 s for a whole test on a loaded 2-core machine (23 s here, quiet).
 */
const FLOW_TIMEOUT_MS = 90_000;

describe('fleetward maintenance', { timeout: FLOW_TIMEOUT_MS }, () => {
  let site: TestSite;
  let who: Actors;
  let admin: CliRunner;
  let tenant: CliRunner;

  const ok = async (cli: CliRunner, args: string[]) => {
    const result = await cli(args);
    expect(result.code, shown(args, result)).toBe(0);
    return result;
  };
  const showJson = async (id: string) => (await ok(admin, ['maintenance', 'show', id, '-o', 'json'])).json();
  const until = async (id: string, check: (m: any) => boolean) =>
    site.eventually(async () => {
      const shownNow = await showJson(id);
      return check(shownNow) ? shownNow : undefined;
    }, 20_000);

  beforeAll(async () => {
    ({ site, who } = await readySite(6, {
      config: testConfig(`
[instance_create_retry]
base_delay_ms = 10
[simulator]
machines = [ { type = "gb200", count = 6, racks = 3 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 20
cleanup_ms = 20
maintenance_ms = 50
`),
    }));
    admin = cliFor(site.url, who.admin);
    tenant = cliFor(site.url, who.tenant);
  });
  afterAll(async () => site?.stop());

  it('declare on a rack, list, show; the tenant defers, the provider decides, the tenant hands back; it completes', async () => {
    const instance = await runInstance(site, who);
    const rack = (await ok(admin, ['machine', 'show', instance.machineId, '-o', 'json'])).json().rack as string;

    const declared = await ok(admin, [
      'maintenance',
      'declare',
      '--category',
      'firmware',
      '--reason',
      'BMC firmware 2.4',
      '--impact',
      'one reboot',
      '--rack',
      rack,
      '--in-hours',
      String(15 * 24),
      '--window',
      '60',
      '--max-in-flight',
      '1',
    ]);
    const id = /^declared maintenance (\S+) on 2 machine\(s\)$/m.exec(declared.stdout)?.[1];
    expect(id, declared.stdout).toBeDefined();
    expect(declared.stdout).toMatch(/^rollout:\s+at most 1 in flight, halts after 1 failure\(s\)$/m);

    const listed = await ok(admin, ['maintenance', 'list']);
    expect(listed.stdout).toMatch(/^ID\s+KIND\s+CATEGORY\s+STATE\s+DONE\s+OVERDUE\s+HAND BACK BY\s+REASON$/m);
    expect(listed.stdout).toMatch(new RegExp(`^${id}\\s+planned\\s+firmware\\s+(Declared|InProgress)\\s+\\d/2\\s+0\\s+`, 'm'));

    // The tenant sees its own machine only, once the fan-out told it.
    const seen = await site.eventually(async () => {
      const { items } = (await ok(tenant, ['maintenance', 'list', '-o', 'json'])).json();
      return items.length === 1 ? items[0] : undefined;
    });
    expect(Object.keys(seen.machines)).toEqual([instance.machineId]);
    const tenantShow = await ok(tenant, ['maintenance', 'show', id!]);
    expect(tenantShow.stdout).toMatch(new RegExp(`^\\s+${instance.machineId}\\s+held\\s+acme\\s+${instance.id}\\s+`, 'm'));
    expect(tenantShow.stdout).not.toContain('rollout:');

    const later = new Date(Date.now() + 20 * 86_400_000).toISOString();
    const deferred = await ok(tenant, ['maintenance', 'defer', id!, '--until', later, '--reason', 'training run ends then']);
    expect(deferred.stdout).toContain(`asked to defer maintenance ${id} until ${later}`);
    const decided = await ok(admin, ['maintenance', 'decide', id!, 'acme', 'accept']);
    expect(decided.stdout).toContain(`deferral of org acme accepted: hand back by ${later}`);
    expect((await showJson(id!)).machines[instance.machineId]).toMatchObject({ phase: 'held', handBackBy: later });
    // The instance's notice follows the new deadline (the maintenance's walk rewrites it), and so does acme's view.
    await site.eventually(async () => {
      const { body } = await site.call('GET', `/v2/org/acme/nico/instance/${instance.id}`, { token: who.tenant });
      return body.maintenance?.handBackBy === later ? true : undefined;
    });
    expect((await ok(tenant, ['maintenance', 'show', id!, '-o', 'json'])).json().handBackBy).toBe(later);
    const wrong = await admin(['maintenance', 'decide', id!, 'acme', 'maybe']);
    expect(wrong.code).toBe(2);

    const handedBack = await ok(tenant, ['maintenance', 'hand-back', id!, '--instance', instance.id]);
    expect(handedBack.stdout).toContain(`handed back ${instance.id}`);
    const done = await until(id!, (m) => m.state === 'Completed');
    expect(Object.values(done.machines).map((m: any) => m.phase)).toEqual(['returned', 'returned']);
    const shownDone = await ok(admin, ['maintenance', 'show', id!]);
    expect(shownDone.stdout).toMatch(/^machines:\s+2 of 2 done, 0 overdue$/m);
    expect(shownDone.stdout).toMatch(/^\s+acme\s+\S+\s+accepted\s+/m);
    expect(shownDone.stdout).toContain('maintenance-declared');
    expect((await ok(admin, ['maintenance', 'list', '--state', 'Completed', '-o', 'json'])).json().items.map((m: { id: string }) => m.id)).toContain(id);
  });

  it('a failed validation halts the rollout; resume admits machines again; cancel ends an emergency one', async () => {
    const { items } = (await ok(admin, ['machine', 'list', '-o', 'json'])).json();
    const racks = [...new Set(items.map((m: { rack: string }) => m.rack))].sort() as string[];
    const rack = racks[racks.length - 1]!;
    const machines = items.filter((m: { rack: string }) => m.rack === rack).map((m: { id: string }) => m.id) as string[];
    expect(machines).toHaveLength(2);
    await site.call('POST', `/_sim/machines/${machines[0]}/validation`, { body: { outcome: 'fail', failing: ['nccl-all-reduce'] } });
    const args = ['maintenance', 'declare', '--kind', 'emergency', '--category', 'hardware', '--reason', 'PSU swap', '--in-hours', '1', '--window', '30'];
    const declared = await ok(admin, [...args, '--machine', machines[0]!, '--machine', machines[1]!, '--max-in-flight', '1', '-o', 'json']);
    const { id } = declared.json();

    await until(id, (m) => m.state === 'Halted');
    expect((await showJson(id)).machines[machines[0]!]).toMatchObject({ phase: 'failed' });
    const resumed = await ok(admin, ['maintenance', 'resume', id]);
    expect(resumed.stdout).toContain(`maintenance ${id} is InProgress`);
    await until(id, (m) => m.state === 'Completed');
    expect((await admin(['maintenance', 'resume', id])).stderr).toContain('(409 invalid-state)');

    const second = (await ok(admin, [...args, '--rack', racks[0]!, '-o', 'json'])).json();
    const cancelled = await ok(admin, ['maintenance', 'cancel', second.id]);
    expect(cancelled.stdout).toContain(`maintenance ${second.id} is Cancelled`);
    const noScope = await admin(args);
    expect(noScope.code).toBe(2);
    expect(noScope.stderr).toContain('name the scope');
  });
});
