// The tests' own fetch() (test/support/worker-setup.ts): one request per
// connection, so a request never goes out on a connection the server has
// closed meanwhile, which on a loaded machine failed helpers of
// test/support/sandbox.ts with "fetch failed ... other side closed".
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((r) => (s.closeAllConnections(), s.close(() => r())))));
});

/** A server that answers each request with its socket's number; `onRequest` may drop the socket instead. */
async function server(onRequest: (socket: Socket, answered: number) => 'answer' | 'drop' = () => 'answer') {
  const sockets = new Map<Socket, number>();
  const seen: { socket: number; connection: string | undefined }[] = [];
  const s = http.createServer((req, res) => {
    if (!sockets.has(req.socket)) sockets.set(req.socket, 0);
    const answered = sockets.get(req.socket)!;
    seen.push({ socket: [...sockets.keys()].indexOf(req.socket), connection: req.headers.connection });
    if (onRequest(req.socket, answered) === 'drop') return void req.socket.destroy();
    sockets.set(req.socket, answered + 1);
    // As Node's servers do by default: keep the connection open for more.
    res.writeHead(200, { connection: 'keep-alive', 'keep-alive': 'timeout=5' }).end('ok');
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}/`, seen };
}

describe("the tests' fetch", () => {
  it('opens a connection for each request and asks the server to close it', async () => {
    const { url, seen } = await server();
    for (let i = 0; i < 3; i++) expect(await (await fetch(url, { method: 'POST', body: '{}' })).text()).toBe('ok');
    expect(seen).toEqual([0, 1, 2].map((socket) => ({ socket, connection: 'close' })));
  });

  it('is not failed by a server that closes a connection as its next request comes', async () => {
    // The race itself, made certain: a second request on an answered
    // connection finds it closed, as when the server's idle timer fires
    // while the request is on its way.
    const { url, seen } = await server((_socket, answered) => (answered > 0 ? 'drop' : 'answer'));
    for (let i = 0; i < 3; i++) expect((await fetch(url)).status).toBe(200);
    expect(seen).toHaveLength(3);
  });
});
