// A machine's BMC as the agent uses it: power, and what the BMC itself knows of the machine's health. One driver per
// protocol (ipmi.ts, redfish.ts); docs/agent.md "Adding a driver" says what a new one must do.

import type { Finding } from '../probes/findings.ts';

export type PowerState = 'on' | 'off';
export type PowerAction = 'on' | 'off' | 'cycle';

export interface BmcDriver {
  readonly kind: string;
  powerState(): Promise<PowerState>;
  /** Resolves when the BMC accepted the action; throws BmcError with the BMC's own words otherwise. */
  power(action: PowerAction): Promise<void>;
  /** The BMC's event log and sensor thresholds, as findings. */
  healthFindings(): Promise<Finding[]>;
}

/** A BMC that refused, failed or did not answer: `message` carries what it (or its tool) said. */
export class BmcError extends Error {}
