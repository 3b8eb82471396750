// `chatctl help environment`: NAME | meaning | default under each group's title. A test fails
// when a variable read in src/ or bin/ is missing here.
const TABLE = `
Where and as whom (a flag wins over its variable, a variable over the profile)
  CHATCTL_PROFILE | the profile to use, as --profile | the one chosen with "profile use", else "default"
  CHATCTL_BASE_URL | the API's base URL, as --base-url; https, or http on loopback only | the profile's
  CHATCTL_ORG | the organizationId, as --org | the profile's
  CHATCTL_APP | the applicationId, as --app | the profile's
  CHATCTL_ENV | the environmentKey, as --env | the profile's
  CHATCTL_TOKEN | the bearer token; wins over the profile's token command, keyring entry and file token (a run with it never asks the keyring); never written anywhere | the profile's token command, keyring entry or file token
  CHATCTL_ORIGIN | the Origin header sent | the profile's, else the base URL's origin
  CHATCTL_CSRF_TOKEN | the x-service-csrf value sent | the profile's, else 1
  CHATCTL_CONFIG_DIR | the folder holding config.json | $XDG_CONFIG_HOME/chatctl, ~/.config/chatctl (macOS: ~/Library/Application Support/chatctl; Windows: %APPDATA%\\chatctl)
How requests are sent
  CHATCTL_MAX_RETRIES | retries after the first attempt on 429, 503 and network failures, as --max-retries (0 to 100) | 4
  CHATCTL_TIMEOUT | limit for one attempt in seconds, as --timeout | 30
  CHATCTL_DEADLINE | limit for the whole command in seconds, retries and waits included, as --deadline | 300
  https_proxy, HTTPS_PROXY | proxy for https base URLs (CONNECT tunnel); the lower-case one first | http_proxy or HTTP_PROXY, else direct
  http_proxy, HTTP_PROXY | proxy for http base URLs, and https ones when neither https_proxy nor HTTPS_PROXY is set; the lower-case one first | direct
  no_proxy, NO_PROXY | hosts reached directly, separated by commas or spaces: a host (and its subdomains; .host and *.host alike), host:port, or * for all; loopback always is; the lower-case one first | none
  NODE_EXTRA_CA_CERTS | a PEM file of extra certificate authorities (read by Node.js) | none
  NODE_OPTIONS | options for Node.js itself; chatctl keys its compiled-code cache by them too | none
Prompts and output
  CHATCTL_NO_INPUT | never prompt, as --no-input (any value but empty, 0, false, no, off) | prompts on a terminal
  CI | the same as CHATCTL_NO_INPUT; also, the one-time secret is never printed in human mode, terminal or not: name where it goes (--secret-to) or use --json | unset
  NO_COLOR | no colour, as --no-color (any non-empty value) | colour on a terminal
  FORCE_COLOR | colour even when not on a terminal (except 0 or false) | unset
  TERM | dumb: no colour | as set by the terminal
GitHub Actions (set by the runner)
  GITHUB_ACTIONS | true: every secret and the token are announced with ::add-mask:: before any output (on stderr with --json or --secret-to stdout); each failed item or command leaves an ::error annotation on stderr | unset
  GITHUB_OUTPUT | the file --secret-to github-output:NAME appends to | unset (then github-output: is refused)
  GITHUB_ENV | the file --secret-to github-env:NAME appends to | unset (then github-env: is refused)
  GITHUB_STEP_SUMMARY | the file a create, rotate or rotate --from appends its Markdown table of results to | unset (then no summary)
The system keyring (read by the keyring library, in the process chatctl starts for it)
  DBUS_SESSION_BUS_ADDRESS | Linux: the D-Bus session where the Secret Service (gnome-keyring, KWallet…) answers; a keyring that does not answer within 3 s counts as absent | none: no keyring, tokens go to config.json
Set by chatctl for a profile's --token-command (read by it, not by chatctl)
  CHATCTL_PROFILE | the profile whose token is asked for (CHATCTL_TOKEN and CHATCTL_CSRF_TOKEN are removed from its environment) | always set
Set by chatctl for --secret-to exec: commands (read by them, not by chatctl)
  CHATCTL_ENDPOINT_ID | the id of the endpoint whose new secret is on the command's standard input | always set
  CHATCTL_SECRET_FINGERPRINT | the fingerprint of that secret (sha256: and 16 hex digits), to check a copy without showing it | always set
Files and shells
  HOME | your home folder, base of the folders below | the account's
  XDG_CONFIG_HOME | base of the config folder and of fish completions | ~/.config
  XDG_DATA_HOME | where "completion install" puts bash and zsh scripts | ~/.local/share
  BASH_COMPLETION_USER_DIR | the user folder of bash-completion, for "completion install" | $XDG_DATA_HOME/bash-completion
  SHELL | the shell "completion install" writes for, without --shell | none (then --shell is needed)
  ZDOTDIR | the folder of your .zshrc, for "completion install" | $HOME
  PATH | where programs are found: "completion install" checks that chatctl is on it | as set
  XDG_CACHE_HOME | base of the compiled-code cache folder | ~/.cache
  CHATCTL_CACHE_DIR | the cache folder: compiled code (start-up speed only), the single executable's keyring addon | $XDG_CACHE_HOME/chatctl
  CHATCTL_COMPILE_CACHE | 0: no compiled-code cache | on
  CHATCTL_LOOP_DELAY_REPORT | for benchmarks only: a file a "rotate --from" run writes its event-loop stalls to (JSON), at its end | unset
  CHATCTL_BIN | the program the completion scripts run on each TAB | chatctl on PATH
  APPDATA, LOCALAPPDATA | Windows: base of the config and cache folders | the account's
  SNAP | set by snapd for a program from the Snap Store (Node.js installed with snap); config.json is still replaced whole, by chatctl itself rather than by the conf library, which would then rewrite it in place | unset
`;

/** [name, meaning, default] by group. */
export const ENVIRONMENT: [string, [string, string, string][]][] = [];
for (const line of TABLE.trim().split('\n')) {
  if (!line.startsWith(' ')) ENVIRONMENT.push([line, []]);
  else ENVIRONMENT.at(-1)![1].push(line.trim().split(' | ') as [string, string, string]);
}

const WIDTH = 80;

function wrap(text: string, indent: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && indent + line.length + 1 + word.length > WIDTH) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines.map((l) => ' '.repeat(indent) + l);
}

export function environmentHelp(): string {
  const out = ['Environment variables chatctl reads, with their meaning and default.', ''];
  for (const [title, rows] of ENVIRONMENT) {
    out.push(`${title}:`);
    for (const [name, meaning, fallback] of rows) {
      out.push(`  ${name}`, ...wrap(`${meaning[0]!.toUpperCase()}${meaning.slice(1)}. Default: ${fallback}.`, 4));
    }
    out.push('');
  }
  out.push('Options: chatctl --help. Exit codes: chatctl help exit-codes.', '');
  return out.join('\n');
}
