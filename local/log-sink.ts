// Where the local site's log goes. The controller logs as it does in Lambda, Powertools JSON lines; the runner's own
// parts (DynamoDB Local, the stream poller, the schedule timer, the simulated agent) log plain messages. A sink gets
// both by kind and decides how they are shown: as they are (tests and the bench read them), as JSON for a pipe or a
// log collector, or short and readable on a terminal.

export type RunnerPart = 'dynamodb' | 'stream' | 'schedule' | 'simulator' | 'agent' | 'runner';

export interface LogSink {
  /** One line of the controller's: a Powertools JSON object, as Lambda would print it. */
  controller(json: string): void;
  /** One message of a part of the runner. */
  part(part: RunnerPart, message: string): void;
}

export type LogFormat = 'json' | 'pretty';
export const LOG_FORMATS: readonly LogFormat[] = ['json', 'pretty'];

/** Every line as text: the controller's JSON as it is, a part's message after the part's name. */
export function textLines(write: (line: string) => void): LogSink {
  return {
    controller: write,
    part: (part, message) => write(`${part.padEnd(10)} ${message}`),
  };
}

/** JSON, one object a line: the controller's as they are, a part's message with its part, as the controller's look. */
export function jsonLines(write: (line: string) => void, now: () => Date = () => new Date()): LogSink {
  return {
    controller: write,
    part: (part, message) => write(JSON.stringify({ level: 'INFO', message, timestamp: now().toISOString(), service: 'fleetward-local', part })),
  };
}

export interface PrettyOptions {
  /** Colour the level (a terminal that shows colour, and NO_COLOR unset). */
  colour: boolean;
  now?: () => Date;
}

/**
 * One short line each: the local time, the level, the message, then the fields that say what happened. What every
 * line of the controller carries (its service, sampling rate, X-Ray trace) is left out; the request id stays, whole,
 * so that grepping for it still finds the request's whole story.
 */
export function prettyLines(write: (line: string) => void, { colour, now = () => new Date() }: PrettyOptions): LogSink {
  const line = (at: Date, level: string, text: string) => write(`${clock(at)} ${paint(level, colour)} ${text}`);
  return {
    controller(json) {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(json) as Record<string, unknown>;
      } catch {
        return line(now(), 'INFO', json);
      }
      const { level, message, timestamp, ...fields } = entry;
      const at = typeof timestamp === 'string' ? new Date(timestamp) : now();
      const shown = Object.entries(fields).filter(([key]) => !LEFT_OUT.has(key) && !key.startsWith('function_'));
      const text = [String(message ?? ''), ...shown.map(([key, value]) => `${key}=${fieldText(value)}`)].join(' ');
      line(Number.isNaN(at.getTime()) ? now() : at, typeof level === 'string' ? level : 'INFO', text);
    },
    part: (part, message) => line(now(), 'INFO', `${part.padEnd(9)} ${message}`),
  };
}

/** The same on every line, or Lambda's and X-Ray's (absent locally). */
const LEFT_OUT = new Set(['service', 'sampling_rate', 'xray_trace_id', 'cold_start']);

/** HH:MM:SS.mmm, local time. */
function clock(at: Date): string {
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(at.getHours())}:${two(at.getMinutes())}:${two(at.getSeconds())}.${String(at.getMilliseconds()).padStart(3, '0')}`;
}

const LEVEL_COLOURS: Record<string, string> = { DEBUG: '2', WARN: '33', ERROR: '31', CRITICAL: '31', SILENT: '2' };

function paint(level: string, colour: boolean): string {
  const name = level.toUpperCase().padEnd(5);
  const code = LEVEL_COLOURS[level.toUpperCase()];
  return colour && code ? `\u001b[${code}m${name}\u001b[0m` : name;
}

/** A value as one token: a string bare unless it has a space or a quote, anything else as JSON; an error as its name and message. */
function fieldText(value: unknown): string {
  if (isErrorLike(value)) return JSON.stringify(`${value.name}: ${value.message}`);
  if (typeof value !== 'string') return JSON.stringify(value);
  return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
}

function isErrorLike(value: unknown): value is { name: string; message: string } {
  const error = value as { name?: unknown; message?: unknown } | null;
  return typeof error === 'object' && error !== null && typeof error.name === 'string' && typeof error.message === 'string';
}

/** `--log-format` when given; otherwise pretty on a terminal and JSON for a pipe or a file. */
export function logFormatFor(asked: LogFormat | undefined, isTTY: boolean): LogFormat {
  return asked ?? (isTTY ? 'pretty' : 'json');
}
