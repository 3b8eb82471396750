#!/bin/sh
# Writes test/commands/webhooks/rotate/README.md: every test file that runs
# `webhooks rotate`, with the first line of its header comment. The
# structure test (test/structure/structure.test.ts) fails when it is stale.
cd "$(dirname "$0")/.." || exit 1
{
  echo "# Where \`webhooks rotate\` is tested"
  echo
  echo "Every test file that runs \`webhooks rotate\` (single or \`--from\`), by what it covers."
  echo "test/structure/structure.test.ts checks that this list names each such file, and only files that exist"
  echo "(\`sh scripts/rotate-test-index.sh\` writes it anew)."
  echo
  for f in $(grep -rlE "'webhooks', 'rotate'|webhooks rotate|\['rotate'|fleetSandbox\(" test --include=*.test.ts | sort); do
    d=$(head -3 "$f" | grep -m1 '^//' | sed 's|^// *||' | cut -c1-110)
    echo "- [\`${f#test/}\`](../../../${f#test/}): $d" | sed "s/: $//"
  done
} > test/commands/webhooks/rotate/README.md
