import { describe, expect, it } from 'vitest';
import { AwsSemanticsConfigError, EMULATED, parseAwsSemantics } from '#local/aws-semantics/config.ts';

describe('FLEETWARD_AWS_SEMANTICS', () => {
  it('is off unless set', () => {
    expect(parseAwsSemantics({})).toBeUndefined();
    expect(parseAwsSemantics({ FLEETWARD_AWS_SEMANTICS: ' ' })).toBeUndefined();
  });

  it('turns on the modes named, with a seed that replays the run', () => {
    expect(parseAwsSemantics({ FLEETWARD_AWS_SEMANTICS: 'throttle', FLEETWARD_AWS_SEMANTICS_SEED: '42' })).toEqual({
      modes: ['throttle'],
      seed: 42,
      throttleShare: 0.02,
    });
    expect(parseAwsSemantics({ FLEETWARD_AWS_SEMANTICS: 'throttle' }, () => 7)?.seed).toBe(7);
  });

  it('overlapping-sweeps is emulated, alone or with others', () => {
    expect(parseAwsSemantics({ FLEETWARD_AWS_SEMANTICS: 'overlapping-sweeps,throttle' }, () => 3)?.modes).toEqual(['overlapping-sweeps', 'throttle']);
  });

  it('all: every mode the local site emulates', () => {
    expect(parseAwsSemantics({ FLEETWARD_AWS_SEMANTICS: 'all' }, () => 1)?.modes).toEqual([...EMULATED]);
  });

  it('refuses an unknown mode, a mode not emulated yet, and a bad seed, naming the choices', () => {
    expect(() => parseAwsSemantics({ FLEETWARD_AWS_SEMANTICS: 'throttle,slow' })).toThrow(/unknown slow; use all, or any of index-lag, throttle/);
    expect(() => parseAwsSemantics({ FLEETWARD_AWS_SEMANTICS: 'index-lag' })).toThrow(
      /index-lag not emulated yet; the local site emulates throttle, overlapping-sweeps/,
    );
    expect(() => parseAwsSemantics({ FLEETWARD_AWS_SEMANTICS: 'throttle', FLEETWARD_AWS_SEMANTICS_SEED: '-1' })).toThrow(AwsSemanticsConfigError);
  });
});
