// How much CPU DynamoDB Local's JIT compilers have used: a fresh JVM spends its first half-minute or so compiling,
// on cores the site and its database need, so a part that judges a steady state says how much of each measured
// stretch still overlapped that.

import { readdirSync, readFileSync } from 'node:fs';

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
