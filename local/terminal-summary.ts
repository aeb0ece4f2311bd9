import type { LogSink, RunnerPart } from './log-sink.ts';

// On a terminal, the lines a site makes for every machine as a matter of routine (each stream reaction, each roster
// bucket walked, each validation asked for, reported and announced, the site agent's own requests) would bury what
// a person starting it wants to read: at any level but debug they are left off the terminal and counted, and each
// phase of the fleet coming up is told in one line once it is done. The JSON log keeps every line.

/** Reconciled kinds whose passes are per machine and routine. */
const ROUTINE_RECONCILES = new Set(['validation', 'roster-bucket']);
const ROUTINE_MESSAGES = new Set(['reaction done', 'site agent validation request finished']);

interface Entry {
  message: string;
  entity?: unknown;
  outcome?: unknown;
  path?: unknown;
  status?: unknown;
}

function parsed(json: string): Entry | undefined {
  try {
    const entry = JSON.parse(json) as Record<string, unknown>;
    return typeof entry.message === 'string' ? (entry as unknown as Entry) : undefined;
  } catch {
    return undefined;
  }
}

/** Machine changes a roster bucket's walk applied, from its outcome ("3 machine change(s), bucket applied"). */
const rosterChanges = (outcome: unknown): number => Number(/^(\d+) machine change/.exec(String(outcome))?.[1] ?? 0);

/** Whether a controller line is routine, per machine; what it adds to the phases' counts is noted through `count`. */
function routine(entry: Entry, count: (phase: 'live' | 'passed' | 'failed', n: number) => void): boolean {
  if (ROUTINE_MESSAGES.has(entry.message)) return true;
  if (entry.message === 'reconciled' && ROUTINE_RECONCILES.has(String(entry.entity))) {
    if (entry.entity === 'roster-bucket') count('live', rosterChanges(entry.outcome));
    return true;
  }
  if (entry.message === 'event ValidationPassed delivered' || entry.message === 'event ValidationFailed delivered') {
    count(entry.message === 'event ValidationPassed delivered' ? 'passed' : 'failed', 1);
    // A failure is no routine: it is shown as well as counted.
    return entry.message === 'event ValidationPassed delivered';
  }
  // The site agent's own traffic (beats, reports), as long as it is answered.
  return entry.message === 'request' && String(entry.path).startsWith('/site/v1/') && Number(entry.status) < 400;
}

/**
 * `inner` without the routine per-machine lines, and a line per phase of the fleet coming up instead, told as the
 * runner's own. A phase is done once every one of the fleet's `machines` went through it.
 */
export function summarizedLines(inner: LogSink, machines: number): LogSink {
  const counts = { live: 0, passed: 0, failed: 0 };
  const told = new Set<string>();
  const once = (phase: string, line: string) => {
    if (told.has(phase)) return;
    told.add(phase);
    inner.part('runner', line);
  };
  const count = (phase: keyof typeof counts, n: number) => {
    counts[phase] += n;
    if (counts.live >= machines) once('live', `first roster applied: ${machines} machines live`);
    if (counts.passed + counts.failed >= machines) {
      once('validated', `validated ${counts.passed}/${machines}${counts.failed > 0 ? `, ${counts.failed} failed` : ''}`);
    }
  };
  return {
    controller(json) {
      const entry = parsed(json);
      // The line first, then the phase it may end: a failed validation is shown before the count that includes it.
      const noted: Array<[keyof typeof counts, number]> = [];
      if (!entry || !routine(entry, (phase, n) => noted.push([phase, n]))) inner.controller(json);
      for (const [phase, n] of noted) count(phase, n);
    },
    part(part: RunnerPart, message: string) {
      if (part === 'simulator' && message.startsWith('site-sim: reported validation')) return;
      inner.part(part, message);
    },
  };
}
