import { Command } from 'commander';
import { action, type RuntimeDeps } from '../runtime.ts';
import { renderSafety, renderSafetyReset } from '../views.ts';

// `fleetward safety show|reset`: the repair-storm breaker (GET /admin/safety, POST /admin/safety/repair-storm/reset).
// While it is tripped, tenant reports still quarantine but their repair requests are held back until a provider
// resets it.

export function safetyCommand(deps: RuntimeDeps): Command {
  const safety = new Command('safety').description('fleet safety: the repair-storm breaker and replacements in flight (provider)');

  safety
    .command('show')
    .description('the breaker state, when it tripped, the machines it held back, meta-instance replacements in flight')
    .action(
      action(deps, async (rt) => {
        const shown = await rt.client.get('/admin/safety');
        rt.out.result(shown, () => renderSafety(shown));
        if (!rt.out.forScripts && shown.repairStorm.state === 'tripped') {
          rt.out.note('tripped: repair requests are held back; close it with `fleetward safety reset [--apply-held-back]`');
        }
      }),
    );

  safety
    .command('reset')
    .description('close the repair-storm breaker; --apply-held-back also applies the repair requests it held back')
    .option('--apply-held-back', 'apply the held-back repair requests (default: the machines stay quarantined only)')
    .action(
      action(deps, async (rt, _args, o: { applyHeldBack?: boolean }) => {
        const applyHeldBack = o.applyHeldBack === true;
        const reset = await rt.client.post('/admin/safety/repair-storm/reset', { body: { applyHeldBack } });
        rt.out.result(reset, () => renderSafetyReset(reset, applyHeldBack));
      }),
    );

  return safety;
}
