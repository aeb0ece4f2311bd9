import { describe, expect, it } from 'vitest';
import { defaultSiteConfig } from '#config/site-config.ts';
import { reconcilerTimeoutSeconds } from '#lib/function-timeouts.ts';
import { dueRules, dueTimes, ROSTER_WALK_GRACE_MS } from '#reconcilers/due-times.ts';
import type { RecordKind } from '#reconcilers/reconciler.ts';
import { reconcilers } from '#reconcilers/registry.ts';
import { aMachine } from '#test/support/fixtures.ts';

describe('the due-time rules the store writes', () => {
  it("are exactly the rules the registry's reconcilers watch with, kind by kind", () => {
    for (const kind of Object.keys(dueRules) as RecordKind[]) {
      const watched = reconcilers.flatMap((r) => {
        const dueAt = (r.watches as Partial<Record<RecordKind, { dueAt?: unknown }>>)[kind]?.dueAt;
        return dueAt ? [dueAt] : [];
      });
      expect(new Set<unknown>(dueRules[kind]), kind).toEqual(new Set(watched));
    }
  });

  it("write a record's earliest due time of all its rules", () => {
    const cleaning = aMachine({
      state: 'Cleanup',
      instanceId: 'i-1',
      updatedAt: 'B',
      cleanup: { instanceId: 'i-1', phase: 'requested', attempts: 1, leaseUntil: 'C' },
    });
    expect(dueTimes.machine(cleaning)).toBe('C');
    expect(dueTimes.machine(aMachine())).toBeUndefined();
  });

  it('leave a changed roster bucket to the stream for no longer than any stream invocation may run', () => {
    const quickest = { ...defaultSiteConfig(), instance_create_retry: { ...defaultSiteConfig().instance_create_retry, max_attempts: 1, timeout_ms: 1 } };
    expect(ROSTER_WALK_GRACE_MS).toBeLessThanOrEqual(reconcilerTimeoutSeconds(quickest) * 1000);
  });
});
