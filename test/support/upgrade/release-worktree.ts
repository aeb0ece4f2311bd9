import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** The commit whose layout is release 0.1.0 (releases/0.1.0.json). */
export const RELEASE_010_COMMIT = '1557cba';
/** The last commit of release 0.2.0 (releases/0.2.0.json). */
export const RELEASE_020_COMMIT = '352efee';

export interface ReleaseWorktree {
  dir: string;
  remove(): void;
}

const repoRoot = resolve(import.meta.dirname, '../../..');

/**
 * An earlier release's code, checked out from this repository's history into a worktree of its own, with this
 * checkout's node_modules (its dependencies are a subset of today's). Its runner then starts as `npm start` would
 * have started it.
 */
export function releaseWorktree(commit: string): ReleaseWorktree {
  const dir = mkdtempSync(join(tmpdir(), `fleetward-release-${commit}-`));
  try {
    execFileSync('git', ['worktree', 'add', '--detach', '--force', dir, commit], { cwd: repoRoot, stdio: 'pipe' });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    const why = (error as { stderr?: Buffer }).stderr?.toString() ?? String(error);
    throw new Error(`cannot check out release commit ${commit} (a shallow clone has no history: git fetch --unshallow): ${why}`);
  }
  if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'));
  return {
    dir,
    remove() {
      execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: repoRoot, stdio: 'pipe' });
    },
  };
}
