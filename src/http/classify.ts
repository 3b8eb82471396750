// Turns a non-2xx response into the one error chatctl reports: the server's
// code when the body is a PublicErrorResponseDto, else the HTTP status
// fallback in `chatctl exit-codes` (README, Exit codes). Error bodies are read leniently.
import { errorResponseSchema } from '../api/schemas.js';
import { CliError } from '../errors/cli-error.js';
import { exitCodeForApiCode, exitCodeForStatus } from '../errors/exit-codes.js';
import type { WireResponse } from './transport.js';
import { redactSecretFields } from '../output/redact.js';

export function headerValue(res: WireResponse, name: string): string | undefined {
  const v = res.headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function errorFromResponse(res: WireResponse, suffix = ''): CliError {
  // A redirect is named for what it is, whatever its body says: it is never
  // followed, so the token never reaches the other origin.
  if (res.status >= 300 && res.status < 400) return redirectError(res, suffix);
  const parsed = errorResponseSchema().safeParse(parseJson(res.body));
  if (parsed.success) {
    const e = parsed.data.error;
    return new CliError(e.code, e.message + suffix, exitCodeForApiCode(e.code), {
      status: res.status,
      requestId: e.requestId,
      // An error is printed on stderr, where no signing secret may appear.
      details: redactSecretFields(e.details),
    });
  }
  return new CliError('invalid_response', `the server answered ${res.status}${describeBody(res)}` + suffix, exitCodeForStatus(res.status), {
    status: res.status,
    requestId: headerValue(res, 'x-request-id') ?? null,
  });
}

function redirectError(res: WireResponse, suffix: string): CliError {
  const location = headerValue(res, 'location');
  return new CliError('invalid_response', `the server answered ${res.status} with a redirect${location ? ` to ${location}` : ''}; redirects are not followed` + suffix, exitCodeForStatus(res.status), {
    status: res.status,
    requestId: headerValue(res, 'x-request-id') ?? null,
    hint: 'check the base URL (it may need https or a different path)',
  });
}

function describeBody(res: WireResponse): string {
  const type = headerValue(res, 'content-type') ?? '';
  if (res.body.trim() === '') return ' with an empty body';
  if (/html/i.test(type) || /^\s*</.test(res.body)) return ' with an HTML page (a proxy or gateway error?)';
  return ' with a body that is not an API error';
}
