// Standard output redirected to a regular file: Node writes it with a
// SyncWriteStream, which ignores a short write (fs.writeSync returning fewer
// bytes than asked, as on a nearly full disk) and reports success. A secret
// cut short would then count as delivered (exit 0). This stream writes every
// byte or fails, so delivery to stdout sees the error (exit 13, the secret
// kept in recovered/).
import { writeSync as fsWriteSync } from 'node:fs';
import { Writable } from 'node:stream';

type WriteSync = (fd: number, buffer: Buffer, offset: number, length: number) => number;

export class FullWriteStream extends Writable {
  readonly isTTY = false;
  constructor(
    readonly fd: number,
    private readonly writeSync: WriteSync = fsWriteSync,
  ) {
    super({ decodeStrings: true });
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    try {
      for (let at = 0; at < chunk.length; ) {
        const n = this.writeSync(this.fd, chunk, at, chunk.length - at);
        if (n <= 0) throw Object.assign(new Error(`wrote nothing of the last ${chunk.length - at} bytes`), { code: 'EIO' });
        at += n;
      }
      done();
    } catch (error) {
      done(error as Error);
    }
  }
}
