import { describe, expect, it } from 'vitest';
import {
  classifyCreateOutcome,
  decideAfterAttempt,
  defaultCreateRetryPolicy,
  firstCreateAttempt,
  retryDelayMs,
  siteNameForAttempt,
  type CreateOutcome,
  type CreateRetryPolicy,
} from '#site/create-retry.ts';

const statusTexts: Record<number, string> = {
  400: 'Bad Request',
  404: 'Not Found',
  409: 'Conflict',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

type Step = number | 'network' | 'timeout';

function outcome(step: Step): CreateOutcome {
  if (step === 'network') return { kind: 'network', message: 'ECONNREFUSED' };
  if (step === 'timeout') return { kind: 'timeout', timeoutMs: 10_000 };
  if (step >= 200 && step < 300) return { kind: 'created', status: step };
  return { kind: 'http-error', status: step, statusText: statusTexts[step] ?? '' };
}

/** Drives the pure rule the way the client does, recording what it would send and how long it would wait. */
function play(steps: Step[], policy: CreateRetryPolicy = defaultCreateRetryPolicy) {
  const names: string[] = [];
  const delays: number[] = [];
  let progress = firstCreateAttempt;
  for (const step of steps) {
    names.push(siteNameForAttempt('job', progress.attempt, progress.sawHttpError));
    const decision = decideAfterAttempt(policy, progress, outcome(step));
    if (decision.action === 'succeeded') return { ok: true, names, delays, attempts: progress.attempt };
    if (decision.action === 'stop') return { ok: false, names, delays, attempts: progress.attempt, reason: decision.reason };
    delays.push(decision.delayMs);
    progress = decision.next;
  }
  throw new Error(`the rule wanted more attempts than the ${steps.length} scripted`);
}

describe('classifyCreateOutcome', () => {
  it.each([
    [201, 'success'],
    [500, 'retryable'],
    [503, 'retryable'],
    ['network', 'retryable'],
    [502, 'final'],
    [504, 'final'],
    [400, 'final'],
    [404, 'final'],
    [409, 'final'],
    [501, 'final'],
    ['timeout', 'final'],
  ] as const)('%s is %s', (step, kind) => {
    expect(classifyCreateOutcome(outcome(step)).kind).toBe(kind);
  });
});

describe('the create retry rule', () => {
  it('succeeds at once with the plain name', () => {
    expect(play([201])).toEqual({ ok: true, names: ['job'], delays: [], attempts: 1 });
  });

  it.each([500, 503])('retries %s with -rN names and base × attempt delays', (status) => {
    expect(play([status, status, 201])).toEqual({
      ok: true,
      names: ['job', 'job-r2', 'job-r3'],
      delays: [250, 500],
      attempts: 3,
    });
  });

  it('keeps the plain name across network failures: no HTTP error yet', () => {
    expect(play(['network', 'network', 201])).toEqual({
      ok: true,
      names: ['job', 'job', 'job'],
      delays: [250, 500],
      attempts: 3,
    });
  });

  it.each([
    [502, 'site agent answered 502 Bad Gateway on attempt 1 (not retried: the create may have committed)'],
    [504, 'site agent answered 504 Gateway Timeout on attempt 1 (not retried: the create may have committed)'],
    [400, 'site agent answered 400 Bad Request on attempt 1 (not retried: the agent rejected the request)'],
    [404, 'site agent answered 404 Not Found on attempt 1 (not retried: the agent rejected the request)'],
    [409, 'site agent answered 409 Conflict on attempt 1 (not retried: the name is already in use at the site)'],
    ['timeout', 'site agent did not answer within 10000 ms on attempt 1 (not retried: the instance may still be provisioning)'],
  ] as const)('never retries %s', (step, reason) => {
    expect(play([step])).toEqual({ ok: false, names: ['job'], delays: [], attempts: 1, reason });
  });

  it('names the conflict code when the agent gives one', () => {
    const decision = decideAfterAttempt(defaultCreateRetryPolicy, firstCreateAttempt, {
      kind: 'http-error',
      status: 409,
      statusText: 'Conflict',
      code: 'name_conflict',
    });
    expect(decision).toEqual({
      action: 'stop',
      reason: 'site agent answered 409 Conflict (name_conflict) on attempt 1 (not retried: the name is already in use at the site)',
    });
  });

  it('gives up when the attempts are exhausted', () => {
    expect(play([500, 503, 500])).toEqual({
      ok: false,
      names: ['job', 'job-r2', 'job-r3'],
      delays: [250, 500],
      attempts: 3,
      reason: 'site agent answered 500 Internal Server Error on attempt 3 (gave up after 3 attempts)',
    });
    expect(play(['network', 'network', 'network'])).toMatchObject({
      ok: false,
      attempts: 3,
      reason: 'site agent unreachable on attempt 3: ECONNREFUSED (gave up after 3 attempts)',
    });
  });

  it('max_attempts 1 disables retries', () => {
    const once = { maxAttempts: 1, baseDelayMs: 250 };
    for (const step of [500, 503, 'network'] as const) {
      expect(play([step], once)).toMatchObject({ ok: false, attempts: 1, delays: [] });
    }
    expect(play([503], once).reason).toBe('site agent answered 503 Service Unavailable on attempt 1 (retries disabled: max_attempts is 1)');
  });

  it('stops a retry sequence at the first non-retryable answer', () => {
    expect(play([500, 409])).toMatchObject({ ok: false, names: ['job', 'job-r2'], attempts: 2, delays: [250] });
    expect(play(['network', 'timeout'])).toMatchObject({ ok: false, names: ['job', 'job'], attempts: 2 });
  });

  it.each([
    [
      ['network', 500, 201],
      ['job', 'job', 'job-r3'],
    ],
    [
      [500, 'network', 201],
      ['job', 'job-r2', 'job-r3'],
    ],
    [
      ['network', 503, 201],
      ['job', 'job', 'job-r3'],
    ],
    [
      [503, 'network', 'network', 201],
      ['job', 'job-r2', 'job-r3', 'job-r4'],
    ],
  ] as const)('names across the mixed sequence %j', (steps, names) => {
    const result = play([...steps], { maxAttempts: 4, baseDelayMs: 100 });
    expect(result.names).toEqual(names);
    expect(result.delays).toEqual([100, 200, 300].slice(0, steps.length - 1));
    expect(result.ok).toBe(true);
  });

  it('follows the configured base delay, including zero', () => {
    expect(retryDelayMs({ maxAttempts: 5, baseDelayMs: 40 }, 3)).toBe(120);
    expect(play([500, 500, 500, 201], { maxAttempts: 5, baseDelayMs: 0 }).delays).toEqual([0, 0, 0]);
  });

  it('suffixes only after an HTTP error and never on attempt 1', () => {
    expect(siteNameForAttempt('job', 1, true)).toBe('job');
    expect(siteNameForAttempt('job', 2, false)).toBe('job');
    expect(siteNameForAttempt('job', 7, true)).toBe('job-r7');
  });
});
