// Reading a destination back: does it already hold exactly this secret? A
// resumed `--from` run asks before delivering a kept copy again (a file that
// holds it counts as delivered), and when no copy is left; a kept copy is
// read the same way. A destination may have become anything since it was
// written (a link, a FIFO that would block forever, a huge file).
import { readRegularFile } from '../fs/read.js';
import { dotenvValuesOf } from './dotenv.js';
import { fingerprint } from './fingerprint.js';
import type { Sink } from './sinks.js';

/**
 * Whether a destination already holds the secret with fingerprint `fp`, read
 * back as written: a `file:` holding exactly it, an `env-file:` whose every
 * NAME line has it as its value. An exec: command's store and stdout cannot
 * be asked: false. The resume of `rotate --from` asks this; it never follows
 * a link, never blocks (a FIFO in its place is not read) and reads at most
 * 1 MiB, so it ends at once whatever the destination has become.
 */
export function sinkHolds(sink: Sink, fp: string): boolean {
  if (sink.kind === 'file') {
    const bytes = readRegularFile(sink.path);
    return bytes !== undefined && fingerprint(bytes) === fp;
  }
  if (sink.kind === 'env-file') {
    const bytes = readRegularFile(sink.path);
    if (bytes === undefined) return false;
    const values = dotenvValuesOf(bytes, sink.name);
    return values.length > 0 && values.every((v) => fingerprint(v) === fp);
  }
  return false;
}
