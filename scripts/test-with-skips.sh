#!/usr/bin/env bash
# Runs a test command (`make test`'s `swift test`) with its output passed
# through as it comes, untouched (a CI reads swift test's own summary lines),
# then lists every test it skipped with its reason, from XCTest's lines
# "FILE:LINE: CLASS.TEST : Test skipped - REASON" (a reason's first line).
# Exits with the command's own status. Usage: scripts/test-with-skips.sh CMD...
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
skips=$(sed -n 's/^.*: \([A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*\) : Test skipped - \(.*\)$/  \1: \2/p' "$log" | sort -u)
if [ -n "$skips" ]; then
    echo
    echo "Skipped tests ($(printf '%s\n' "$skips" | wc -l)); each skip and its probe: docs/ARCHITECTURE.md, \"Skips\":"
    printf '%s\n' "$skips"
else
    echo
    echo "Skipped tests: none"
fi
exit "$status"
