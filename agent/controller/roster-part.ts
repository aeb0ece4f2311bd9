import { createHash } from 'node:crypto';

// docs/api.md "A roster larger than one beat", as the contract states it: a machine's bucket is the first 4 bytes of
// the SHA-256 of its id, big-endian, modulo 64; part `index` of `count` lists the machines whose bucket modulo
// `count` is `index`. Written from the contract, not imported from the controller's domain: the agent shares only
// the contract.
const ROSTER_BUCKETS = 64;

export function rosterBucket(machineId: string): number {
  return createHash('sha256').update(machineId).digest().readUInt32BE(0) % ROSTER_BUCKETS;
}

export const inRosterPart = (machineId: string, part: { index: number; count: number }): boolean => rosterBucket(machineId) % part.count === part.index;
