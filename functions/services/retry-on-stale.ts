import { conflict } from '#domain/rejection.ts';
import { StaleWriteError } from '#store/fleet-store.ts';

/**
 * Load, decide, commit; when another writer got there first, do it all again on fresh state. Bounded: under
 * heavy contention the caller gets a clean 409 rather than a hot loop.
 */
export async function retryOnStale<T>(attempt: () => Promise<T>, maxAttempts = 8): Promise<T> {
  for (let round = 1; ; round++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof StaleWriteError)) throw error;
      if (round >= maxAttempts) throw conflict('concurrent-update', 'the record kept changing while this request ran; try again');
      await new Promise((r) => setTimeout(r, Math.random() * 10 * round));
    }
  }
}
