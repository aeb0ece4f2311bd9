import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '#domain/core/model.ts';
import { sweep } from '#reconcilers/sweep.ts';
import { cliFor, shown, type CliRunner } from '#test/support/cli.ts';
import { startTestSite, testConfig, type TestSite } from '#test/support/local-site.ts';
import {
  actors,
  claimForRepair,
  cleanedUp,
  instanceStatus,
  machine,
  repairRelease,
  runInstance,
  setRepairStatus,
  sources,
  waitForFleet,
  type Actors,
} from '#test/support/repair-steps.ts';

// `fleetward safety show|reset` and `fleetward repairs list|escalated` against a local site. One
// site, and the tests build on each other in order: an escalation (one completed repair, then a report), a
// repair-storm that trips and is reset, then the clock moves on until the applied repair requests are stuck.

const config = `
[instance_create_retry]
base_delay_ms = 10
[simulator]
machines = [ { type = "gb200", count = 1, racks = 1 }, { type = "h100", count = 9, racks = 1 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 10
cleanup_ms = 10
[repair_storm]
max_quarantines = 2
max_fraction = 1
[repair_escalation]
max_repairs = 1
[repair_sla]
claim_minutes = 60
repair_hours = 24
`;

describe('fleetward safety and repairs', () => {
  let site: TestSite;
  let who: Actors;
  let admin: CliRunner;
  let tenant: CliRunner;
  let offset = 0;
  const clock: Clock = { now: () => new Date(Date.now() + offset) };
  const MINUTE = 60_000;
  /** The machines the breaker held back (then applied by the reset): stuck once the clock moves on. */
  let heldBack: string[] = [];
  let requestedBeforeStorm: string;

  const ok = async (cli: CliRunner, args: string[]) => {
    const result = await cli(args);
    expect(result.code, shown(args, result)).toBe(0);
    return result;
  };

  /** A tenant runs an instance on a machine of `type` and releases it reporting an issue; the machine's id once cleaned up. */
  async function report(type: string, summary: string): Promise<string> {
    const instance = await runInstance(site, who, type);
    const released = await site.call('DELETE', `/v2/org/acme/nico/instance/${instance.id}`, {
      token: who.tenant,
      body: { machineHealthIssue: { category: 'hardware', summary } },
    });
    expect(released.status).toBe(202);
    await instanceStatus(site, who.tenant, 'acme', instance.id, 'Terminated');
    await cleanedUp(site, who.admin, instance.machineId);
    return instance.machineId as string;
  }

  beforeAll(async () => {
    site = await startTestSite({ config: testConfig(config), clock });
    who = await actors(site);
    admin = cliFor(site.url, who.admin);
    tenant = cliFor(site.url, who.tenant);
    await waitForFleet(site, who.admin, 10);
  });
  afterAll(async () => site?.stop());

  it('a tenant token: non-zero exit with the problem detail (or the problem document as JSON)', async () => {
    const [show, json, reset, repairs, escalated] = await Promise.all([
      tenant(['safety', 'show']),
      tenant(['safety', 'show', '-o', 'json']),
      tenant(['safety', 'reset', '--apply-held-back']),
      tenant(['repairs', 'list', '--stuck']),
      tenant(['repairs', 'escalated']),
    ]);
    expect(show.code, shown(['safety', 'show'], show)).toBe(1);
    expect(show.stdout).toBe('');
    expect(show.stderr).toContain('error: This route needs one of the roles: provider-admin (403 forbidden)');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stderr)).toMatchObject({ status: 403, code: 'forbidden', detail: expect.stringContaining('provider-admin') });
    for (const refused of [reset, repairs, escalated]) {
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('(403 forbidden)');
    }
    expect((await ok(admin, ['safety', 'show', '-o', 'json'])).json().repairStorm.state).toBe('closed');
  });

  it('repairs escalated: a machine reported again after a completed repair, with its RepairEscalated entry; a manual out-for-repair too', {
    timeout: 90_000,
  }, async () => {
    expect((await ok(admin, ['repairs', 'escalated'])).stdout.trim()).toBe('no machines out for repair');

    // The only gb200: reported, repaired (max_repairs = 1), reported again -> out-for-repair.
    const m = await report('gb200', 'ECC errors');
    expect(sources(await machine(site, who.admin, m))).toEqual(['repair-request', 'tenant-reported-issue']);
    const repair = await claimForRepair(site, who, m);
    await setRepairStatus(site, who, m, 'Completed');
    expect(sources(await repairRelease(site, who, repair, m))).toEqual([]);
    expect(await report('gb200', 'ECC errors again')).toBe(m);
    const escalatedMachine = await machine(site, who.admin, m);
    expect(sources(escalatedMachine)).toEqual(['out-for-repair', 'tenant-reported-issue']);
    const since = escalatedMachine.healthOverrides.find((o: { source: string }) => o.source === 'out-for-repair').createdAt;

    // An operator sends an h100 out for repair by hand: listed, without a RepairEscalated entry.
    const manual = (await site.call('GET', '/admin/machines?machineType=h100&allocatable=true', { token: who.admin })).body.items[0].id as string;
    await ok(admin, [
      'machine',
      'health-override',
      'add',
      manual,
      '--template',
      'OutForRepair',
      '--message',
      'Repair unsuccessful, requires manual investigation',
    ]);

    const [table, jsonRun] = await Promise.all([ok(admin, ['repairs', 'escalated']), ok(admin, ['repairs', 'escalated', '-o', 'json'])]);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^MACHINE\s+TYPE\s+ESCALATED\s+BY\s+EVENT\s+EARLIER REPORTS\s+ISSUE\s+MESSAGE$/);
    expect(lines).toHaveLength(3);
    expect(table.stdout).toMatch(
      new RegExp(`^${m}\\s+gb200\\s+${since}\\s+acme-user\\s+RepairEscalated\\s+1\\s+HARDWARE: ECC errors again\\s+Escalated: repaired repeatedly`, 'm'),
    );
    expect(table.stdout).toMatch(
      new RegExp(`^${manual}\\s+h100\\s+\\S+\\s+provider-user\\s+-\\s+-\\s+-\\s+Repair unsuccessful, requires manual investigation$`, 'm'),
    );

    const items = jsonRun.json().items as Array<Record<string, any>>;
    expect(items.find((e) => e.machineId === m)).toEqual({
      machineId: m,
      machineType: 'gb200',
      rack: escalatedMachine.rack,
      since,
      createdBy: 'acme-user',
      message: expect.stringMatching(/^Escalated/),
      issue: { category: 'HARDWARE', summary: 'ECC errors again' },
      escalated: {
        at: since,
        actor: 'acme-user',
        message: 'RepairEscalated',
        earlierReports: [{ at: expect.any(String), issue: { category: 'HARDWARE', summary: 'ECC errors' } }],
      },
    });
    expect(items.find((e) => e.machineId === manual)).toMatchObject({ machineType: 'h100', message: 'Repair unsuccessful, requires manual investigation' });
    expect(items.find((e) => e.machineId === manual)!.escalated).toBeUndefined();
  });

  it('safety show while tripped: the breaker, when it tripped and the held-back machines; reset --apply-held-back applies them', {
    timeout: 90_000,
  }, async () => {
    // The escalation did not count as a quarantine: one so far. The second is at the limit, the third trips.
    requestedBeforeStorm = await report('h100', 'report 2');
    expect(sources(await machine(site, who.admin, requestedBeforeStorm))).toEqual(['repair-request', 'tenant-reported-issue']);
    const closed = await ok(admin, ['safety', 'show']);
    expect(closed.stdout).toMatch(/^repair-storm breaker:\s+closed$/m);
    expect(closed.stdout).toMatch(/^tripped at:\s+-$/m);
    expect(closed.stdout).toMatch(/^held back:\s+0 machine\(s\)$/m);
    expect(closed.stdout).not.toContain('Held back (');

    const first = await report('h100', 'report 3');
    const second = await report('h100', 'report 4');
    heldBack = [first, second];
    for (const id of heldBack) expect(sources(await machine(site, who.admin, id))).toEqual(['tenant-reported-issue']);

    const [table, jsonRun] = await Promise.all([ok(admin, ['safety', 'show']), ok(admin, ['-o', 'json', 'safety', 'show'])]);
    const json = jsonRun.json();
    expect(json).toEqual({ repairStorm: { state: 'tripped', trippedAt: expect.any(String), heldBack }, replacementsInFlight: 0 });
    expect(jsonRun.stderr).toBe('');
    expect(table.stdout).toMatch(/^repair-storm breaker:\s+tripped$/m);
    expect(table.stdout).toMatch(new RegExp(`^tripped at:\\s+${json.repairStorm.trippedAt} \\(\\d+s ago\\)$`, 'm'));
    expect(table.stdout).toMatch(/^held back:\s+2 machine\(s\)$/m);
    expect(table.stdout).toMatch(/^replacements in flight:\s+0$/m);
    expect(table.stdout).toContain(`Held back (quarantined, repair request not applied):\n  ${first}\n  ${second}\n`);
    expect(table.stderr).toContain('fleetward safety reset');

    const reset = await ok(admin, ['safety', 'reset', '--apply-held-back']);
    expect(reset.stdout).toMatch(/^repair-storm breaker:\s+reset, now closed$/m);
    expect(reset.stdout).toMatch(new RegExp(`^held back at reset:\\s+${first},${second}$`, 'm'));
    expect(reset.stdout).toMatch(new RegExp(`^repair requests applied:\\s+${first},${second}$`, 'm'));
    for (const id of heldBack) expect(sources(await machine(site, who.admin, id))).toEqual(['repair-request', 'tenant-reported-issue']);

    // Again: nothing left to reset; JSON is the API's answer unchanged.
    const again = (await ok(admin, ['safety', 'reset', '--apply-held-back', '-o', 'json'])).json();
    expect(again).toEqual({ repairStorm: { state: 'closed', heldBack: [] }, replacementsInFlight: 0, heldBackAtReset: [], applied: [] });
    const plain = await ok(admin, ['safety', 'reset']);
    expect(plain.stdout).toMatch(/^held back at reset:\s+none$/m);
    expect(plain.stdout).toMatch(/^repair requests applied:\s+none$/m);
  });

  it('repairs list: waiting repairs with stage, since, waiting and deadline; --stuck once the claim SLA has passed', { timeout: 90_000 }, async () => {
    const waiting = [requestedBeforeStorm, ...heldBack].sort();
    const before = await ok(admin, ['repairs', 'list']);
    expect(before.stdout.split('\n')[0]).toMatch(/^MACHINE\s+STAGE\s+SINCE\s+WAITING\s+DEADLINE\s+STUCK$/);
    for (const id of waiting) expect(before.stdout).toMatch(new RegExp(`^${id}\\s+unclaimed\\s+\\S+\\s+0m\\s+\\S+\\s+no$`, 'm'));
    expect((await ok(admin, ['repairs', 'list', '--stuck'])).stdout.trim()).toBe('no stuck repairs');

    // 61 minutes later (the site's clock): past claim_minutes, stuck; the sweep alerts.
    offset = 61 * MINUTE;
    const jumped = clock.now().getTime();
    await site.eventually(async () => {
      const beat = await site.ctx.store.getSiteHeartbeat();
      return beat && Date.parse(beat.rosterSeenAt) >= jumped;
    });
    await sweep(site.ctx);

    const [table, jsonRun] = await Promise.all([ok(admin, ['repairs', 'list', '--stuck']), ok(admin, ['repairs', 'list', '--stuck', '-o', 'json'])]);
    for (const id of waiting) expect(table.stdout).toMatch(new RegExp(`^${id}\\s+unclaimed\\s+\\S+\\s+1h \\dm\\s+\\S+\\s+yes$`, 'm'));
    const items = jsonRun.json().items as Array<Record<string, any>>;
    expect(items.map((r) => r.machineId).sort()).toEqual(waiting);
    for (const r of items) {
      expect(r).toMatchObject({ stage: 'unclaimed', stuck: true, since: expect.any(String), deadline: expect.any(String) });
      expect(r.waitingMinutes).toBeGreaterThanOrEqual(61);
      expect(Date.parse(r.deadline) - Date.parse(r.since)).toBe(60 * MINUTE);
    }
    // --limit stops early.
    expect((await ok(admin, ['repairs', 'list', '--stuck', '--limit', '1', '-o', 'json'])).json().items).toHaveLength(1);
  });
});
