import { describe, expect, it } from 'vitest';
import { AWS_SEMANTICS_MODES, AwsSemanticsConfigError, parseAwsSemantics } from '#local/aws-semantics/config.ts';

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
      indexLagMs: 1_000,
    });
    expect(parseAwsSemantics({ FLEETWARD_AWS_SEMANTICS: 'throttle' }, () => 7)?.seed).toBe(7);
    expect(parseAwsSemantics({ FLEETWARD_AWS_SEMANTICS: 'parallel-shards,lambda-timeouts' }, () => 7)?.modes).toEqual(['parallel-shards', 'lambda-timeouts']);
  });

  it('overlapping-sweeps is emulated, alone or with others', () => {
    expect(parseAwsSemantics({ FLEETWARD_AWS_SEMANTICS: 'overlapping-sweeps,throttle' }, () => 3)?.modes).toEqual(['overlapping-sweeps', 'throttle']);
  });

  it('all: every mode the local site emulates', () => {
    expect(parseAwsSemantics({ FLEETWARD_AWS_SEMANTICS: 'all' }, () => 1)?.modes).toEqual([...AWS_SEMANTICS_MODES]);
  });

  it('index-lag: index reads lag by FLEETWARD_INDEX_LAG_MS, 1 s unless set', () => {
    expect(parseAwsSemantics({ FLEETWARD_AWS_SEMANTICS: 'index-lag' }, () => 1)).toMatchObject({ modes: ['index-lag'], indexLagMs: 1_000 });
    expect(parseAwsSemantics({ FLEETWARD_AWS_SEMANTICS: 'index-lag', FLEETWARD_INDEX_LAG_MS: '250' }, () => 1)?.indexLagMs).toBe(250);
    expect(() => parseAwsSemantics({ FLEETWARD_AWS_SEMANTICS: 'index-lag', FLEETWARD_INDEX_LAG_MS: '1s' })).toThrow(/FLEETWARD_INDEX_LAG_MS/);
  });

  it('refuses an unknown mode and a bad seed, naming the choices', () => {
    expect(() => parseAwsSemantics({ FLEETWARD_AWS_SEMANTICS: 'throttle,slow' })).toThrow(/unknown slow; use all, or any of index-lag, throttle/);
    expect(() => parseAwsSemantics({ FLEETWARD_AWS_SEMANTICS: 'throttle', FLEETWARD_AWS_SEMANTICS_SEED: '-1' })).toThrow(AwsSemanticsConfigError);
  });
});
