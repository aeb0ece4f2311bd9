/**
 * Lambda's event filtering, as its documentation defines the filter rule syntax, for the local stand-in of the
 * stream's event source mapping: a record reaches the function when any filter of the mapping matches it.
 *
 * Within one pattern every field named must match (AND). A field's rule is an array, and the field matches when
 * any element of the array matches (OR). An element is a literal (string, number, boolean or null: equals), or an
 * object with one operator: `prefix`, `suffix`, `equals-ignore-case`, `exists`, `anything-but`, `numeric`. A field
 * of the record that holds an array matches when any of its elements does. A field absent from the record matches
 * only `{ "exists": false }`.
 */

export type FilterPattern = { [field: string]: FilterPattern | readonly unknown[] };

/** Thrown for a pattern Lambda would refuse, so a bad filter fails in the tests instead of at deploy. */
export class FilterPatternError extends Error {
  override name = 'FilterPatternError';
}

export function parseFilterPattern(json: string): FilterPattern {
  const pattern: unknown = JSON.parse(json);
  checkPattern(pattern, '');
  return pattern as FilterPattern;
}

/** Whether `record` passes at least one of `patterns`, as the mapping decides before invoking the function. */
export function passesAnyFilter(patterns: readonly FilterPattern[], record: unknown): boolean {
  return patterns.some((pattern) => matchesPattern(pattern, record));
}

export function matchesPattern(pattern: FilterPattern, value: unknown): boolean {
  return Object.entries(pattern).every(([field, rule]) => {
    const inner = isObject(value) ? value[field] : undefined;
    if (Array.isArray(rule)) return matchesRules(rule, inner);
    return isObject(inner) && matchesPattern(rule as FilterPattern, inner);
  });
}

function matchesRules(rules: readonly unknown[], value: unknown): boolean {
  if (value === undefined) return rules.some((rule) => isObject(rule) && rule.exists === false);
  const candidates = Array.isArray(value) ? value : [value];
  return rules.some((rule) => {
    if (isObject(rule) && 'exists' in rule) return rule.exists === true;
    return candidates.some((candidate) => matchesRule(rule, candidate));
  });
}

function matchesRule(rule: unknown, value: unknown): boolean {
  if (!isObject(rule)) return rule === value;
  const [operator, operand] = Object.entries(rule)[0]!;
  switch (operator) {
    case 'prefix':
      return typeof value === 'string' && value.startsWith(operand as string);
    case 'suffix':
      return typeof value === 'string' && value.endsWith(operand as string);
    case 'equals-ignore-case':
      return typeof value === 'string' && value.toLowerCase() === (operand as string).toLowerCase();
    case 'anything-but':
      return !anythingButExcludes(operand, value);
    case 'numeric':
      return typeof value === 'number' && numericHolds(operand as unknown[], value);
    default:
      throw new FilterPatternError(`unknown filter operator ${operator}`);
  }
}

function anythingButExcludes(operand: unknown, value: unknown): boolean {
  if (isObject(operand) && typeof operand.prefix === 'string') return typeof value === 'string' && value.startsWith(operand.prefix);
  return (Array.isArray(operand) ? operand : [operand]).includes(value);
}

const comparisons: Record<string, (a: number, b: number) => boolean> = {
  '=': (a, b) => a === b,
  '<': (a, b) => a < b,
  '<=': (a, b) => a <= b,
  '>': (a, b) => a > b,
  '>=': (a, b) => a >= b,
};

function numericHolds(terms: unknown[], value: number): boolean {
  for (let i = 0; i < terms.length; i += 2) {
    if (!comparisons[terms[i] as string]!(value, terms[i + 1] as number)) return false;
  }
  return true;
}

const operators = new Set(['prefix', 'suffix', 'equals-ignore-case', 'exists', 'anything-but', 'numeric']);

function checkPattern(pattern: unknown, path: string): void {
  if (!isObject(pattern) || Object.keys(pattern).length === 0) throw new FilterPatternError(`${path || 'pattern'}: expected a non-empty object`);
  for (const [field, rule] of Object.entries(pattern)) {
    const at = path ? `${path}.${field}` : field;
    if (!Array.isArray(rule)) {
      checkPattern(rule, at);
      continue;
    }
    if (rule.length === 0) throw new FilterPatternError(`${at}: a rule is a non-empty array`);
    for (const element of rule) {
      if (!isObject(element)) continue;
      const names = Object.keys(element);
      if (names.length !== 1 || !operators.has(names[0]!)) throw new FilterPatternError(`${at}: unknown rule ${JSON.stringify(element)}`);
      if (names[0] === 'numeric') checkNumeric(element.numeric, at);
    }
  }
}

function checkNumeric(terms: unknown, at: string): void {
  const valid = Array.isArray(terms) && terms.length % 2 === 0 && terms.every((term, i) => (i % 2 === 0 ? term in comparisons : typeof term === 'number'));
  if (!valid) throw new FilterPatternError(`${at}: numeric takes [operator, number] pairs`);
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
