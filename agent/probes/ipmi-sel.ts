// Parsers of what `ipmitool sel elist` and `ipmitool sdr elist` print (ipmitool(1): pipe-separated columns), into
// findings. Which events count as critical is read from the words ipmitool prints for the event (IPMI's own names).

import type { Finding } from './findings.ts';

// Order matters: "Upper Non-critical" contains "critical" (and "Uncorrectable ECC" is no correctable one).
const WARNING_EVENT = /non-critical|\bCorrectable ECC|Predictive Failure|Redundancy Degraded/i;
const CRITICAL_EVENT =
  /Uncorrectable|critical|Non-recoverable|Bus Fatal|Machine Check|IERR|Thermal Trip|Failure detected|AC lost|Fatal|Configuration Error|Redundancy Lost/i;

/**
 * `sel elist`: `   1 | 03/05/2024 | 10:11:12 | Memory #0x01 | Uncorrectable ECC | Asserted` (a BMC without a clock
 * prints `Pre-Init | 0000000392` for the date and time). An event later deasserted for the same sensor is over.
 */
export function parseSelElist(text: string): Finding[] {
  const open = new Map<string, Finding>();
  for (const line of text.split('\n')) {
    const columns = line.split('|').map((c) => c.trim());
    if (columns.length < 5 || !/^[0-9a-f]+$/i.test(columns[0] ?? '')) continue;
    const hasDirection = /^(Asserted|Deasserted)$/i.test(columns.at(-1) ?? '');
    const direction = hasDirection ? columns.at(-1)!.toLowerCase() : 'asserted';
    const event = columns.at(hasDirection ? -2 : -1)!;
    const sensor = columns.at(hasDirection ? -3 : -2)!;
    const key = `${sensor}|${event}`;
    if (direction === 'deasserted') {
      open.delete(key);
      continue;
    }
    const kind = WARNING_EVENT.test(event) ? 'sel-warning' : CRITICAL_EVENT.test(event) ? 'sel-critical' : undefined;
    if (!kind) continue;
    open.set(key, { kind, subject: `${sensor} ${event}`, message: `SEL record ${columns[0]}: ${sensor}: ${event}` });
  }
  return [...open.values()];
}

const CRITICAL_STATUS = new Set(['cr', 'nr', 'lcr', 'ucr', 'lnr', 'unr']);
const WARNING_STATUS = new Set(['nc', 'lnc', 'unc']);

/** `sdr elist`: `CPU Temp | 30h | cr | 3.1 | 98 degrees C` (name, sensor number, status, entity, reading). */
export function parseSdrElist(text: string): Finding[] {
  const findings: Finding[] = [];
  for (const line of text.split('\n')) {
    const columns = line.split('|').map((c) => c.trim());
    if (columns.length < 5) continue;
    const [name, , status, , reading] = columns as [string, string, string, string, string];
    const kind = CRITICAL_STATUS.has(status) ? 'sensor-critical' : WARNING_STATUS.has(status) ? 'sensor-warning' : undefined;
    if (kind) findings.push({ kind, subject: name, message: `sensor ${name} is ${status} (${reading})` });
  }
  return findings;
}
