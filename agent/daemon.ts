// The agent, assembled: its journal replayed (and compacted), the work a crash interrupted resumed, the contract's
// routes served, heartbeats sent and probes run. `stop()` ends the loops and the server; work under way is left to
// the journal, as a crash would leave it.

import type { AgentConfig } from './config/schema.ts';
import { readSigningKeys } from './config/load.ts';
import { controllerClient } from './controller/controller-client.ts';
import { heartbeatLoop } from './controller/heartbeats.ts';
import { tokenSource } from './controller/token.ts';
import { driverFor } from './drivers/drivers.ts';
import type { JournalEntry } from './journal/entries.ts';
import { openJournal } from './journal/journal.ts';
import { applyEntry, emptyLedger, liveEntries } from './journal/ledger.ts';
import type { AgentContext } from './operations/context.ts';
import { instances } from './operations/instances.ts';
import { machineQueue } from './operations/machine-queue.ts';
import { machineWork } from './operations/machine-work.ts';
import { power } from './operations/power.ts';
import { createProbeRunner } from './probes/probe-runner.ts';
import { startAgentServer } from './server/http-server.ts';

export interface RunningAgent {
  url: string;
  /** Reads the signing keys again (SIGHUP): a rotation adds the new key here before the controller signs with it. */
  reloadKeys(): void;
  stop(): Promise<void>;
}

export async function startAgent(config: AgentConfig, log: (line: string) => void): Promise<RunningAgent> {
  let keys = readSigningKeys(config);
  const machines = new Map(config.machines.map((m) => [m.id, m]));
  const drivers = new Map(config.machines.map((m) => [m.id, driverFor(m.bmc)]));
  const journal = openJournal(config.agent.journal);
  const ledger = emptyLedger();
  for (const entry of journal.replayed) applyEntry(ledger, entry);
  // What is over (reported, done) need not be read again at the next start.
  journal.compact(liveEntries(ledger));

  const stopping = new AbortController();
  const token = tokenSource(config.controller.token, config.controller.url);
  const retryDelays = config.agent.report_retry_seconds.map((s) => s * 1000);
  const ctx: AgentContext = {
    config,
    machines,
    drivers,
    ledger,
    record(entry) {
      const stamped = { ...entry, at: new Date().toISOString() } as JournalEntry;
      journal.append(stamped);
      applyEntry(ledger, stamped);
    },
    controller: controllerClient(config.controller.url, token, retryDelays, log, stopping.signal),
    queue: machineQueue(),
    log,
  };
  const routes = { instances: instances(ctx), power: power(ctx), work: machineWork(ctx) };
  resumeInterrupted(ctx, routes);

  const server = await startAgentServer({ host: config.agent.listen_host, port: config.agent.listen_port, keys: () => keys, routes, log });
  const probes = createProbeRunner(config.machines, drivers, log);
  probes.start(config.agent.probe_interval_seconds * 1000);
  const beats = heartbeatLoop({
    roster: () =>
      config.machines.map((m) => {
        const alerts = probes.alertsOf(m.id);
        return alerts ? { id: m.id, alerts } : { id: m.id };
      }),
    parts: config.agent.heartbeat_parts,
    intervalMs: config.agent.heartbeat_interval_seconds * 1000,
    client: ctx.controller,
    log,
  });
  beats.start();
  log(`listening on ${server.url} for ${config.machines.length} machines; journal ${config.agent.journal}`);

  return {
    url: server.url,
    reloadKeys() {
      try {
        keys = readSigningKeys(config);
        log(`signing keys read again: ${keys.map((k) => k.id).join(', ')}`);
      } catch (error) {
        log(`signing keys kept as they were: ${(error as Error).message}`);
      }
    },
    async stop() {
      stopping.abort();
      await beats.stop();
      await probes.stop();
      await server.close();
      journal.close();
    },
  };
}

/** Everything the journal says was accepted and not finished is taken up again, in the order it was accepted. */
function resumeInterrupted(
  ctx: AgentContext,
  routes: { instances: ReturnType<typeof instances>; power: ReturnType<typeof power>; work: ReturnType<typeof machineWork> },
) {
  for (const record of ctx.ledger.instances.values()) {
    if (record.phase === 'provisioning') routes.instances.resumeProvisioning(record);
    if (record.phase === 'cleaning' || record.phase === 'cleaned') routes.instances.resumeCleanup(record);
  }
  for (const record of [...ctx.ledger.power.values()]) void routes.power.resume(record);
  for (const record of ctx.ledger.validations.values()) routes.work.resumeValidation(record);
  for (const record of ctx.ledger.maintenances.values()) routes.work.resumeMaintenance(record);
}
