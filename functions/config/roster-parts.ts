/**
 * Part counts a heartbeat's roster may be split into (domain/machines/heartbeat.ts RosterPart): those that divide the
 * roster's 64 buckets evenly. On its own, as the agent's contract and the site config name them too.
 */
export const ROSTER_PART_COUNTS = [1, 2, 4, 8, 16, 32, 64] as const;
