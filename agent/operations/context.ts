import type { AgentConfig, MachineConfig } from '../config/schema.ts';
import type { ControllerClient } from '../controller/controller-client.ts';
import type { BmcDriver } from '../drivers/driver.ts';
import type { NewEntry } from '../journal/entries.ts';
import type { Ledger } from '../journal/ledger.ts';
import type { MachineQueue } from './machine-queue.ts';

/** What every operation works with: the config, the BMCs, what the agent holds, and the one way to change it. */
export interface AgentContext {
  config: AgentConfig;
  machines: ReadonlyMap<string, MachineConfig>;
  drivers: ReadonlyMap<string, BmcDriver>;
  ledger: Ledger;
  /** Journals the entry (on disk before it returns), then applies it to the ledger. */
  record(entry: NewEntry): void;
  controller: ControllerClient;
  queue: MachineQueue;
  log: (line: string) => void;
}
