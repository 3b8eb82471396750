// The routing rule of select-transport.ts that the command line cannot reach
// (the base URL check refuses http: off loopback first): an http: URL is
// never handed to a proxy, whatever the variables say.
import { describe, expect, it } from 'vitest';
import { selectTransport } from '../../src/http/select-transport.js';
import { nodeTransport } from '../../src/http/transport.js';
import { CliError } from '../../src/errors/cli-error.js';

const attempt = { timeoutMs: 1000, maxBodyBytes: 1024, signal: new AbortController().signal };
const req = (url: string) => ({ method: 'POST' as const, url, headers: { Authorization: 'Bearer t' }, body: '{}' });

describe('selectTransport', () => {
  it('is the direct transport when no proxy variable is set', async () => {
    expect(await selectTransport({ NO_PROXY: '*' })).toBe(nodeTransport);
  });

  it.each(['HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy'])('with %s set, refuses to send an http: URL off loopback through it (config error, exit 3)', async (name) => {
    const transport = await selectTransport({ [name]: 'http://127.0.0.1:9' });
    const err = await transport(req('http://api.example.com/v1/x'), attempt).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CliError);
    expect([(err as CliError).code, (err as CliError).exitCode]).toEqual(['config_error', 3]);
    expect((err as CliError).message).toContain('clear text');
  });
});
