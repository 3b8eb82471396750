// Colour through chalk, at the level chatctl decided (output/io.ts
// colorEnabled: TTY, NO_COLOR, --no-color, FORCE_COLOR), not chalk's own
// guess, so tests and pipes get exactly what the flags say.
import { Chalk, type ChalkInstance } from 'chalk';

export function palette(enabled: boolean): ChalkInstance {
  return new Chalk({ level: enabled ? 1 : 0 });
}
