// What `nvidia-smi -q -x` says about a machine's GPUs (NVIDIA's nvsmi_device DTD), as findings: GPUs missing or lost
// off the bus, uncorrectable ECC errors since the driver loaded, pages waiting to retire, rows that failed to remap.

import type { Finding } from './findings.ts';
import { childAt, parseXml, textAt, type XmlElement } from './xml.ts';

export interface CommandText {
  code: number | null;
  stdout: string;
  stderr: string;
}

const count = (value: string | undefined) => (value !== undefined && /^\d+$/.test(value) ? Number(value) : 0);
const yes = (value: string | undefined) => value?.trim().toLowerCase() === 'yes';

/** `expectedGpus`: how many the machine's type has (the config's `gpus`); absent: not checked. */
export function nvidiaSmiFindings(result: CommandText, expectedGpus?: number): Finding[] {
  const said = `${result.stdout}\n${result.stderr}`;
  const findings: Finding[] = lostGpus(said);
  if (/couldn't communicate with the NVIDIA driver|NVIDIA driver is not loaded/i.test(said)) {
    findings.push({ kind: 'gpu-driver-unreachable', subject: 'driver', message: said.trim().split('\n')[0]! });
  }
  const xmlStart = result.stdout.indexOf('<');
  if (xmlStart < 0) return findings;
  const log = childAt(parseXml(result.stdout.slice(xmlStart)), 'nvidia_smi_log');
  const gpus = log?.children.filter((c) => c.name === 'gpu') ?? [];
  for (const gpu of gpus) findings.push(...gpuFindings(gpu));
  if (expectedGpus !== undefined && gpus.length < expectedGpus) {
    findings.push({ kind: 'gpu-missing', subject: 'count', message: `nvidia-smi sees ${gpus.length} GPUs; the machine's type has ${expectedGpus}` });
  }
  return findings;
}

/** nvidia-smi names a GPU it cannot reach: "Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost". */
function lostGpus(said: string): Finding[] {
  const findings: Finding[] = [];
  for (const line of said.split('\n')) {
    const busId = /device handle for GPU\s*((?:[0-9A-Fa-f]+:)+[0-9A-Fa-f]+\.[0-9A-Fa-f])/.exec(line)?.[1];
    if (busId || /GPU is lost|fallen off the bus/i.test(line)) {
      findings.push({ kind: 'gpu-lost', subject: busId ?? 'unknown', message: line.trim() });
    }
  }
  return findings;
}

function gpuFindings(gpu: XmlElement): Finding[] {
  const busId = gpu.attributes.id ?? textAt(gpu, 'pci', 'pci_bus_id') ?? 'unknown';
  const name = `GPU ${busId}`;
  const findings: Finding[] = [];
  const volatile = childAt(gpu, 'ecc_errors', 'volatile');
  // Newer drivers split SRAM and DRAM; older ones count double-bit errors. Any of them means data was lost.
  const uncorrectable =
    count(textAt(volatile, 'sram_uncorrectable')) +
    count(textAt(volatile, 'sram_uncorrectable_parity')) +
    count(textAt(volatile, 'sram_uncorrectable_secded')) +
    count(textAt(volatile, 'dram_uncorrectable')) +
    count(textAt(volatile, 'double_bit', 'total'));
  if (uncorrectable > 0)
    findings.push({ kind: 'ecc-uncorrectable', subject: busId, message: `${name}: ${uncorrectable} uncorrectable ECC errors since the driver loaded` });
  const retired = childAt(gpu, 'retired_pages');
  if (yes(textAt(retired, 'pending_retirement')) || yes(textAt(retired, 'pending_blacklist'))) {
    findings.push({ kind: 'retired-pages-pending', subject: busId, message: `${name}: pages are waiting to be retired (a GPU reset retires them)` });
  }
  const retiredCount =
    count(textAt(retired, 'double_bit_retirement', 'retired_count')) + count(textAt(retired, 'multiple_single_bit_retirement', 'retired_count'));
  if (retiredCount > 0) findings.push({ kind: 'retired-pages', subject: busId, message: `${name}: ${retiredCount} pages retired` });
  const remapped = childAt(gpu, 'remapped_rows');
  if (yes(textAt(remapped, 'remapped_row_failure'))) findings.push({ kind: 'row-remap-failure', subject: busId, message: `${name}: a row remapping failed` });
  if (yes(textAt(remapped, 'remapped_row_pending'))) {
    findings.push({ kind: 'row-remap-pending', subject: busId, message: `${name}: a row remapping is pending (a GPU reset applies it)` });
  }
  return findings;
}
