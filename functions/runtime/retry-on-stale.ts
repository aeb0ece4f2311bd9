import { conflict } from '#domain/core/rejection.ts';
import { StaleWriteError } from '#store/port.ts';

export interface StaleRetry {
  /** How many times to load, decide and commit before giving up; 1 tries once. */
  attempts?: number;
  /**
   * What giving up means. A request answers a clean 409 (`conflict`); a reconciler or a claim whose rival got there
   * first has nothing left to do (`skip`: resolves to undefined).
   */
  onExhausted?: 'conflict' | 'skip';
}

/**
 * The one place a lost race is handled. Load, decide, commit; when another writer got there first, do it all again
 * on fresh state, bounded, so that heavy contention ends in a clean answer rather than a hot loop.
 */
export async function retryOnStale<T>(attempt: () => Promise<T>, options?: StaleRetry & { onExhausted?: 'conflict' }): Promise<T>;
export async function retryOnStale<T>(attempt: () => Promise<T>, options: StaleRetry & { onExhausted: 'skip' }): Promise<T | undefined>;
export async function retryOnStale<T>(attempt: () => Promise<T>, { attempts = 8, onExhausted = 'conflict' }: StaleRetry = {}): Promise<T | undefined> {
  for (let round = 1; ; round++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof StaleWriteError)) throw error;
      if (round >= attempts) {
        if (onExhausted === 'skip') return undefined;
        throw conflict('concurrent-update', 'the record kept changing while this request ran; try again');
      }
      await new Promise((r) => setTimeout(r, Math.random() * 10 * round));
    }
  }
}

/** Commit a claim or a decision once; false when a rival's write won (it has done, or will do, the work). */
export const committedOnce = async (commit: () => Promise<unknown>): Promise<boolean> => {
  const committed = async () => {
    await commit();
    return true;
  };
  return (await retryOnStale(committed, { attempts: 1, onExhausted: 'skip' })) ?? false;
};
