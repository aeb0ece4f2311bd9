/**
 * A cap on the write units a migration spends a second, so the live site keeps its throughput: a token bucket
 * holding at most one second's worth, which every migrating write draws from before it is sent.
 */
export class WriteBudget {
  private tokens: number;
  private last: number;
  private readonly perSecond: number;
  private readonly now: () => number;
  constructor(perSecond: number, now: () => number = Date.now) {
    this.perSecond = perSecond;
    this.tokens = perSecond;
    this.now = now;
    this.last = now();
  }

  /** Waits until `units` can be spent, then spends them. */
  async take(units: number): Promise<void> {
    for (;;) {
      const now = this.now();
      this.tokens = Math.min(this.perSecond, this.tokens + ((now - this.last) / 1000) * this.perSecond);
      this.last = now;
      if (this.tokens >= Math.min(units, this.perSecond)) {
        this.tokens -= units;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.ceil(((units - this.tokens) / this.perSecond) * 1000)));
    }
  }
}

/** DynamoDB's write units for an item: one per started KB, twice in a transaction. */
export const writeUnitsOf = (item: unknown, transactional: boolean): number =>
  Math.max(1, Math.ceil(Buffer.byteLength(JSON.stringify(item)) / 1024)) * (transactional ? 2 : 1);
