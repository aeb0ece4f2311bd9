import * as z from 'zod';
import { pageQuery } from '#domain/core/schemas.ts';
import { ProblemError, type FieldError } from '#http/problem.ts';

/** The part of the request a zod issue is about: body paths stay bare (`machineHealthIssue.category`). */
export type RequestPart = 'params' | 'query' | 'body' | 'headers';

const joinPath = (part: RequestPart, path: readonly PropertyKey[]): string => {
  const segments = path.map(String);
  return (part === 'body' ? segments : [part, ...segments]).join('.');
};

export function fieldErrors(issues: readonly z.core.$ZodIssue[], part: RequestPart): FieldError[] {
  return issues.flatMap((issue) =>
    // One entry per unknown key, so a client can point at the field it should not have sent.
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ path: joinPath(part, [...issue.path, key]), message: 'Unrecognized key' }))
      : [{ path: joinPath(part, issue.path), message: issue.message }],
  );
}

export const validationFailed = (errors: FieldError[]) => new ProblemError(422, 'validation-failed', 'The request is not valid; see `errors`', errors);

export interface RequestParts {
  params: unknown;
  query: unknown;
  body: unknown;
}

/** Parses every part before failing, so a client sees all its mistakes in one round trip. */
export function validateParts(schemas: { [K in keyof RequestParts]?: z.ZodType | undefined }, raw: RequestParts): RequestParts {
  const errors: FieldError[] = prototypeKeysIn(raw.query).map((key) => ({ path: `query.${key}`, message: 'Not a query parameter' }));
  const out: RequestParts = { ...raw };
  for (const part of ['params', 'query', 'body'] as const) {
    const schema = schemas[part];
    if (!schema) continue;
    const result = schema.safeParse(raw[part]);
    if (result.success) out[part] = result.data;
    else errors.push(...fieldErrors(result.error.issues, part).filter((e) => !errors.some((known) => known.path === e.path)));
  }
  if (errors.length > 0) throw validationFailed(errors);
  return out;
}

/** Keys that name JavaScript's object machinery are never parameters, whatever a route's schema lets through. */
const prototypeKeys = new Set(['__proto__', 'constructor', 'prototype']);

const prototypeKeysIn = (query: unknown): string[] =>
  typeof query === 'object' && query !== null ? Object.keys(query).filter((key) => prototypeKeys.has(key)) : [];

/** `?limit=`: 1..500 in decimal digits, 50 when absent (API.md "Lists"). */
export const limitSchema = pageQuery.limit;

/** `?nextToken=`: opaque to clients; the store that issued it decides what it means. */
export const nextTokenSchema = z.string().min(1).max(4096).optional();

export const listQuerySchema = z.object({ limit: limitSchema, nextToken: nextTokenSchema });
export type ListQuery = z.infer<typeof listQuerySchema>;
