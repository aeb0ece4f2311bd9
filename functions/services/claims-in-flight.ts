import type { AppContext } from '#runtime/context.ts';

/**
 * What the creates of one process know of each other, per machine type: the machines they are claiming now, the
 * ones they claimed lately, and the read of the allocatable index under way. Concurrent creates of one process
 * share that read and never try a machine another of them is claiming, so a burst served by one process (the local
 * site serves every request in one) does not race itself: a lost race, a whole failed transaction, then only comes
 * from another process, and the version guard decides it as before. A Lambda container serves one request at a
 * time, so there each create reads and claims alone, as without this.
 */
interface TypeClaims {
  /** Machine id → its claim's commit, while in flight. */
  claiming: Map<string, Promise<unknown>>;
  /** Machine id → the claim count when this process's claim of it committed; a read started earlier still lists it. */
  claimed: Map<string, { at: number; committedAtMs: number }>;
  /** Claims committed so far: the clock reads are ordered by. */
  committed: number;
  read: { sinceClaims: number; page: Promise<string[]>; wanted: number } | null;
  /** Creates of the type waiting for candidates now, or about to: those waiting for claims will read next. */
  asking: number;
}

/** Candidates of one read (machine ids), as this process's claims leave them. */
export interface Candidates {
  /** Every machine the read found (free ones and those of this process's claims alike). */
  page: string[];
  /**
   * The read came back short of what it asked for, so it went through every rack of the pool: the page is all the
   * pool held free when read, and once this process has taken each of its machines, none is left.
   */
  complete: boolean;
  /** Those no create of this process is claiming or has claimed since the read began. */
  open(ids: string[]): string[];
  /** Whether a create of this process has claimed (committed) each of them since the read began. */
  allClaimed(ids: string[]): boolean;
  /**
   * Waits for the claims in flight on machines of the page: once they settle, a new read shows what they left. The
   * create counts as asking from now on, so that a read another create starts meanwhile asks for it too (a burst
   * whose creates all wait is then served by one read, not one a machine at a time); `done` ends that.
   */
  waitForClaims(ids: string[]): { settled: Promise<unknown>; done: () => void };
}

/** How long a committed claim is remembered: far longer than any read, so every read started before it sees it. */
const CLAIMED_KEPT_MS = 10_000;
/** The most machines one shared read asks for. */
const MAX_SHARED_PAGE = 200;

// By the site's config: one per container (the store is wrapped anew for every request).
const byConfig = new WeakMap<AppContext['config'], Map<string, TypeClaims>>();

/** The claims of one pool: a type's shared machines, or those an org's reservations hold (`reservedFor`). */
function claimsOf(ctx: AppContext, machineType: string, reservedFor: string | undefined): TypeClaims {
  let types = byConfig.get(ctx.config);
  if (!types) byConfig.set(ctx.config, (types = new Map()));
  const pool = JSON.stringify([machineType, reservedFor ?? null]);
  let claims = types.get(pool);
  if (!claims) types.set(pool, (claims = { claiming: new Map(), claimed: new Map(), committed: 0, read: null, asking: 0 }));
  return claims;
}

/**
 * A page of the type's allocatable index (its shared pool, or with `reservedFor` the machines that org's reservations
 * hold): the read already under way in this process if there is one, else a new one from `fromRack` on, long enough
 * to reach past the machines this process is claiming and to offer every create asking a machine. `waited`: the
 * `done` of the create's wait for claims, which counted it as asking until now.
 */
export async function readCandidates(
  ctx: AppContext,
  machineType: string,
  pageSize: number,
  fromRack?: string,
  reservedFor?: string,
  waited?: () => void,
): Promise<Candidates> {
  const claims = claimsOf(ctx, machineType, reservedFor);
  claims.asking++;
  waited?.();
  try {
    if (!claims.read) {
      const limit = Math.min(pageSize + claims.claiming.size + claims.asking - 1, MAX_SHARED_PAGE);
      // Enough from the rack on: a machine for each create asking, besides those being claimed (still in the index).
      const from = fromRack === undefined ? undefined : { rack: fromRack, enough: claims.claiming.size + claims.asking };
      const wanted = from === undefined ? limit : Math.min(from.enough, limit);
      const read = { sinceClaims: claims.committed, page: ctx.store.allocatableMachineIds(machineType, limit, from, reservedFor), wanted };
      claims.read = read;
      const done = () => claims.read === read && (claims.read = null);
      read.page.then(done, done);
    }
    const { sinceClaims, page, wanted } = claims.read;
    const ids = await page;
    forgetOldClaims(claims);
    const claimedHere = (id: string) => (claims.claimed.get(id)?.at ?? -1) >= sinceClaims;
    const takenHere = (id: string) => claims.claiming.has(id) || claimedHere(id);
    return {
      page: ids,
      complete: ids.length < wanted,
      open: (subset) => subset.filter((id) => !takenHere(id)),
      allClaimed: (subset) => subset.every(claimedHere),
      waitForClaims: (subset) => {
        claims.asking++;
        let counted = true;
        const done = () => {
          if (counted) claims.asking--;
          counted = false;
        };
        return { settled: Promise.allSettled(subset.flatMap((id) => claims.claiming.get(id) ?? [])), done };
      },
    };
  } finally {
    claims.asking--;
  }
}

/**
 * Try to claim a machine (`attempt` reads it and commits; `won` tells from its outcome whether the claim committed),
 * known to this process's other creates from the moment it is picked, its read included.
 */
export async function claimMachine<T>(
  ctx: AppContext,
  machineType: string,
  machineId: string,
  attempt: () => Promise<T>,
  won: (outcome: T) => boolean,
  reservedFor?: string,
): Promise<T> {
  const claims = claimsOf(ctx, machineType, reservedFor);
  const claim = attempt();
  claims.claiming.set(machineId, claim);
  try {
    const outcome = await claim;
    if (won(outcome)) claims.claimed.set(machineId, { at: claims.committed++, committedAtMs: Date.now() });
    return outcome;
  } finally {
    claims.claiming.delete(machineId);
  }
}

function forgetOldClaims(claims: TypeClaims): void {
  const before = Date.now() - CLAIMED_KEPT_MS;
  for (const [id, { committedAtMs }] of claims.claimed) if (committedAtMs < before) claims.claimed.delete(id);
}
