// How much CPU DynamoDB Local's JIT compilers have used: a fresh JVM spends its first half-minute or so compiling,
// on cores the site and its database need, so a part that judges a steady state says how much of each measured
// stretch still overlapped that.

import { readdirSync, readFileSync } from 'node:fs';
import { round } from './stats.ts';

/** /proc/<pid>/stat counts CPU time in clock ticks: USER_HZ, which Linux fixes at 100 for user space. */
const MS_PER_TICK = 10;

/** CPU ms (user + system) java's C1 and C2 compiler threads have used so far; undefined without /proc or the pid. */
export function jitCompilerCpuMs(javaPid: number | undefined): number | undefined {
  if (javaPid === undefined) return undefined;
  try {
    let ticks = 0;
    for (const task of readdirSync(`/proc/${javaPid}/task`)) {
      // Thread names are cut to 15 characters: "C2 CompilerThre".
      const name = readFileSync(`/proc/${javaPid}/task/${task}/comm`, 'utf8');
      if (!/^C[12] Compiler/.test(name)) continue;
      // The name is in parentheses and may hold spaces: the fields after it are counted from the closing one.
      const stat = readFileSync(`/proc/${javaPid}/task/${task}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // utime and stime are fields 14 and 15 of stat, 12 and 13 after the name (state is the first).
      ticks += Number(fields[11]) + Number(fields[12]);
    }
    return ticks * MS_PER_TICK;
  } catch {
    return undefined;
  }
}

export interface JitShare {
  unit: string;
  cpu_ms: number;
  /** cpu_ms over the wall time: how many cores the compilers kept busy on average. */
  cores: number;
}

/**
 * Starts watching DynamoDB Local's compilers over a stretch of a part; the function it returns ends the stretch and
 * says what they used in it, or null where /proc does not tell.
 */
export function watchJitCompilers(javaPid: number | undefined): () => JitShare | null {
  const startedCpuMs = jitCompilerCpuMs(javaPid);
  const started = performance.now();
  return () => {
    const endedCpuMs = jitCompilerCpuMs(javaPid);
    if (startedCpuMs === undefined || endedCpuMs === undefined) return null;
    const cpuMs = endedCpuMs - startedCpuMs;
    return {
      unit: "CPU ms of DynamoDB Local's JIT compiler threads meanwhile, and the cores that is on average",
      cpu_ms: cpuMs,
      cores: round(cpuMs / (performance.now() - started), 2),
    };
  };
}
