import { envInt } from '../env.ts';
import { metaHeal } from '../meta-heal.ts';
import { definePart, dynamoOf } from '../part.ts';

export const metaPart = definePart({
  name: 'meta',
  describe: "a meta-instance's machine fails: time until a replacement member is Ready, stream-driven against the sweep alone",
  // Two sites one after the other.
  dynamodb: { serves: 'the meta-instance sites', sitesOneAfterAnother: true },
  section: 'meta_instance_replacement',
  options: (env) => ({
    trials: envInt(env, 'BENCH_META_TRIALS', 20),
    warmupTrials: envInt(env, 'BENCH_META_WARMUP', 2, 0),
    heartbeatTrials: envInt(env, 'BENCH_META_HEARTBEAT_TRIALS', 6, 0),
    sweepProbes: envInt(env, 'BENCH_META_SWEEP_PROBES', 1, 0),
    probeIntervals: envInt(env, 'BENCH_META_PROBE_INTERVALS', 3),
    sweepIntervalMs: envInt(env, 'BENCH_META_SWEEP_INTERVAL_MS', 5_000),
    pollMs: envInt(env, 'BENCH_META_POLL_MS', 10),
  }),
  run: (context, options) => metaHeal(dynamoOf(context).endpoint, context.id, options, context.progress),
  summaryKey: 'meta_replacement',
  summarize: (meta) => {
    const sweepOnly = meta.sweep_only.override;
    return {
      unit: "ms from a backing machine's failure until a different member is Ready (median of the trials); ratio sweep-only / stream",
      stream_override_median: meta.stream.override.median,
      stream_override_p90: meta.stream.override.p90,
      stream_override_max: meta.stream.override.max,
      stream_override_trials: meta.stream.override.trials,
      sweep_only_override:
        sweepOnly.trials === 0
          ? 'not run'
          : sweepOnly.replaced === 0
            ? `never replaced within ${sweepOnly.wait_per_trial.value} ms (${sweepOnly.trials} trial(s))`
            : sweepOnly.median,
      ratio_override: meta.ratios.override ?? meta.ratios.override_lower_bound,
      ...('heartbeat' in meta.stream && meta.stream.heartbeat && 'heartbeat' in meta.sweep_only && meta.sweep_only.heartbeat
        ? {
            stream_heartbeat_median: meta.stream.heartbeat.median,
            sweep_only_heartbeat_median: meta.sweep_only.heartbeat.median,
            ratio_heartbeat: meta.ratios.heartbeat,
          }
        : {}),
      sweep_interval_s: meta.config.sweep_interval.local,
    };
  },
});
