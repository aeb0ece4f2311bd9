import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '#domain/core/model.ts';
import { crashableRunner } from '#test/support/crashable-runner.ts';

// Crash recovery of declared maintenance (as test/e2e/crash-recovery.test.ts does for the other workflows): the local
// runner, simulated agent included, is killed with SIGKILL while one maintenance has a wave at the agent and another
// has machines validating, then started again on the same data dir. Every machine must end returned or failed, none
// lost, none admitted twice, and no more than `maxInFlight` of a maintenance in maintenance or validating at once.

const SETTLE_MS = 2_000;
const MAINTENANCE_MS = 8_000;
/** The validations under way at the crash take this long: the crash loses them with the agent. */
const SLOW_VALIDATION_MS = 60_000;
const VALIDATION_TIMEOUT_MINUTES = 0.25;
const WINDOW_MINUTES = 1;
const MAX_IN_FLIGHT = 2;
const SWEEP_INTERVAL_S = 1;
const SITE = 'crash-maintenance';
const config = `
[site]
name = "${SITE}"
[site_agent]
report_timeout_seconds = 1
[sweep]
interval_seconds = ${SWEEP_INTERVAL_S}
[validation]
timeout_minutes = ${VALIDATION_TIMEOUT_MINUTES}
[simulator]
machines = [ { type = "gb200", count = 8, racks = 2 } ]
heartbeat_interval_seconds = 0.2
maintenance_ms = ${MAINTENANCE_MS}
validation_ms = 300
`;

/** How java and the runner may take to come up: their own time, not the site's. */
const RUNNER_UP_MS = 60_000;
/**
 * After the restart: work the crash lost is asked for again a window after the agent took it on, a lost validation
 * once its timeout passed; then each remaining wave takes the agent's work and a validation, a few sweeps apart.
 */
const RECOVERY_MS = WINDOW_MINUTES * 60_000 + 2 * (MAINTENANCE_MS + VALIDATION_TIMEOUT_MINUTES * 60_000) + 10 * SWEEP_INTERVAL_S * 1000;

const crash = crashableRunner({ config, siteName: SITE, runnerUpMs: RUNNER_UP_MS, defaultWaitMs: RUNNER_UP_MS });
const { site, eventually } = crash;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const as = (roles: Role[]) => crash.as('provider', roles);

type Course = { phase: string; startedAt?: string };
type Shown = { id: string; state: string; machineIds: string[]; machines: Record<string, Course> };

async function show(id: string): Promise<Shown> {
  return (await site().call('GET', `/admin/maintenance/${id}`, { token: await as(['provider-admin']) })).body;
}

async function declareOn(rack: string): Promise<Shown> {
  const declared = await site().call('POST', '/admin/maintenance', {
    token: await as(['provider-admin']),
    body: {
      kind: 'planned',
      category: 'firmware',
      reason: 'NIC firmware',
      scope: { racks: [rack] },
      handBackBy: new Date(Date.now() + 15 * 86_400_000).toISOString(),
      windowMinutes: WINDOW_MINUTES,
      rollout: { maxInFlight: MAX_IN_FLIGHT, haltAfterFailures: 4 },
    },
  });
  expect(declared.status, JSON.stringify(declared.body)).toBe(201);
  return declared.body;
}

const inPhase = (m: Shown, phase: string): string[] => Object.keys(m.machines).filter((id) => m.machines[id]!.phase === phase);
const inFlight = (m: Shown): number => inPhase(m, 'in-maintenance').length + inPhase(m, 'validating').length;

beforeAll(async () => {
  await crash.start({ allocatable: 8, withinMs: RUNNER_UP_MS });
}, RUNNER_UP_MS * 2);

afterAll(() => crash.dispose());

describe('a crash mid-wave and mid-validation', { timeout: RECOVERY_MS + RUNNER_UP_MS }, () => {
  let validatingAtCrash: Shown;
  let wavingAtCrash: Shown;

  beforeAll(
    async () => {
      // The fleet summary's rack items resolve a rack: wait until the stream has them.
      const admin = await as(['provider-admin']);
      await eventually(
        'the summary holds the fleet',
        async () => (await site().call('GET', '/admin/fleet/summary', { token: admin })).body.machines === 8,
        10_000,
      );
      for (const id of ['gb200-r2-01', 'gb200-r2-02', 'gb200-r2-03', 'gb200-r2-04']) {
        await site().call('POST', `/_sim/machines/${id}/validation`, { body: { outcome: 'pass', delayMs: SLOW_VALIDATION_MS } });
      }
      const validating = await declareOn('rack-2');
      await eventually('a wave is validating', async () => inPhase(await show(validating.id), 'validating').length === MAX_IN_FLIGHT, 3 * MAINTENANCE_MS);
      const waving = await declareOn('rack-1');
      await eventually('a wave is at the agent', async () => inPhase(await show(waving.id), 'in-maintenance').length === MAX_IN_FLIGHT, 10_000);
      await sleep(SETTLE_MS);
      [validatingAtCrash, wavingAtCrash] = await Promise.all([show(validating.id), show(waving.id)]);
      expect(inPhase(validatingAtCrash, 'validating')).toHaveLength(MAX_IN_FLIGHT);
      expect(inPhase(wavingAtCrash, 'in-maintenance')).toHaveLength(MAX_IN_FLIGHT);
      await crash.kill();
      await crash.start({ allocatable: 0, withinMs: RUNNER_UP_MS });
    },
    3 * MAINTENANCE_MS + 10_000 + SETTLE_MS + 2 * RUNNER_UP_MS,
  );

  it('every machine ends returned, none lost, none admitted twice, never more than maxInFlight at once', async () => {
    const ids = [validatingAtCrash.id, wavingAtCrash.id];
    const done = await eventually(
      'both maintenances complete',
      async () => {
        const shown = await Promise.all(ids.map(show));
        for (const m of shown) expect(inFlight(m), `${m.id} in flight`).toBeLessThanOrEqual(MAX_IN_FLIGHT);
        return shown.every((m) => m.state === 'Completed') ? shown : undefined;
      },
      RECOVERY_MS,
    );
    const admin = await as(['provider-admin']);
    for (const m of done) {
      expect(m.machineIds).toHaveLength(4);
      expect(Object.values(m.machines).map((c) => c.phase)).toEqual(['returned', 'returned', 'returned', 'returned']);
      for (const machineId of m.machineIds) {
        const { body } = await site().call('GET', `/admin/machines/${machineId}/history?limit=500`, { token: admin });
        const said = (body.items as Array<{ action: string; message?: string }>).filter((h) => h.message?.startsWith(`maintenance ${m.id}`));
        expect(
          said.filter((h) => h.action === 'maintenance-started'),
          `${machineId} admitted once`,
        ).toHaveLength(1);
        expect(
          said.filter((h) => h.message === `maintenance ${m.id}: validated`),
          `${machineId} returned once`,
        ).toHaveLength(1);
        const machine = (await site().call('GET', `/admin/machines/${machineId}`, { token: admin })).body;
        expect(machine).toMatchObject({ allocatable: true, lifecycle: 'available', validation: { state: 'passed' } });
      }
    }
    // The work the crash cut short was asked for again; the validations it lost were asked for again past their timeout.
    const asked = async (machineId: string) =>
      (await site().call('GET', `/admin/machines/${machineId}/history?limit=500`, { token: admin })).body.items.map((h: { action: string }) => h.action);
    for (const machineId of inPhase(wavingAtCrash, 'in-maintenance')) expect(await asked(machineId)).toContain('maintenance-asked-again');
  });
});
