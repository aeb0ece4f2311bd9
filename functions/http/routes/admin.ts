import * as z from 'zod';
import { siteConfigSchema, type SiteConfig } from '#config/site-config.ts';
import { historyListResponse, machineListResponse, machineResponse, registrationResponse, tenantResponse } from '#domain/core/responses.ts';
import { emptyQuery, listMachinesQuery, listQuery, params, registerMachinesBody, tenantBody } from '#domain/core/schemas.ts';
import { listMachines, machineHistory, registerMachines, showMachine } from '#services/machines.ts';
import { configInForce } from '#services/site-config.ts';
import { setTenant, showTenant } from '#services/tenants.ts';
import { defineRoute, listResult, REGISTRATION_MAX_BODY_BYTES, type Route } from '#http/route.ts';
import { version } from '#http/version.ts';
import { listMigrations, releaseInForce, startMigrations } from '#services/migrations.ts';

const migrationResponse = z
  .object({
    id: z.int().meta({ description: 'The data version the table holds once it is done' }),
    name: z.string(),
    state: z.enum(['pending', 'running', 'done', 'failed']),
    itemsDone: z.int().meta({ description: 'Items walked so far (a site migration: items copied)' }),
    itemsTotal: z.int().optional().meta({ description: "The table's item count when the walk began (DynamoDB's estimate)" }),
    itemsMigrated: z.int().optional().meta({ description: 'Items it rewrote; the rest were already as they must be' }),
    startedAt: z.string().optional(),
    finishedAt: z.string().optional(),
    estimatedDoneAt: z.string().optional().meta({ description: 'While running: when it will be done at its pace so far' }),
    error: z.string().optional(),
  })
  .meta({ id: 'Migration' });

/**
 * The site config as the OpenAPI document shows it: its schema is zod/mini (config/zod-messages.ts), which the
 * OpenAPI generator cannot read, so the document gets the JSON Schema zod makes of it, in the dialect of OpenAPI 3.1
 * (JSON Schema 2020-12, where `exclusiveMinimum` is a number) without a `$schema` of its own: the document's applies.
 * The answer is the parsed config as is. Lazy: making the JSON Schema costs about 10 ms, which no cold start should pay.
 */
const siteConfigDocumented = z.lazy(() => {
  const { $schema: _dialect, ...jsonSchema } = z.toJSONSchema(siteConfigSchema, { io: 'output', target: 'draft-2020-12' });
  return z.custom<SiteConfig>((value) => typeof value === 'object' && value !== null).meta(jsonSchema);
});

export const adminRoutes: Route[] = [
  defineRoute({
    operationId: 'register-machines',
    method: 'POST',
    path: '/admin/machines',
    roles: ['provider-admin'],
    summary: 'Register machines or update their type, rack and labels',
    query: emptyQuery,
    body: registerMachinesBody,
    bodyRequired: true,
    // A thousand machines with every label: written in batches of single items, never one transaction.
    maxBodyBytes: REGISTRATION_MAX_BODY_BYTES,
    responses: { 200: registrationResponse },
    handle: async ({ requester, body }, ctx) => ({ status: 200, body: await registerMachines(ctx, body.machines, requester) }),
  }),
  defineRoute({
    operationId: 'list-machines',
    method: 'GET',
    path: '/admin/machines',
    roles: ['provider-admin'],
    summary: 'The fleet, filtered by state, type, health override or allocatability',
    query: listMachinesQuery,
    responses: { 200: machineListResponse },
    handle: async ({ query }, ctx) => {
      const { limit, nextToken, ...filter } = query;
      const page = await listMachines(ctx, { limit, nextToken }, filter);
      return listResult(page.items, page.nextToken);
    },
  }),
  defineRoute({
    operationId: 'show-machine',
    method: 'GET',
    path: '/admin/machines/{id}',
    roles: ['provider-admin'],
    summary: 'One machine ("machine show")',
    params: params.machine,
    query: emptyQuery,
    responses: { 200: machineResponse },
    handle: async ({ params: p }, ctx) => ({ status: 200, body: await showMachine(ctx, p.id) }),
  }),
  defineRoute({
    operationId: 'machine-history',
    method: 'GET',
    path: '/admin/machines/{id}/history',
    roles: ['provider-admin'],
    summary: "The machine's history, newest first",
    params: params.machine,
    query: listQuery,
    responses: { 200: historyListResponse },
    handle: async ({ params: p, query }, ctx) => {
      const page = await machineHistory(ctx, p.id, query);
      return listResult(page.items, page.nextToken);
    },
  }),
  defineRoute({
    operationId: 'set-tenant-capabilities',
    method: 'PUT',
    path: '/admin/tenants/{org}',
    roles: ['provider-admin'],
    summary: "Set a tenant org's capabilities, its quotas per machine type, or both (audited)",
    params: params.tenantOrg,
    query: emptyQuery,
    body: tenantBody,
    bodyRequired: true,
    responses: { 200: tenantResponse },
    handle: async ({ requester, params: p, body }, ctx) => ({ status: 200, body: await setTenant(ctx, p.org, body, requester) }),
  }),
  defineRoute({
    operationId: 'show-tenant',
    method: 'GET',
    path: '/admin/tenants/{org}',
    roles: ['provider-admin'],
    summary: "A tenant org's capabilities and quotas, and what its instances hold of each machine type now",
    params: params.tenantOrg,
    query: emptyQuery,
    responses: { 200: tenantResponse },
    handle: async ({ params: p }, ctx) => ({ status: 200, body: await showTenant(ctx, p.org) }),
  }),
  defineRoute({
    operationId: 'show-config',
    method: 'GET',
    path: '/admin/config',
    roles: ['provider-admin'],
    summary: 'The site config in force and the running version',
    query: emptyQuery,
    responses: {
      200: z.object({
        version: z.string(),
        release: z.string().meta({ description: 'The release this code is (releases/<version>.json)' }),
        dataVersion: z.int().meta({ description: 'The data version the table holds: the last migration done' }),
        latestDataVersion: z.int().meta({ description: 'The data version this release brings the table to' }),
        migrations: z.object({ pending: z.int(), running: z.int() }),
        pinned: z
          .boolean()
          .meta({ description: 'Records are written in the layout of the release before: its deploy is not declared done (POST /admin/migrations/start)' }),
        config: siteConfigDocumented,
        typesWithoutGpuCount: z.array(z.string()).meta({ description: 'Machine types of the site that [catalog] gpus_per_machine does not name: 0 GPUs each' }),
      }),
    },
    handle: async (_request, ctx) => ({ status: 200, body: { version, release: version, ...(await releaseInForce(ctx)), ...(await configInForce(ctx)) } }),
  }),
  defineRoute({
    operationId: 'list-migrations',
    method: 'GET',
    path: '/admin/migrations',
    roles: ['provider-admin'],
    summary: 'The data migrations of this release and where each stands: they run in the background, the site serving throughout',
    query: emptyQuery,
    responses: { 200: z.object({ items: z.array(migrationResponse) }) },
    handle: async (_request, ctx) => ({ status: 200, body: { items: await listMigrations(ctx) } }),
  }),
  defineRoute({
    operationId: 'start-migrations',
    method: 'POST',
    path: '/admin/migrations/start',
    roles: ['provider-admin'],
    summary:
      'Declare the deploy of this release done: records are written in its layout from now on, and its migrations ' +
      'start with the next sweep. Idempotent; after it the release before is no longer served',
    query: emptyQuery,
    responses: { 200: z.object({ items: z.array(migrationResponse) }) },
    handle: async (_request, ctx) => ({ status: 200, body: { items: await startMigrations(ctx) } }),
  }),
];
