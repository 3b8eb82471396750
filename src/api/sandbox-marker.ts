// How a chatctl sandbox says what it is: `GET /_sandbox` answers with this
// header, to any loopback caller, no token needed. Shared by the sandbox and
// by `webhooks trigger`, which checks it before sending anything else.
export const SANDBOX_MARKER_HEADER = 'chatctl-sandbox';
