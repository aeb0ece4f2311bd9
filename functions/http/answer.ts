import type { Answer, Responses, Route } from '#http/route.ts';

/**
 * A handler's answer through its route's contract: a status the route declares, and a body parsed by that
 * status's schema, so only the fields the schema lists go out. Anything else is our bug: thrown, it is logged and
 * answered as a 500 without detail, and nothing unlisted ever reaches a client.
 */
export function answerThrough(route: Pick<Route, 'operationId' | 'responses'>, result: Answer): Answer {
  const responses: Responses = route.responses;
  const schema = responses[result.status];
  if (schema === undefined) throw new Error(`${route.operationId} answered ${result.status}, which its responses do not declare`);
  const headers = result.headers ? { headers: result.headers } : {};
  return schema === null ? { status: result.status, ...headers } : { status: result.status, body: schema.parse(result.body), ...headers };
}
