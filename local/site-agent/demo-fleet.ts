export interface SimulatedMachine {
  id: string;
  machineType: string;
  rack: string;
  nvlinkDomain?: string;
}

/**
 * The demo fleet: ids like `gb200-r1-01` (type, rack, number in the rack). Racks are numbered across all groups so
 * that a rack holds one machine type, as real GPU racks do, and ids stay unique and stable for a given config. With
 * `nvlink_domain_size`, the type's machines in order form NVLink domains of that many, numbered within the type
 * (`gb200-nvl1`, `gb200-nvl2`, ...).
 */
export function demoFleet(groups: Array<{ type: string; count: number; racks: number; nvlink_domain_size?: number | undefined }>): SimulatedMachine[] {
  const machines: SimulatedMachine[] = [];
  let rackOffset = 0;
  for (const group of groups) {
    const racks = Math.max(1, Math.min(group.racks, group.count));
    const perRack = Math.ceil(group.count / racks);
    const width = Math.max(2, String(perRack).length);
    const inRack = new Array<number>(racks).fill(0);
    for (let i = 0; i < group.count; i++) {
      // Contiguous blocks whose sizes differ by at most one.
      const rack = Math.floor((i * racks) / group.count);
      inRack[rack] = (inRack[rack] ?? 0) + 1;
      const rackNumber = rackOffset + rack + 1;
      machines.push({
        id: `${group.type}-r${rackNumber}-${String(inRack[rack]).padStart(width, '0')}`,
        machineType: group.type,
        rack: `rack-${rackNumber}`,
        ...(group.nvlink_domain_size ? { nvlinkDomain: `${group.type}-nvl${Math.floor(i / group.nvlink_domain_size) + 1}` } : {}),
      });
    }
    rackOffset += racks;
  }
  return machines;
}
