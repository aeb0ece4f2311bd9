import { isDeepStrictEqual } from 'node:util';
import { REPLACING_PROPERTIES, type ReleaseRecord, type TableRecord } from './release-record.ts';

/**
 * What CloudFormation refuses, or does destructively, when a stack moves from one release's template to the next.
 * Each rule is named so that a refused synth says which one, and docs/deploy.md ("Upgrading a site") explains it.
 */
export const UPGRADE_RULES = {
  'one-index-change-per-update':
    'DynamoDB creates or deletes one global secondary index per table update, and CloudFormation inherits that rule; ' +
    'a changed key or projection is a delete and a create',
  'key-schema': "a table's key schema cannot change: CloudFormation replaces the table",
  'local-index': 'local secondary indexes cannot change after a table is created: CloudFormation replaces the table',
  'stream-view-type': "a stream's view type cannot change in one update, and the site's reactions read both images",
  'retained-replacement': 'a property whose change replaces the resource changed on a resource that holds data and is retained',
  'retained-removed': 'a retained table left the template (removed or renamed): CloudFormation would orphan it, with its data, and create another',
  'retained-unchecked': 'a retained resource of a type whose replacing properties are not known (release-record.ts REPLACING_PROPERTIES)',
} as const;

export type UpgradeRule = keyof typeof UPGRADE_RULES;

export interface UpgradeViolation {
  rule: UpgradeRule;
  resource: string;
  detail: string;
}

export interface IndexChanges {
  create: string[];
  delete: string[];
}

/** The index creates and deletes that take one table from `from` to `to`: a changed index is both. */
export function indexChanges(from: TableRecord, to: TableRecord): IndexChanges {
  const changes: IndexChanges = { create: [], delete: [] };
  for (const [name, index] of Object.entries(from.globalSecondaryIndexes)) {
    const next = to.globalSecondaryIndexes[name];
    if (!next || !isDeepStrictEqual(next, index)) changes.delete.push(name);
  }
  for (const [name, index] of Object.entries(to.globalSecondaryIndexes)) {
    const before = from.globalSecondaryIndexes[name];
    if (!before || !isDeepStrictEqual(before, index)) changes.create.push(name);
  }
  return changes;
}

function tableViolations(logicalId: string, from: TableRecord, to: TableRecord): UpgradeViolation[] {
  const violations: UpgradeViolation[] = [];
  const changes = indexChanges(from, to);
  if (changes.create.length + changes.delete.length > 1) {
    const steps = [...changes.delete.map((name) => `delete ${name}`), ...changes.create.map((name) => `create ${name}`)];
    violations.push({ rule: 'one-index-change-per-update', resource: logicalId, detail: `${steps.length} index changes in one update: ${steps.join(', ')}` });
  }
  if (!isDeepStrictEqual(from.keySchema, to.keySchema)) {
    violations.push({ rule: 'key-schema', resource: logicalId, detail: `${JSON.stringify(from.keySchema)} → ${JSON.stringify(to.keySchema)}` });
  }
  if (!isDeepStrictEqual(from.localSecondaryIndexes, to.localSecondaryIndexes)) {
    violations.push({ rule: 'local-index', resource: logicalId, detail: 'the local secondary indexes differ' });
  }
  if (from.streamViewType !== null && from.streamViewType !== to.streamViewType) {
    violations.push({ rule: 'stream-view-type', resource: logicalId, detail: `${from.streamViewType} → ${to.streamViewType ?? 'no stream'}` });
  }
  return violations;
}

/** Every rule the move from release `from` to the template recorded as `to` breaks; empty when it deploys in one update. */
export function upgradeViolations(from: ReleaseRecord, to: ReleaseRecord): UpgradeViolation[] {
  const violations: UpgradeViolation[] = [];
  for (const [logicalId, table] of Object.entries(from.tables)) {
    const next = to.tables[logicalId];
    if (next) violations.push(...tableViolations(logicalId, table, next));
  }
  for (const [logicalId, resource] of Object.entries(from.retained)) {
    const next = to.retained[logicalId];
    // A retained log group or bucket goes with a part of the stack a site may turn off (its dashboard): it is kept,
    // and the site runs without it. A table that goes takes the site's data with it.
    if (!next && resource.type !== 'AWS::DynamoDB::Table') continue;
    if (!next || next.type !== resource.type) {
      violations.push({ rule: 'retained-removed', resource: logicalId, detail: `${resource.type} is not in release ${to.release}'s template` });
      continue;
    }
    for (const name of REPLACING_PROPERTIES[resource.type] ?? []) {
      if (!isDeepStrictEqual(resource.replacing[name], next.replacing[name])) {
        violations.push({
          rule: 'retained-replacement',
          resource: logicalId,
          detail: `${name}: ${JSON.stringify(resource.replacing[name])} → ${JSON.stringify(next.replacing[name])}`,
        });
      }
    }
  }
  for (const [logicalId, resource] of Object.entries(to.retained)) {
    if (!REPLACING_PROPERTIES[resource.type]) violations.push({ rule: 'retained-unchecked', resource: logicalId, detail: resource.type });
  }
  return violations;
}

export const describeViolation = (v: UpgradeViolation): string => `${v.rule}: ${v.resource}: ${v.detail} (${UPGRADE_RULES[v.rule]})`;
