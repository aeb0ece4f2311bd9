import { describe, expect, it } from 'vitest';
import { jsonLines, logFormatFor, prettyLines, textLines } from '#local/log-sink.ts';

// How the local runner shows its log: short lines on a terminal, JSON for a pipe, every line as text for tests.

const request = JSON.stringify({
  level: 'INFO',
  message: 'request',
  timestamp: '2026-11-27T12:19:11.749Z',
  service: 'fleetward',
  sampling_rate: 0,
  correlation_id: '65bf2a52-c64c-4f26-9979-0c2443ee3a97',
  method: 'POST',
  path: '/site/v1/heartbeats',
  status: 200,
});
const at = new Date('2026-11-27T12:19:11.749Z');
const localClock = `${String(at.getHours()).padStart(2, '0')}:${String(at.getMinutes()).padStart(2, '0')}:11.749`;

function collect() {
  const lines: string[] = [];
  return { lines, write: (line: string) => void lines.push(line) };
}

describe('pretty lines', () => {
  it("show a controller line's time, level, message and its own fields, leaving out what every line carries", () => {
    const { lines, write } = collect();
    prettyLines(write, { colour: false }).controller(request);
    expect(lines).toEqual([`${localClock} INFO  request correlation_id=65bf2a52-c64c-4f26-9979-0c2443ee3a97 method=POST path=/site/v1/heartbeats status=200`]);
  });

  it('quote a value with spaces, show objects as JSON and an error as its name and message, on one line', () => {
    const { lines, write } = collect();
    const line = {
      level: 'WARN',
      message: 'reaction failed',
      timestamp: at.toISOString(),
      reason: 'site agent answered 503',
      ids: ['a', 'b'],
      error: { name: 'TypeError', message: 'x is undefined', stack: 'TypeError: x is undefined\n    at f (a.ts:1:1)' },
    };
    prettyLines(write, { colour: false }).controller(JSON.stringify(line));
    expect(lines).toEqual([`${localClock} WARN  reaction failed reason="site agent answered 503" ids=["a","b"] error="TypeError: x is undefined"`]);
  });

  it("colour the level when asked, and show a part's message after the part", () => {
    const { lines, write } = collect();
    const sink = prettyLines(write, { colour: true, now: () => at });
    sink.controller(JSON.stringify({ level: 'ERROR', message: 'boom', timestamp: at.toISOString() }));
    sink.part('stream', 'stream-poller: polling fleetward-local');
    expect(lines).toEqual([`${localClock} \u001b[31mERROR\u001b[0m boom`, `${localClock} INFO  stream    stream-poller: polling fleetward-local`]);
  });

  it('show a line that is not JSON as it is', () => {
    const { lines, write } = collect();
    prettyLines(write, { colour: false, now: () => at }).controller('not json');
    expect(lines).toEqual([`${localClock} INFO  not json`]);
  });
});

describe('JSON lines', () => {
  it("keep the controller's lines as they are and write a part's message as an object of the same shape", () => {
    const { lines, write } = collect();
    const sink = jsonLines(write, () => at);
    sink.controller(request);
    sink.part('dynamodb', 'DynamoDB Local on http://127.0.0.1:8000 (in memory)');
    expect(lines[0]).toBe(request);
    expect(JSON.parse(lines[1]!)).toEqual({
      level: 'INFO',
      message: 'DynamoDB Local on http://127.0.0.1:8000 (in memory)',
      timestamp: at.toISOString(),
      service: 'fleetward-local',
      part: 'dynamodb',
    });
  });
});

describe('text lines', () => {
  it("hand every line over as text: the controller's JSON, a part's message after its name", () => {
    const { lines, write } = collect();
    const sink = textLines(write);
    sink.controller(request);
    sink.part('simulator', 'site-sim: agent listening');
    expect(lines).toEqual([request, 'simulator  site-sim: agent listening']);
  });
});

describe('the format', () => {
  it('is pretty on a terminal and JSON elsewhere, unless --log-format says which', () => {
    expect(logFormatFor(undefined, true)).toBe('pretty');
    expect(logFormatFor(undefined, false)).toBe('json');
    expect(logFormatFor('json', true)).toBe('json');
    expect(logFormatFor('pretty', false)).toBe('pretty');
  });
});
