// chatctl webhooks listen: its options, help and examples. The action loads
// the listener (a bundle of its own) when it runs.
import { Option, type Command } from 'commander';
import { collect, examples, type Factory } from '../../app.js';
import { SIGNING_MORE } from './help-text.js';

export function registerListen(parent: Command, f: Factory): void {
  parent
    .command('listen')
    .description('receive signed deliveries on this machine, verify each with every secret file you hold (re-read as they change) and say which matched: a receiver for rehearsing a rotation')
    .addOption(
      new Option('--secret-file <path>', "a file holding one of the endpoint's whsec_ secrets; repeat it for each (old and new during an overlap). Looked at again before every delivery").argParser(
        collect,
      ),
    )
    .option('--port <port>', 'the port to listen on (default 0: a free one, printed on the first line)')
    .option('--host <host>', 'the address to listen on (default 127.0.0.1)')
    .option('--forward-to <url>', 'pass every verified delivery on, byte for byte, to this http:// or https:// URL on this machine, and answer with its status')
    .option('--tolerance <seconds>', 'how far the timestamp may be from now, in seconds (default 300)')
    .addHelpText(
      'after',
      examples(
        'chatctl webhooks listen --secret-file ./hook.whsec --port 8080',
        'chatctl webhooks listen --secret-file ./old.whsec --secret-file ./new.whsec --port 8080 --forward-to http://127.0.0.1:3000/webhooks',
        "chatctl webhooks listen --secret-file ./hook.whsec --port 0 --json | jq -c 'select(.verified == false)'",
      ) +
        `
Point an endpoint's destination at it (the sandbox accepts http:// on
loopback), then trigger deliveries or rotate: a rotation that rewrites a
secret file (rotate --secret-file FILE --force) is in effect at the next
delivery. One line per delivery on stdout: time, status answered,
webhook-id, event type, which secret files matched (file and fingerprint,
never the secret) or why none did, the timestamp's skew, and secret files
that changed or were skipped (a missing file is skipped). With --json, one
JSON object a line; the first is {"listening":URL,"port":P}.

Answers: 204 verified (with --forward-to: the target's status, 502 if it
cannot be reached), 400 missing webhook-* headers, 401 any other failure
(no matching signature, timestamp out of tolerance or not a plain decimal
integer, no v1 signature), 405 not a POST, 413 a body over 1 MiB, 408 a
sender too slow (headers 10 s, whole request 30 s), 431 headers over 16 KiB;
at most 64 connections at once. Ctrl-C or SIGTERM stops it with a summary
(received, verified, refused) on stderr, or as the last JSON line, and exit
0. Exit 2: a secret file missing or not a secret at start, a port in use.
` +
        SIGNING_MORE,
    )
    .action(async (opts) => {
      const { runListen } = await import('../listen/index.js');
      await runListen(opts, f);
    });
}
