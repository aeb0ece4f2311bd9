import { execFileSync } from 'node:child_process';
import { startDynamoDbLocal, type DynamoDbLocal } from '#local/dynamodb-local.ts';
import type { DynamoNeed } from './part.ts';

/**
 * The DynamoDB Locals the run starts, one per part that asks, each stopped when its part is done. Each part gets a
 * fresh one because DynamoDB Local slows down as tables and stream records from earlier parts pile up in it
 * (docs/design.md). Their ports are kept, to check at the end that no java process of ours outlived its part.
 */
export class PartDynamos {
  private running: DynamoDbLocal | undefined;
  private readonly ports: number[] = [];
  private readonly progress: (line: string) => void;

  constructor(progress: (line: string) => void) {
    this.progress = progress;
  }

  async around<T>(need: DynamoNeed, run: (local: DynamoDbLocal) => Promise<T>): Promise<T> {
    const local = await startDynamoDbLocal({ indexStreamLog: need.sitesOneAfterAnother ?? false });
    this.running = local;
    this.ports.push(local.port);
    this.progress(`DynamoDB Local for ${need.serves} on ${local.endpoint}`);
    try {
      return await run(local);
    } finally {
      await this.stop();
    }
  }

  /** Stops the one running, if any (also on a signal). */
  async stop(): Promise<void> {
    const local = this.running;
    this.running = undefined;
    await local?.stop().catch((error: unknown) => this.progress(`stopping DynamoDB Local failed: ${String(error)}`));
  }

  /** Ports of ours whose java process is still there (other runs on the host may have their own). */
  leftRunning(): number[] {
    return this.ports.filter((port) => {
      try {
        return execFileSync('pgrep', ['-f', `DynamoDBLocal.jar -port ${port} `], { encoding: 'utf8' }).trim() !== '';
      } catch {
        return false;
      }
    });
  }
}
