#!/usr/bin/env bash
# What the HTML report and the exports cost on a large profile: a synthetic
# symbolized timeline of N samples (default 100,000; scripts/make-big-timeline.py),
# release build. Prints file sizes, the CLI's wall times, and the page's load
# time in headless Chromium (performance.now() after the page's own script has
# parsed the data and drawn both flame views), median of 5 loads.
# Usage: scripts/bench-html.sh [SAMPLES]
set -euo pipefail
cd "$(dirname "$0")/.."
samples=${1:-100000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
swift build -c release >/dev/null
cli=.build/release/coldstart
python3 scripts/make-big-timeline.py "$work/big.json" "$samples"
seconds() { local start end; start=$(date +%s.%N); "$@" >/dev/null; end=$(date +%s.%N); echo "$end - $start" | bc; }
size() { stat -c %s "$1" | awk '{ printf "%.2f MB", $1 / 1e6 }'; }
echo "timeline: $samples samples, $(size "$work/big.json")"
echo "coldstart report (text):  $(seconds "$cli" report "$work/big.json") s"
echo "coldstart report --html:  $(seconds "$cli" report "$work/big.json" --html "$work/big.html") s, $(size "$work/big.html")"
for format in pprof folded speedscope; do
    echo "coldstart export $format: $(seconds "$cli" export "$work/big.json" --format "$format" -o "$work/out.$format") s, $(size "$work/out.$format")"
done
command -v chromium >/dev/null || { echo "chromium not installed: no load time (scripts/ensure-deps.sh chromium)"; exit 0; }
# The page's script runs last in <body>; a script after it sees the load done.
sed 's|</body></html>|<script>document.body.setAttribute("data-loaded-ms", performance.now().toFixed(0));</script></body></html>|' \
    "$work/big.html" > "$work/timed.html"
loads=()
for _ in 1 2 3 4 5; do
    loads+=("$(chromium --headless --no-sandbox --disable-gpu --window-size=1280,800 --dump-dom "file://$work/timed.html" 2>/dev/null \
        | grep -o 'data-loaded-ms="[0-9]*"' | grep -o '[0-9]*')")
done
echo "Chromium load (navigation start → data parsed, chart and graph drawn), ms: ${loads[*]}; median $(printf '%s\n' "${loads[@]}" | sort -n | sed -n 3p)"
