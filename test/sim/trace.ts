/**
 * The executed trace: what the simulation did and when (API calls, transactions, reorgs, kills,
 * Redis restarts), in milliseconds from the start. Written to a file when a run fails, next to
 * the scenario, so a failure can be read and replayed (the seed fixes the scenario; the trace
 * shows what the machine's timing made of it).
 */
export interface TraceEntry {
  at: number;
  kind: string;
  [key: string]: unknown;
}

export class Trace {
  readonly entries: TraceEntry[] = [];
  constructor(private readonly startedAt: number) {}
  add(kind: string, data: Record<string, unknown>): void {
    this.entries.push({ ...data, at: Date.now() - this.startedAt, kind });
  }
}
