// A bench-only hook (CONTRIBUTING, "Benchmarks"): with CHATCTL_LOOP_DELAY_REPORT=PATH,
// a `rotate --from` run writes how long its event loop was held to PATH as JSON.

/** Starts measuring; the returned function stops and writes the report (never throws). */
export function loopDelayReport(path: string): () => void {
  const { monitorEventLoopDelay } = process.getBuiltinModule('node:perf_hooks');
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  return () => {
    h.disable();
    const ms = (ns: number) => Math.round((ns / 1e6) * 100) / 100;
    const report = { maxMs: ms(h.max), p99Ms: ms(h.percentile(99)), p50Ms: ms(h.percentile(50)), meanMs: ms(h.mean), samples: h.count };
    try {
      process.getBuiltinModule('node:fs').writeFileSync(path, `${JSON.stringify(report)}\n`);
    } catch {
      /* a bench hook: the run's outcome is not its business */
    }
  };
}
