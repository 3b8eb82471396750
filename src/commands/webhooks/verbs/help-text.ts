// Help text shared by several webhooks verbs.

export const SECRET_TO_HELP = 'where the secret goes (repeatable, all must succeed): file:PATH, env-file:PATH#NAME, exec:CMD, stdout, github-output:NAME, github-env:NAME';

export const SECRET_TO_MORE = `
Without --secret-to the secret is in the JSON with --json (--query needs
--secret-to: it prints no secret), or shown once when stdout is a terminal
and CI is not set; otherwise the command refuses before sending (exit 2). If a destination fails after the change was applied, the
secret is kept under <config folder>/recovered/ and the exit code is 13.
`;

export const SIGNING_MORE = `
The scheme is an assumption (the API does not say how deliveries are signed):
Standard Webhooks, HMAC-SHA256 over "{webhook-id}.{webhook-timestamp}.{body}"
keyed with the base64 part of the whsec_ secret. See docs/signing.md.
`;
