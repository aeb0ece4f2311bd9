import { describe, expect, it } from 'vitest';
import { textLines } from '#local/log-sink.ts';
import { summarizedLines } from '#local/terminal-summary.ts';

// On a terminal, what each machine does as a matter of routine is counted, not shown, and each phase of the fleet
// coming up is told once (bin/local.ts uses this unless the level is debug; the JSON log keeps every line).

const line = (message: string, fields: Record<string, unknown> = {}) => JSON.stringify({ level: 'INFO', message, service: 'fleetward', ...fields });

function terminal(machines: number) {
  const shown: string[] = [];
  const sink = summarizedLines(
    textLines((text) => void shown.push(text)),
    machines,
  );
  return { shown, sink };
}

describe('a summarized terminal log', () => {
  it('leaves out the per-machine routine and tells each phase once, when every machine went through it', () => {
    const { shown, sink } = terminal(3);
    for (const id of ['m1', 'm2', 'm3']) {
      sink.controller(line('reaction done', { entity: 'machine', id, lagMs: 12 }));
      sink.controller(line('reconciled', { entity: 'validation', id, outcome: 'validation call claimed' }));
      sink.controller(line('site agent validation request finished', { machineId: id, ok: true }));
      sink.controller(line('request', { method: 'POST', path: `/site/v1/machines/${id}/validation`, status: 200 }));
      sink.part('simulator', `site-sim: reported validation v-1 of ${id}: passed=true`);
    }
    sink.controller(line('reconciled', { entity: 'roster-bucket', id: '05', outcome: '2 machine change(s), bucket applied' }));
    expect(shown).toEqual([]);
    sink.controller(line('reconciled', { entity: 'roster-bucket', id: '17', outcome: '1 machine change(s), bucket applied' }));
    expect(shown).toEqual(['runner     first roster applied: 3 machines live']);
    sink.controller(line('event ValidationPassed delivered', { machineId: 'm1' }));
    sink.controller(line('event ValidationPassed delivered', { machineId: 'm2' }));
    sink.controller(line('event ValidationFailed delivered', { machineId: 'm3' }));
    expect(shown.slice(1, 2)).toEqual([line('event ValidationFailed delivered', { machineId: 'm3' })]);
    expect(shown.slice(2)).toEqual(['runner     validated 2/3, 1 failed']);
    // Once told, a phase is not told again when the roster changes later.
    sink.controller(line('reconciled', { entity: 'roster-bucket', id: '05', outcome: '3 machine change(s), bucket applied' }));
    expect(shown).toHaveLength(3);
  });

  it('shows what a person does and what goes wrong: API requests, other reconciles, refused agent calls, parts', () => {
    const { shown, sink } = terminal(32);
    const kept = [
      line('request', { method: 'POST', path: '/v2/org/acme/nico/instance', status: 201 }),
      line('request', { method: 'POST', path: '/site/v1/heartbeats', status: 401 }),
      line('reconciled', { entity: 'instance', id: 'i-1', outcome: 'Ready' }),
      line('sweep skipped'),
      'not json',
    ];
    for (const text of kept) sink.controller(text);
    sink.part('stream', 'stream-poller: SET ASIDE a record');
    expect(shown).toEqual([...kept, 'stream     stream-poller: SET ASIDE a record']);
  });
});
