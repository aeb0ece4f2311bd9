import { Logger, type LogItem } from '@aws-lambda-powertools/logger';
import type { Log } from '#runtime/context.ts';

/** A Powertools Logger that hands each JSON line to `write` instead of the process's stdout (the local runner, tests). */
class LineLogger extends Logger {
  readonly #write: (line: string) => void;

  constructor(options: ConstructorParameters<typeof Logger>[0], write: (line: string) => void) {
    super(options);
    this.#write = write;
  }

  protected override printLog(_logLevel: number, log: LogItem): void {
    log.prepareForPrint();
    this.#write(JSON.stringify(log.getAttributes(), this.getJsonReplacer()));
  }

  protected override createLogger(options?: ConstructorParameters<typeof Logger>[0]): Logger {
    return new LineLogger(options, this.#write);
  }
}

export interface LoggerOptions {
  /** `LOG_LEVEL` (debug, info, warn, error...); Powertools' own environment variables apply when absent. */
  logLevel?: string | undefined;
  /** Where the JSON lines go; the process's stdout when absent (as in Lambda). */
  write?: (line: string) => void;
}

/** Fleetward's structured JSON logs, the same in Lambda and locally. */
export function createLogger({ logLevel, write }: LoggerOptions = {}): Logger {
  const options = {
    serviceName: 'fleetward',
    ...(logLevel ? { logLevel: logLevel.toUpperCase() as 'INFO' } : {}),
  };
  return write ? new LineLogger(options, write) : new Logger(options);
}

export function powertoolsLog(logger: Logger): Log {
  return {
    info: (message, fields) => logger.info(message, fields ?? {}),
    warn: (message, fields) => logger.warn(message, fields ?? {}),
    error: (message, fields) => logger.error(message, fields ?? {}),
  };
}
