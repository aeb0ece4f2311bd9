// The refresh loop. Every `every` ms each panel loads its data, stage after stage (a later stage may read what an
// earlier one put in the store), then every panel renders, and the round's errors go to whoever shows them.
// A refresh asked for while one runs (a machine clicked, a filter changed) runs right after it.
import { SignInNeeded } from './api.js';

/**
 * Runs one read: a failure is recorded for the round and the panel keeps its last data; `undefined` then.
 * @typedef {<T>(read: () => Promise<T>) => Promise<T | undefined>} Attempt
 */

/**
 * A panel as the loop sees it. `load` fetches (through `attempt` for each read that may fail on its own);
 * `render` writes what changed to the page, `now` being the round's time for "… ago".
 * @typedef {{ load?: (attempt: Attempt) => Promise<void>, render?: (now: number) => void }} Panel
 */

/** @typedef {{ startedAt: Date, errors: string[] }} Round */

/**
 * What every panel is made with: the API client, the store of shared data, and a way to ask for a refresh now.
 * @typedef {{ api: ReturnType<typeof import('./api.js').createApi>, store: import('./store.js').Store, refresh: () => void }} PanelContext
 */

const messageOf = (/** @type {unknown} */ error) => (error instanceof Error ? error.message : String(error));

/**
 * @param {{ every: number, stages: Panel[][], onRound: (round: Round) => void, onSignInNeeded: (reason: string) => void }} options
 */
export function createPoller({ every, stages, onRound, onSignInNeeded }) {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  let running = false;
  let again = false;

  async function refresh() {
    clearTimeout(timer);
    if (running) {
      again = true;
      return;
    }
    running = true;
    again = false;
    const round = { startedAt: new Date(), errors: /** @type {string[]} */ ([]) };
    /** @type {Attempt} */
    const attempt = async (read) => {
      try {
        return await read();
      } catch (error) {
        if (error instanceof SignInNeeded) throw error;
        round.errors.push(messageOf(error));
        return undefined;
      }
    };
    let signedOut = false;
    try {
      for (const stage of stages) {
        await Promise.all(stage.map(({ load }) => load && attempt(() => load(attempt))));
      }
      const now = Date.now();
      for (const panel of stages.flat()) {
        try {
          panel.render?.(now);
        } catch (error) {
          round.errors.push(messageOf(error));
        }
      }
      onRound(round);
    } catch (error) {
      if (!(error instanceof SignInNeeded)) throw error;
      signedOut = true;
      onSignInNeeded(error.message);
    } finally {
      running = false;
      // Signed out, the loop waits for a token; anything else (a bug in showing the round) must not stop it.
      if (!signedOut) timer = setTimeout(refresh, again ? 0 : every);
    }
  }

  /** Refresh now, or right after the refresh under way. */
  return { refresh, stop: () => clearTimeout(timer) };
}
