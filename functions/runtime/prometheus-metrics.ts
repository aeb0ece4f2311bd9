import type { Metrics } from '#runtime/context.ts';
import { metricCatalog, type Dimensions, type MetricName } from '#runtime/metric-catalog.ts';

// The local stand-in for CloudWatch: the same figures kept in memory and served as Prometheus text exposition
// (format 0.0.4) on the local runner's GET /metrics.

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const snake = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();

/** `CreateFailures` → `fleetward_create_failures_total`; a timing is a summary in milliseconds. */
export function prometheusName(name: MetricName): string {
  const kind = metricCatalog[name].kind;
  return `fleetward_${snake(name)}${kind === 'counter' ? '_total' : kind === 'timing' ? '_ms' : ''}`;
}

const prometheusType = { gauge: 'gauge', counter: 'counter', timing: 'summary' } as const;

const escapeLabel = (value: string) => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');

function labelsOf(dimensions: Dimensions): string {
  const pairs = Object.entries(dimensions).sort(([a], [b]) => a.localeCompare(b));
  return pairs.length === 0 ? '' : `{${pairs.map(([key, value]) => `${snake(key)}="${escapeLabel(value)}"`).join(',')}}`;
}

interface Series {
  labels: string;
  value: number;
  /** Timings: how many observations `value` sums. */
  count: number;
}

export interface PrometheusMetrics extends Metrics {
  /** Everything recorded so far, in Prometheus text exposition format. */
  render(): string;
  /** The latest site-wide gauges (those without dimensions), by name. */
  siteGauges(): Record<string, number>;
}

export function prometheusMetrics(): PrometheusMetrics {
  const series = new Map<MetricName, Map<string, Series>>();
  const seriesOf = (name: MetricName, dimensions: Dimensions = {}): Series => {
    const byLabels = series.get(name) ?? series.set(name, new Map()).get(name)!;
    const labels = labelsOf(dimensions);
    return byLabels.get(labels) ?? byLabels.set(labels, { labels, value: 0, count: 0 }).get(labels)!;
  };
  return {
    gauge(name, value, dimensions) {
      seriesOf(name, dimensions).value = value;
    },
    count(name, value, dimensions) {
      seriesOf(name, dimensions).value += value;
    },
    timing(name, ms, dimensions) {
      const one = seriesOf(name, dimensions);
      one.value += ms;
      one.count += 1;
    },
    siteGauges() {
      const site: Record<string, number> = {};
      for (const [name, byLabels] of series) {
        const value = byLabels.get('')?.value;
        if (metricCatalog[name].kind === 'gauge' && value !== undefined) site[name] = value;
      }
      return site;
    },
    render() {
      const lines: string[] = [];
      for (const name of Object.keys(metricCatalog) as MetricName[]) {
        const recorded = series.get(name);
        if (!recorded) continue;
        const metric = prometheusName(name);
        const { kind, help } = metricCatalog[name];
        lines.push(`# HELP ${metric} ${help}`, `# TYPE ${metric} ${prometheusType[kind]}`);
        for (const one of recorded.values()) {
          if (kind === 'timing') lines.push(`${metric}_sum${one.labels} ${one.value}`, `${metric}_count${one.labels} ${one.count}`);
          else lines.push(`${metric}${one.labels} ${one.value}`);
        }
      }
      return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
    },
  };
}
