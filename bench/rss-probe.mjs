// Fallback peak-RSS probe for bench/startup.mjs when /usr/bin/time is absent:
// loaded with `node --import bench/rss-probe.mjs …`, it writes the process's
// peak RSS (KiB) to fd 3 at exit.
import { writeSync } from 'node:fs';

process.on('exit', () => {
  try {
    writeSync(3, String(process.resourceUsage().maxRSS));
  } catch {
    // no fd 3: not run by the benchmark
  }
});
