import { describe, expect, it } from 'vitest';
import type { JournalEntry } from '#agent/journal/entries.ts';
import { applyEntry, emptyLedger, liveEntries } from '#agent/journal/ledger.ts';

const at = '2026-12-02T00:00:00.000Z';
const create: JournalEntry = { t: 'create', at, name: 'job', machineId: 'm-1', instanceId: 'i-1', clientToken: 'tok' };
const replay = (entries: JournalEntry[]) => {
  const ledger = emptyLedger();
  for (const entry of entries) applyEntry(ledger, entry);
  return ledger;
};

describe('the ledger the journal rebuilds', () => {
  it('a delete during the provisioning stands when the provisioning ends', () => {
    const ledger = replay([create, { t: 'delete', at, clientToken: 'tok' }, { t: 'provisioned', at, clientToken: 'tok', ok: true, message: 'ok' }]);
    expect(ledger.instances.get('tok')?.phase).toBe('cleaning');
  });

  it('answers for every name of a create, and forgets them once its cleanup is reported', () => {
    const ledger = replay([
      create,
      { t: 'alias', at, clientToken: 'tok', name: 'job-r2' },
      { t: 'provisioned', at, clientToken: 'tok', ok: true, message: '' },
    ]);
    expect([...ledger.names]).toEqual([
      ['job', 'tok'],
      ['job-r2', 'tok'],
    ]);
    for (const entry of [
      { t: 'delete', at, clientToken: 'tok' },
      { t: 'cleaned', at, clientToken: 'tok', ok: true, message: '' },
      { t: 'cleanup-reported', at, clientToken: 'tok' },
    ] as JournalEntry[])
      applyEntry(ledger, entry);
    expect(ledger.names.size + ledger.instances.size).toBe(0);
  });

  it('keeps, compacted, exactly what rebuilds what is not finished', () => {
    const entries: JournalEntry[] = [
      create,
      { t: 'provisioned', at, clientToken: 'tok', ok: true, message: '' },
      { t: 'power', at, id: 'p1', clientToken: 'tok', machineId: 'm-1', action: 'off' },
      { t: 'power-done', at, id: 'p1', ok: true, message: '' },
      { t: 'power', at, id: 'p2', clientToken: 'tok', machineId: 'm-1', action: 'cycle' },
      { t: 'power-sent', at, id: 'p2' },
      { t: 'validation', at, machineId: 'm-2', validationId: 'v1', suite: 's', reason: 'repair' },
      { t: 'validated', at, validationId: 'v1', report: { validationId: 'v1', passed: true, results: [] } },
      { t: 'validation-reported', at, validationId: 'v1' },
    ];
    const live = liveEntries(replay(entries));
    expect(live.map((e) => e.t)).toEqual(['create', 'provisioned', 'power', 'power-sent']);
    // The ids whose outcome was reported are answered again only until the journal is compacted (at a restart).
    const { reported, ...rest } = replay(entries);
    expect(reported.validations).toEqual(new Set(['v1']));
    expect(replay(live)).toEqual({ ...rest, reported: { validations: new Set(), maintenances: new Set() } });
  });
});
