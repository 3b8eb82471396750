// docs/sandbox.md against the sandbox it describes (in-process, on
// 127.0.0.1): its table of control routes names every route the sandbox
// serves, and each answers inside the API's envelope with the documented
// shape; the fault table names every setting; the rehearsal lines work in
// any order, since settings stay until changed; DELETE /_sandbox/faults
// clears them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { ROOT } from '../support/fixtures.js';
import { scopedPath } from '../../src/api/schemas.js';
import { CONTROL_ROUTES } from '../../src/sandbox/control.js';
import { startSandbox, type RunningSandbox } from '../../src/sandbox/server.js';

const DOC = readFileSync(join(ROOT, 'docs', 'sandbox.md'), 'utf8');

function section(title: string): string {
  const start = DOC.indexOf(`\n## ${title}\n`);
  expect(start, title).toBeGreaterThan(0);
  const end = DOC.indexOf('\n## ', start + 4);
  return DOC.slice(start, end < 0 ? undefined : end);
}

/** The rows of the first table in a section, as cells without their backquotes. */
function tableRows(text: string): string[][] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('| `'))
    .map((l) =>
      l
        .slice(1, -1)
        .split(' | ')
        .map((c) => c.trim().replace(/^`(.*)`$/, '$1')),
    );
}

/**
 * A documented answer as a shape: `{…}` any object, `[…]` any array, `"…"`
 * any string, `N` any number; everything else as written.
 */
type Shape = { kind: 'object'; keys?: Record<string, Shape> } | { kind: 'array' } | { kind: 'string' | 'number' | 'boolean' | 'null' };
function shapeOf(text: string): Shape {
  const json = text.replaceAll('{…}', '{"__any__":0}').replaceAll('[…]', '["__any__"]').replace(/:N\b/g, ':0');
  const toShape = (v: unknown): Shape => {
    if (v === null) return { kind: 'null' };
    if (Array.isArray(v)) return { kind: 'array' };
    if (typeof v === 'object') {
      const o = v as Record<string, unknown>;
      if (Object.hasOwn(o, '__any__')) return { kind: 'object' };
      return { kind: 'object', keys: Object.fromEntries(Object.entries(o).map(([k, x]) => [k, toShape(x)])) };
    }
    return { kind: typeof v as 'string' | 'number' | 'boolean' };
  };
  return toShape(JSON.parse(json));
}

/** Where `value` differs from `shape`: a list of paths, empty when it fits. */
function misfits(shape: Shape, value: unknown, path = 'data'): string[] {
  const kind = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
  if (kind !== shape.kind) return [`${path}: documented ${shape.kind}, answered ${kind}`];
  if (shape.kind !== 'object' || !shape.keys) return [];
  const o = value as Record<string, unknown>;
  const keys = Object.keys(shape.keys);
  if (Object.keys(o).join() !== keys.join()) return [`${path}: documented keys ${keys.join(',')}, answered ${Object.keys(o).join(',')}`];
  return keys.flatMap((k) => misfits(shape.keys![k]!, o[k], `${path}.${k}`));
}

let sb: RunningSandbox;
let endpointId: string;
const auth = () => ({ authorization: `Bearer ${sb.token}` });
const control = async (route: string, body?: unknown) => {
  const [method, path] = route.split(' ') as [string, string];
  const res = await fetch(sb.baseUrl + path.replace('{id}', encodeURIComponent(endpointId)), { method, headers: auth(), body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
};
/** One API request as chatctl would send it (a reactivate), and the status it got; null when the connection was dropped. */
const apiStatus = async () => {
  try {
    const res = await fetch(sb.baseUrl + scopedPath(sb, 'webhook-endpoints', endpointId, 'reactivate'), {
      method: 'POST',
      headers: { ...auth(), origin: 'https://console.example.com', 'x-service-csrf': '1', 'content-type': 'application/json' },
      body: JSON.stringify({ expectedVersion: 1 }),
    });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return null;
  }
};

/** An endpoint to deliver to and reactivate (POST /_sandbox/reset forgets them). */
async function createEndpoint(): Promise<void> {
  const res = await fetch(sb.baseUrl + scopedPath(sb, 'webhook-endpoints'), {
    method: 'POST',
    headers: { ...auth(), origin: 'https://console.example.com', 'x-service-csrf': '1', 'content-type': 'application/json', 'idempotency-key': `k${Math.random()}` },
    // A receiver that is not there: the delivery route still answers, with the receiver's fate.
    body: JSON.stringify({ name: 'doc', destinationUrl: 'http://127.0.0.1:9/none', eventTypes: ['chat.message.created.v1'] }),
  });
  endpointId = ((await res.json()) as { data: { endpoint: { id: string } } }).data.endpoint.id;
}

beforeAll(async () => {
  sb = await startSandbox();
  await createEndpoint();
});
afterAll(async () => {
  await sb?.close();
});

/** A body each POST route accepts. */
const BODIES: Record<string, unknown> = {
  'POST /_sandbox/faults': {},
  'POST /_sandbox/clock': { advanceMs: 0 },
  'POST /_sandbox/endpoints/{id}/deliver': { eventType: 'chat.message.created.v1' },
};

describe('docs/sandbox.md, control routes', () => {
  const rows = tableRows(section('Control routes'));

  it('names every route the sandbox serves, and no other', () => {
    expect(rows.map((r) => r[0]).sort()).toEqual([...CONTROL_ROUTES].sort());
  });

  it('each answers 200 in {"data","meta"}, its data shaped as documented', async () => {
    for (const [route, answer] of rows) {
      const r = await control(route!, BODIES[route!]);
      expect(r.status, route).toBe(200);
      expect(Object.keys(r.body), route).toEqual(['data', 'meta']);
      expect(typeof (r.body.meta as { requestId?: unknown }).requestId, route).toBe('string');
      expect(misfits(shapeOf(answer!), r.body.data), `${route}: ${answer}`).toEqual([]);
    }
    expect((await control('GET /_sandbox')).headers.get('chatctl-sandbox')).toBe('1');
  });

  it('the fault table names every setting GET /_sandbox/faults answers', async () => {
    const fields = tableRows(section('Faults')).map((r) => r[0]);
    expect(fields).toEqual(Object.keys(((await control('GET /_sandbox/faults')).body.data as { faults: object }).faults));
  });
});

describe('docs/sandbox.md, faults', () => {
  beforeAll(async () => {
    await control('POST /_sandbox/reset');
    await createEndpoint();
  });
  const lines = DOC.split('\n').filter((l) => l.startsWith('curl ') && l.includes('/_sandbox/faults'));
  const send = async (line: string) => {
    const r = await execa('bash', ['-e', '-c', line.replace(/^curl -s /, 'curl -sf ')], {
      env: { PATH: process.env.PATH!, CHATCTL_BASE_URL: sb.baseUrl, CHATCTL_TOKEN: sb.token },
      extendEnv: false,
      reject: false,
    });
    expect(r.exitCode, `${line}\n${r.stderr}`).toBe(0);
  };
  const example = (what: string) => {
    const line = lines.find((l) => l.includes(what));
    expect(line, what).toBeDefined();
    return line!;
  };

  it('the rehearsal lines work in any order: the 503 one after the dropped connection answers 503s, not resets', async () => {
    await send(example('"dropConnection":true'));
    await send(example('"status":503'));
    expect([await apiStatus(), await apiStatus(), await apiStatus()]).toEqual([503, 503, 200]);
    await send(example('"dropConnection":true'));
    await send(example('"status":429'));
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push(await apiStatus());
    expect(statuses).toEqual([429, 429, 429, 429, 429, 200]);
  });

  it('DELETE /_sandbox/faults puts every setting back and keeps the endpoints', async () => {
    await send(example('"delayMs":2000'));
    await send(example('"rateLimit":5'));
    await send(example('-X DELETE'));
    const { faults } = (await control('GET /_sandbox/faults')).body.data as { faults: Record<string, unknown> };
    expect(faults).toEqual({ failNext: 0, status: 503, code: 'service_unavailable', retryAfter: null, dropConnection: false, delayMs: 0, rateLimit: 0 });
    expect(await apiStatus()).toBe(200);
  });
});
