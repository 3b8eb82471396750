// What the tests read back from chatctl's output: the --json error line, a
// stdout JSON document, stack traces and leaked values.

export interface JsonErrorLine {
  error: { code: string; message: string; requestId: string | null; status: number | null; details: unknown };
  exitCode: number;
  /** create and rotate, when the change may have been applied. */
  idempotencyKey?: string;
}

/**
 * The --json error contract: stderr is exactly one line of JSON with the
 * fields {error:{code,message,requestId,status,details},exitCode} (and
 * idempotencyKey, a string, when the change may have been applied).
 * Throws (failing the test) if not.
 */
export function parseErrorLine(stderr: string): JsonErrorLine {
  const text = stderr.endsWith('\n') ? stderr.slice(0, -1) : stderr;
  if (text.length === 0) throw new Error('stderr is empty; expected one JSON error line');
  if (text.includes('\n')) throw new Error(`stderr is more than one line:\n${stderr}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`stderr is not JSON:\n${stderr}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error(`stderr is not a JSON object:\n${stderr}`);
  const obj = parsed as Record<string, unknown>;
  const keys = Object.keys(obj).sort().join(',');
  if (keys !== 'error,exitCode' && keys !== 'error,exitCode,idempotencyKey') throw new Error(`top-level keys are ${keys}: ${stderr}`);
  if ('idempotencyKey' in obj && typeof obj.idempotencyKey !== 'string') throw new Error(`idempotencyKey is not a string: ${stderr}`);
  const err = obj.error as Record<string, unknown>;
  if (typeof err !== 'object' || err === null) throw new Error(`error is not an object: ${stderr}`);
  const ek = Object.keys(err).sort().join(',');
  if (ek !== 'code,details,message,requestId,status') throw new Error(`error keys are ${ek}: ${stderr}`);
  if (typeof err.code !== 'string' || typeof err.message !== 'string') throw new Error(`error.code/message are not strings: ${stderr}`);
  if (typeof obj.exitCode !== 'number') throw new Error(`exitCode is not a number: ${stderr}`);
  return parsed as JsonErrorLine;
}

/** stdout holds exactly one JSON document (a trailing newline allowed). */
export function parseStdoutJson(stdout: string): unknown {
  return JSON.parse(stdout);
}

const STACK_PATTERNS: RegExp[] = [
  /^\s+at (?:.+ \()?(?:file:\/\/|node:|\/|<anonymous>|native).*\)?$/m, // V8 frames
  /node:internal/,
  /^(?:Uncaught )?(?:[A-Z][A-Za-z]*)?Error(?: \[[A-Z_]+\])?: /m, // "Error: …" / "TypeError: …" at a line start
  /^file:\/\/\/.*:\d+$/m, // the source line node prints above an uncaught error
  /^Node\.js v\d+/m,
  /\bEPIPE\b/,
  /UnhandledPromiseRejection|unhandled 'error' event/i,
];

/** The first stack-trace-like fragment in text, if any. */
export function stackTrace(text: string): string | undefined {
  for (const p of STACK_PATTERNS) {
    const m = p.exec(text);
    if (m) return m[0];
  }
  return undefined;
}

/** Which of `values` occur in `text` (values that must never be there). */
export function leaks(text: string, values: string[]): string[] {
  return values.filter((v) => v.length > 0 && text.includes(v));
}
