#!/usr/bin/env bash
# A Python for the OpenTelemetry tests: a virtual environment in
# .build/python with the official `opentelemetry-proto` package (PyPI), made
# once. Prints the interpreter's path; exits, saying why, 2 when python3 is
# not installed, 3 when its venv module is missing, 4 when pip could not
# install the package (FleetTestSupport.swift tells a machine without a
# reachable index from a failure). Usage: scripts/ensure-python-deps.sh
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.build/python
packages=(opentelemetry-proto)
if ! "$venv/bin/python" -c 'import opentelemetry.proto.collector.trace.v1.trace_service_pb2' 2>/dev/null; then
    command -v python3 >/dev/null || { echo "coldstart: python3 is not installed" >&2; exit 2; }
    mkdir -p .build
    python3 -m venv "$venv" >&2 || { echo "coldstart: python3 -m venv failed (Debian: apt-get install python3-venv)" >&2; exit 3; }
    echo "coldstart: installing ${packages[*]} into $venv" >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${packages[@]}" >&2 \
        || { echo "coldstart: pip could not install ${packages[*]} (is PyPI reachable?)" >&2; exit 4; }
fi
echo "$PWD/$venv/bin/python"
