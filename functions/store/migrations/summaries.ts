// What each data migration of registry.ts does, for `npm run upgrade-plan` and the changelog's readers: kept apart so
// that the deployed functions, which show migrations by name, do not carry the prose.

export const migrationSummaries: Record<number, string> = {
  1: "copies the site's catalog, heartbeat, roster digests and safety state from pk SITE to a key each",
  2:
    "re-derives every record's index attributes (machines by rack, the pool by type and rack, due shards, listing shards), " +
    "counts live instances in their org's quota usage and gives each meta-instance its memberIds",
  3:
    "moves whatever 0.1.0 wrote during the deploy, removes finished members' memberOf and 0.1.0's site and summary items; " +
    "then no listing reads 0.1.0's partitions",
  4: "deals every quota that usage shard 0 holds whole over the org's usage shards, so that the org's concurrent creates " + 'no longer all count in one item',
};
