#!/usr/bin/env bash
# `make mutants` (issue 37, item 7): shows that the tests can fail. Each
# Tests/Mutants/*.patch is a deliberate breakage of what a test claims to
# check; its header names the tests that should catch it ("# tests:"). One at
# a time: the patch is applied to this tree, the package, its tests and the
# fixtures are rebuilt, the declared tests run, and the patch is reverted,
# whatever happened (a failed build, a failed test, an interrupt). A mutant is
# CAUGHT when at least one of its tests failed; a skipped test is no catch: a
# skip decided from the broken code's own output is exactly what this exists
# to expose. Exits non-zero if any mutant was missed, did not build or no
# longer applies.
#
# Before the mutants, the union of their tests runs on the unmutated tree:
# a test that fails without a breakage would make any mutant look caught.
# Each run's log is in .build/mutants/. Usage: scripts/mutants.sh [PATCH...]
# (default every patch); SWIFT, COLDSTART_FIXTURES as for `make test`.
set -u
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
: "${COLDSTART_FIXTURES:=$PWD/Tests/Fixtures/.build/debug}"
export COLDSTART_FIXTURES
# Per swift test run: a mutant that hangs a test is reported, not waited on.
TEST_TIMEOUT=${MUTANT_TEST_TIMEOUT:-900}
LOGS=.build/mutants
mkdir -p "$LOGS"

if [ $# -gt 0 ]; then patches=("$@"); else patches=(Tests/Mutants/*.patch); fi

# The patch applied now, reverted on every way out. A revert that fails
# leaves the tree mutated: said loudly, never silently.
applied=""
revert() {
    [ -n "$applied" ] || return 0
    if git apply -R "$applied"; then
        applied=""
    else
        echo "mutants: cannot revert $applied: the tree is still mutated; run: git apply -R $applied" >&2
        exit 3
    fi
}
trap revert EXIT
trap 'revert; exit 130' INT TERM HUP

# A run killed outright (SIGKILL, a crash of the machine) left its mutant in:
# every mutated line carries "MUTANT", so a patch that reverses cleanly is one.
for p in "${patches[@]}"; do
    if git apply -R --check "$p" 2>/dev/null; then
        echo "mutants: $p was left applied by an earlier run: reverting it"
        git apply -R "$p" || exit 3
    fi
done

tests_of() { sed -n 's/^# tests: *//p' "$1" | tr ' ' '\n' | sed '/^$/d'; }
filter_of() { tests_of "$1" | paste -sd'|' -; }

# Both builds: the capture layer's mutants reach the fixtures (which link
# Coldstart from their own build directory), the CLI's and the analysis's
# reach the test bundle and `coldstart`.
build() {
    "$SWIFT" build --build-tests && "$SWIFT" build --package-path Tests/Fixtures
}

# Runs the tests matching $1 into log $2; prints the failed tests' names.
run_tests() {
    timeout --kill-after=30 "$TEST_TIMEOUT" "$SWIFT" test --skip-build --disable-swift-testing --filter "$1" >"$2" 2>&1
}
# XCTest on Linux: "Test Case 'Class.test' failed (…)" (Darwin's "-[Module.Class test]" too).
outcome() { sed -n "s/^Test Case '\(-\[[A-Za-z]*\.\)\{0,1\}\([A-Za-z]*\)[. ]\([A-Za-z0-9_]*\)\]\{0,1\}' $2 .*/\2\/\3/p" "$1" | sort -u; }
failed_tests() { outcome "$1" failed; }
skipped_tests() { outcome "$1" skipped; }

for p in "${patches[@]}"; do
    if ! git apply --check "$p" 2>/dev/null; then
        echo "mutants: $p no longer applies to this tree: rewrite it against the current code" >&2
        exit 2
    fi
    if [ -z "$(filter_of "$p")" ]; then
        echo "mutants: $p declares no tests (a '# tests:' line)" >&2
        exit 2
    fi
done

echo "== baseline: the mutants' tests on the unmutated tree"
build >"$LOGS/baseline-build.log" 2>&1 || { echo "mutants: the unmutated tree does not build ($LOGS/baseline-build.log)" >&2; exit 2; }
all=$(for p in "${patches[@]}"; do tests_of "$p"; done | sort -u | paste -sd'|' -)
if ! run_tests "$all" "$LOGS/baseline.log"; then
    echo "mutants: the declared tests fail without any mutant ($LOGS/baseline.log):" >&2
    failed_tests "$LOGS/baseline.log" | sed 's/^/  /' >&2
    exit 2
fi

results=()
missed=0
for p in "${patches[@]}"; do
    name=$(basename "$p" .patch)
    log="$LOGS/$name.log"
    echo "== $name: $(sed -n 's/^# Mutant: *//p' "$p")"
    git apply "$p" || { echo "mutants: cannot apply $p" >&2; exit 2; }
    applied=$p
    if ! build >"$LOGS/$name-build.log" 2>&1; then
        revert
        results+=("$name: BROKEN (does not build: $LOGS/$name-build.log)")
        missed=$((missed + 1))
        continue
    fi
    start=$SECONDS
    run_tests "$(filter_of "$p")" "$log"
    status=$?
    revert
    failed=$(failed_tests "$log" | paste -sd' ' -)
    skipped=$(skipped_tests "$log" | paste -sd' ' -)
    took="$((SECONDS - start)) s"
    if [ -n "$failed" ]; then
        results+=("$name: CAUGHT by $failed ($took)")
    elif [ "$status" -ne 0 ]; then
        # No test reported a failure, yet the run failed: it crashed or timed out.
        results+=("$name: CAUGHT (the test run exited $status without a failed test: a crash or the $TEST_TIMEOUT s limit; $log) ($took)")
    else
        results+=("$name: MISSED${skipped:+ (skipped: $skipped)} ($took)")
        missed=$((missed + 1))
    fi
    echo "${results[-1]}"
done

# The build directories back to the unmutated sources, so the next `make
# test` or demo does not run a mutant's binaries.
echo "== rebuilding the unmutated tree"
build >"$LOGS/final-build.log" 2>&1 || echo "mutants: the final rebuild failed ($LOGS/final-build.log)" >&2

echo
echo "Mutants:"
printf '  %s\n' "${results[@]}"
[ "$missed" -eq 0 ]
