import { randomUUID } from 'node:crypto';
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import { conflict, notFound } from '#http/problem.ts';
import { defineRoute, type Route } from '#http/route.ts';
import { listQuerySchema } from '#http/validation.ts';

// A small route table of its own: this file tests the transport layer, not Fleetward's routes. Its handlers get
// the table to write to from the context the api handler is created with.
export interface ThingsContext {
  client: DynamoDBDocumentClient;
  table: string;
}

export function testRoutes() {
  const issueSchema = z.object({
    category: z
      .string()
      .transform((c) => c.toUpperCase())
      .pipe(z.enum(['HARDWARE', 'NETWORK', 'PERFORMANCE', 'OTHER'])),
    summary: z.string().min(1).max(1024),
  });
  let flakyCalls = 0;
  const gates = new Map<string, () => void>();

  const thing = z.object({ id: z.string(), org: z.string(), name: z.string(), issue: issueSchema.optional(), createdBy: z.string() });
  const routes: Route<any, any, any, any, ThingsContext>[] = [
    defineRoute({
      operationId: 'create-thing',
      method: 'POST',
      path: '/v2/org/{org}/things',
      roles: ['tenant'],
      summary: 'writes one item',
      params: z.object({ org: z.string() }),
      body: z.object({ name: z.string().min(1), labels: z.record(z.string(), z.string()).optional(), machineHealthIssue: issueSchema.optional() }).strict(),
      bodyRequired: true,
      responses: { 201: thing },
      async handle({ principal, params, body }, { client, table }) {
        const id = randomUUID();
        const item = { id, org: params.org, name: body.name, issue: body.machineHealthIssue, createdBy: principal.sub };
        await client.send(new PutCommand({ TableName: table, Item: { pk: `THING#${id}`, sk: 'THING', ...item } }));
        return { status: 201, body: item };
      },
    }),
    defineRoute({
      operationId: 'get-thing',
      method: 'GET',
      path: '/v2/org/{org}/things/{id}',
      roles: ['tenant'],
      summary: 'reads one item',
      params: z.object({ org: z.string(), id: z.uuid() }),
      // The stored item has keys, org and createdBy too: the schema decides what the answer shows.
      responses: { 200: z.object({ id: z.string(), name: z.string() }) },
      async handle({ params }, { client, table }) {
        const { Item } = await client.send(new GetCommand({ TableName: table, Key: { pk: `THING#${params.id}`, sk: 'THING' } }));
        if (!Item || Item.org !== params.org) throw notFound(`thing ${params.id}`);
        return { status: 200, body: Item as { id: string; name: string } };
      },
    }),
    defineRoute({
      operationId: 'list-things',
      method: 'GET',
      path: '/v2/org/{org}/things',
      roles: ['tenant'],
      summary: 'echoes the list query',
      query: listQuerySchema,
      responses: { 200: z.object({ items: z.array(z.unknown()), limit: z.number().int() }) },
      async handle({ query }) {
        return { status: 200, body: { items: [], limit: query.limit } };
      },
    }),
    defineRoute({
      operationId: 'delete-thing',
      method: 'DELETE',
      path: '/v2/org/{org}/things/{id}',
      roles: ['tenant'],
      summary: 'no body schema, 204',
      responses: { 204: null },
      async handle() {
        return { status: 204 };
      },
    }),
    defineRoute({
      operationId: 'flaky',
      method: 'POST',
      path: '/v2/org/{org}/flaky',
      roles: ['tenant'],
      summary: 'fails once with a problem, then succeeds',
      body: z.object({ n: z.number() }),
      responses: { 200: z.object({ calls: z.number().int() }) },
      async handle() {
        flakyCalls += 1;
        if (flakyCalls === 1) throw conflict('not-yet', 'try again');
        return { status: 200, body: { calls: flakyCalls } };
      },
    }),
    defineRoute({
      operationId: 'slow',
      method: 'POST',
      path: '/v2/org/{org}/slow',
      roles: ['tenant'],
      summary: 'waits until the test lets it finish',
      body: z.object({ gate: z.string() }),
      responses: { 201: z.object({ done: z.string() }) },
      async handle({ body }) {
        await new Promise<void>((resolve) => gates.set(body.gate, resolve));
        return { status: 201, body: { done: body.gate } };
      },
    }),
    defineRoute({
      operationId: 'put-tenant',
      method: 'PUT',
      path: '/admin/tenants/{org}',
      roles: ['provider-admin'],
      summary: 'an admin route naming another org',
      params: z.object({ org: z.string() }),
      body: z.object({ enabled: z.boolean() }),
      responses: { 200: z.object({ org: z.string(), enabled: z.boolean() }) },
      async handle({ params, body }) {
        return { status: 200, body: { org: params.org, ...body } };
      },
    }),
    defineRoute({
      operationId: 'boom',
      method: 'POST',
      path: '/admin/boom',
      roles: ['provider-admin'],
      summary: 'a bug',
      responses: { 204: null },
      async handle() {
        throw new Error('secret internals at /var/task/index.js:1');
      },
    }),
    defineRoute({
      operationId: 'ping',
      method: 'GET',
      path: '/public/ping',
      roles: 'public',
      summary: 'no token needed',
      responses: { 200: z.object({ sub: z.string() }) },
      async handle({ principal }) {
        return { status: 200, body: { sub: principal.sub } };
      },
    }),
    defineRoute({
      operationId: 'off-contract',
      method: 'GET',
      path: '/admin/off-contract',
      roles: ['provider-admin'],
      summary: 'a bug of another kind: an answer its responses do not allow',
      query: z.object({ answer: z.enum(['undeclared-status', 'wrong-body']) }),
      responses: { 200: z.object({ count: z.number().int() }) },
      async handle({ query }) {
        const answer = query.answer === 'undeclared-status' ? { status: 299, body: { count: 1 } } : { status: 200, body: { count: 'three' } };
        return answer as never;
      },
    }),
  ];
  return { routes, openGate: (gate: string) => gates.get(gate)?.(), hasGate: (gate: string) => gates.has(gate) };
}
