import {
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { isCairnError } from '../errors.js';
import type { JsonValue } from '../json.js';
import type { RunSignal, RunWait } from '../store/waits.js';
import type { Effect, EffectTelemetry, PerformCommand } from './step-function.js';

/** The tracer name Cairn's spans are reported under. */
export const tracerName = '@cairn/sdk';

/** Where a run's first attempt's span was, kept in the snapshot so later attempts can link to it. */
export interface StoredTraceContext {
  traceId: string;
  spanId: string;
}

/** Returns the tracer: from the provider given, else from the global provider (never registering one). */
export function cairnTracer(provider: TracerProvider | undefined): Tracer {
  return (provider ?? trace.getTracerProvider()).getTracer(tracerName);
}

/** Records an error on a span with its Cairn code. */
export function recordError(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  if (isCairnError(error)) span.setAttribute('cairn.error.code', error.code);
  span.setStatus({
    code: SpanStatusCode.ERROR,
    message: error instanceof Error ? error.message : String(error),
  });
}

/** What a snapshot keeps of a run span so that later attempts can link to it; undefined when not recording. */
export function traceOrigin(span: Span): StoredTraceContext | undefined {
  const context = span.spanContext();
  return trace.isSpanContextValid(context)
    ? { traceId: context.traceId, spanId: context.spanId }
    : undefined;
}

/** A link to the first attempt's run span, when the snapshot kept one. */
export function linkToOrigin(stored: StoredTraceContext | undefined): Link[] {
  if (stored === undefined) return [];
  return [
    {
      context: { traceId: stored.traceId, spanId: stored.spanId, traceFlags: 1, isRemote: true },
      attributes: { 'cairn.link': 'original_run' },
    },
  ];
}

/**
 * The spans of one attempt below its run span: unit spans (trips, nodes) opened when their first effect
 * actually runs, and one span per performed effect. Effects reused from the journal get no span: they did
 * not run in this attempt.
 */
export class AttemptTracing {
  private readonly units = new Map<string, { span: Span; context: Context }>();

  constructor(
    private readonly tracer: Tracer,
    private readonly telemetry: EffectTelemetry | undefined,
    readonly runSpan: Span,
    readonly runContext: Context,
  ) {}

  /** Starts the span of an effect about to run; its context is the parent of what the effect starts. */
  startEffect(command: PerformCommand): { span: Span; context: Context } {
    const parent = this.unitContext(command.effect);
    const described = this.telemetry?.span(command.effect) ?? {
      name: `cairn.effect ${command.effect.kind}`,
      attributes: {},
    };
    const span = this.tracer.startSpan(
      described.name,
      { attributes: { ...described.attributes, 'cairn.effect.id': command.id } },
      parent,
    );
    return { span, context: trace.setSpan(parent, span) };
  }

  /** Attributes from an effect's value, on its span. */
  settled(span: Span, command: PerformCommand, value: JsonValue): void {
    const attributes = this.telemetry?.result?.(command.effect, value);
    if (attributes !== undefined) span.setAttributes(attributes);
  }

  /** A call that was in flight at a crash and is answered as outcome unknown: a marked, empty span. */
  reportUnknown(command: PerformCommand): void {
    const { span } = this.startEffect(command);
    span.setAttribute('cairn.effect.outcome', 'unknown');
    span.addEvent('cairn.outcome_unknown', { 'cairn.effect.id': command.id });
    span.end();
  }

  /** Ends the unit spans no pending effect belongs to: their trip or node has settled. */
  closeSettledUnits(pending: readonly PerformCommand[]): void {
    const open = new Set(pending.map((command) => this.telemetry?.unit?.(command.effect)?.key));
    for (const [key, unit] of this.units) {
      if (!open.has(key)) {
        unit.span.end();
        this.units.delete(key);
      }
    }
  }

  /** The run waits from here, holding nothing: an event on the run span saying for what. */
  waiting(wait: RunWait): void {
    this.runSpan.addEvent('cairn.wait', waitAttributes(wait));
  }

  /**
   * The wait that ended as this attempt claimed the run: a `cairn.wait` span from when it began (in an earlier
   * attempt, whose trace this attempt's run span links to) to now, with the signals that arrived as events.
   */
  woke(wait: RunWait, signals: readonly RunSignal[], since: number | undefined, now: number): void {
    const span = this.tracer.startSpan(
      'cairn.wait',
      {
        ...(since === undefined ? {} : { startTime: since }),
        attributes: {
          ...waitAttributes(wait),
          'cairn.wait.timed_out': !signals.some((s) => wait.signals.includes(s.name)),
        },
      },
      this.runContext,
    );
    for (const signal of signals)
      span.addEvent('cairn.signal', signalAttributes(signal), signal.at);
    span.end(now);
  }

  /** Signals handed to the step while the run ran: events on the run span. */
  signalsArrived(signals: readonly RunSignal[]): void {
    for (const signal of signals)
      this.runSpan.addEvent('cairn.signal', signalAttributes(signal), signal.at);
  }

  /** Ends every unit span, recording the error on them when the attempt ended with one. */
  closeAll(error?: unknown): void {
    for (const unit of this.units.values()) {
      if (error !== undefined) unit.span.setStatus({ code: SpanStatusCode.ERROR });
      unit.span.end();
    }
    this.units.clear();
  }

  private unitContext(effect: Effect): Context {
    const unit = this.telemetry?.unit?.(effect);
    if (unit === undefined) return this.runContext;
    let open = this.units.get(unit.key);
    if (open === undefined) {
      const span = this.tracer.startSpan(
        unit.name,
        { attributes: unit.attributes },
        this.runContext,
      );
      open = { span, context: trace.setSpan(this.runContext, span) };
      this.units.set(unit.key, open);
    }
    return open.context;
  }
}

function waitAttributes(wait: RunWait): Attributes {
  return {
    ...(wait.until === null ? {} : { 'cairn.wait.until': new Date(wait.until).toISOString() }),
    'cairn.wait.signals': wait.signals,
  };
}

function signalAttributes(signal: RunSignal): Attributes {
  return { 'cairn.signal.name': signal.name, 'cairn.signal.seq': signal.seq };
}
