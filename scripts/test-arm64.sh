#!/usr/bin/env bash
# make test-arm64: the capture layer on arm64, under emulation. Cross-builds
# CSupport/CColdstart and a C test host (Tests/Arm64) with Debian's aarch64
# cross compiler, boots Debian's own arm64 kernel under qemu-system-aarch64
# with an initramfs made from Debian's arm64 packages (libc6, libunwind8),
# runs the host once per configuration, and checks each timeline with the
# x86_64 CLI (`coldstart report --json --root`). Times under emulation
# mean nothing: only counts, shares and names are checked.
# Usage: scripts/test-arm64.sh COLDSTART_CLI
set -euo pipefail
cd "$(dirname "$0")/.."
cli=$1
work=.build/arm64
mkdir -p "$work"

tools=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-system-arm cpio)
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "test-arm64: needs Debian's arm64 packages: sudo dpkg --add-architecture arm64 && sudo apt-get update" >&2; exit 1
    fi
    dpkg --add-architecture arm64
    apt-get update -qq >/dev/null
fi
scripts/ensure-deps.sh "${tools[@]}"

# Debian's arm64 packages, extracted, never installed: the kernel and what
# the image needs (the meta-package names today's kernel).
debs=$work/debs sysroot=$work/sysroot
kernel_pkg=$(apt-cache depends linux-image-cloud-arm64:arm64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
[ -n "$kernel_pkg" ] || { apt-get update -qq >/dev/null; kernel_pkg=$(apt-cache depends linux-image-cloud-arm64:arm64 | awk '/Depends: linux-image-/ {print $2; exit}'); }
mkdir -p "$debs" "$sysroot"
for p in "$kernel_pkg" libc6:arm64 libunwind8:arm64 libunwind-dev:arm64 liblzma5:arm64; do
    name=${p%%:*}
    ls "$debs/${name}"_*.deb >/dev/null 2>&1 || (cd "$debs" && apt-get download -qq "$p" 2>/dev/null)
done
for d in "$debs"/*.deb; do dpkg-deb -x "$d" "$sysroot"; done
vmlinuz=$(ls "$sysroot"/boot/vmlinuz-* | head -1)

# The capture layer and the host, with the same warnings as `make check-c`.
cc=aarch64-linux-gnu-gcc
obj=$work/obj
rm -rf "$obj" && mkdir -p "$obj"
C=CSupport/CColdstart
flags=(-std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror ${ARM64_CFLAGS:-}
       -I$C -I$C/base -I$C/sampler -I$C/watcher -I$C/writer -I$C/include -ICSupport/ColdstartEarly/include
       -idirafter "$sysroot/usr/include/aarch64-linux-gnu")
for f in $C/*.c $C/*/*.c CSupport/ColdstartEarly/early.c; do
    "$cc" "${flags[@]}" -c "$f" -o "$obj/$(basename "${f%.c}").o"
done
"$cc" "${flags[@]}" Tests/Arm64/host.c "$obj"/*.o -ldl -lpthread -o "$work/host"
"$cc" -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -static Tests/Arm64/init.c -o "$work/init"

# The image: /init, /host, /runs and the libraries from Debian's packages.
image=$work/image
rm -rf "$image" && mkdir -p "$image/lib/aarch64-linux-gnu" "$image/usr/lib/aarch64-linux-gnu"
cp "$work/init" "$work/host" "$image/"
cp -a "$sysroot"/lib/ld-linux-aarch64.so.1 "$image/lib/"
cp -a "$sysroot"/lib/aarch64-linux-gnu/{ld-linux-aarch64.so.1,libc.so.6,liblzma.so.5*} "$image/lib/aarch64-linux-gnu/"
cp -a "$sysroot"/usr/lib/aarch64-linux-gnu/libunwind*.so.8* "$image/usr/lib/aarch64-linux-gnu/"
cat > "$image/runs" <<'RUNS'
default COLDSTART_HZ=1000 COLDSTART_LIMIT_MS=600000
fp COLDSTART_UNWINDER=fp COLDSTART_HZ=1000 COLDSTART_LIMIT_MS=600000
nowatch COLDSTART_WATCH=0 COLDSTART_HZ=1000 COLDSTART_LIMIT_MS=600000
signals COLDSTART_SAMPLER=signals COLDSTART_HZ=1000 COLDSTART_LIMIT_MS=600000
RUNS
(cd "$image" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initrd.gz"

# Boot. Two CPUs, so Coldstart's threads have one besides the host's.
console=$work/console.log
start=$(date +%s)
timeout 600 qemu-system-aarch64 -M virt -cpu max -smp 2 -m 512 -nographic -no-reboot -nic none \
    -kernel "$vmlinuz" -initrd "$work/initrd.gz" -append "console=ttyAMA0 panic=-1 quiet" > "$console" 2>&1 || true
echo "test-arm64: booted and ran in $(( $(date +%s) - start )) s under emulation" >&2

python3 scripts/check-arm64.py "$cli" "$console" "$work/out" "$image"
