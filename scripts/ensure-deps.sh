#!/usr/bin/env bash
# Installs the Debian packages Coldstart needs when run as root; otherwise says
# which command to run. Usage: scripts/ensure-deps.sh [extra-package …]
# Packages are installed without their recommends (README.md, "Packages
# each command installs", lists what each command installs). gcc brings the
# linker that swiftc links with and the `cc` the Makefile's C checks use;
# libc6-dev the C library's files and crt objects (gcc only recommends it);
# libstdc++-12-dev the C++ library that the static Swift runtime (`make
# install`) and the C++ test fixture need.
set -euo pipefail
packages=(gcc libc6-dev libstdc++-12-dev libunwind-dev zlib1g-dev libdw-dev "$@")
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
    echo "coldstart: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
    echo "coldstart: missing Debian packages: ${missing[*]}" >&2
    echo "           install them with: sudo apt-get install --no-install-recommends ${missing[*]}" >&2
    exit 1
fi
