#!/usr/bin/env bash
# make check-debian-kernel: a lone launch where Debian's own kernel refuses
# perf events. This machine's stock kernel treats perf_event_paranoid 3 like
# 2, so the unprivileged refusal is checked here on Debian's kernel instead
# (linux-image-cloud-amd64, its default paranoid 3), booted under
# qemu-system-x86_64 (TCG; KVM with CHECK_KVM=1) with an
# initramfs of a static /init (Tests/Arm64/init.c), the C test host
# (Tests/Arm64/host.c, built natively with CSupport/CColdstart) and this
# machine's libraries. The host runs once as root (perf opens: paranoid 3
# allows CAP_PERFMON) and once as nobody (perf refused with EACCES: the
# POSIX-timer fallback), and each timeline is read by this machine's CLI.
# Not part of `make test`: it downloads Debian's kernel (docs/containers.md).
# Usage: scripts/check-debian-kernel.sh COLDSTART_CLI
set -euo pipefail
cd "$(dirname "$0")/.."
cli=$1
work=.build/debian-kernel
mkdir -p "$work"
scripts/ensure-deps.sh qemu-system-x86 cpio

# Debian's kernel package, extracted, never installed (the meta-package
# names today's kernel).
debs=$work/debs sysroot=$work/sysroot
kernel_pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
[ -n "$kernel_pkg" ] || { apt-get update -qq >/dev/null; kernel_pkg=$(apt-cache depends linux-image-cloud-amd64 | awk '/Depends: linux-image-/ {print $2; exit}'); }
mkdir -p "$debs"
ls "$debs/${kernel_pkg}"_*.deb >/dev/null 2>&1 || (cd "$debs" && apt-get download -qq "$kernel_pkg" 2>/dev/null)
deb=$(ls "$debs/${kernel_pkg}"_*.deb | head -1)
kernel_version=$(dpkg-deb -f "$deb" Version)
rm -rf "$sysroot" && mkdir -p "$sysroot"
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$sysroot" ./boot
vmlinuz=$(ls "$sysroot"/boot/vmlinuz-* | head -1)

# The capture layer and the host, with the same warnings as `make check-c`.
obj=$work/obj
rm -rf "$obj" && mkdir -p "$obj"
C=CSupport/CColdstart
flags=(-std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror
       -I$C -I$C/base -I$C/sampler -I$C/watcher -I$C/writer -I$C/include -ICSupport/ColdstartEarly/include)
for f in $C/*.c $C/*/*.c CSupport/ColdstartEarly/early.c; do
    gcc "${flags[@]}" -c "$f" -o "$obj/$(basename "${f%.c}").o"
done
gcc "${flags[@]}" Tests/Arm64/host.c "$obj"/*.o -ldl -lpthread -o "$work/host"
gcc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -static -DGUEST_TAG='"coldstart-debian"' Tests/Arm64/init.c -o "$work/init"

# The image: /init, /host, and the libraries the host and the unwinder it
# loads need, from this machine (Debian 12, as the kernel is).
image=$work/image
rm -rf "$image" && mkdir -p "$image"
cp "$work/init" "$work/host" "$image/"
unwind=$(ls /usr/lib/x86_64-linux-gnu/libunwind-x86_64.so.8 /lib/x86_64-linux-gnu/libunwind-x86_64.so.8 2>/dev/null | head -1)
for lib in $( (ldd "$work/host"; ldd "$unwind"; echo "$unwind") | grep -o '/[^ ]*' | sort -u); do
    mkdir -p "$image$(dirname "$lib")"
    cp -L "$lib" "$image$lib"
done
cat > "$image/runs" <<'RUNS'
root COLDSTART_LIMIT_MS=600000
nobody uid=65534 COLDSTART_LIMIT_MS=600000
RUNS
(cd "$image" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initrd.gz"

# TCG by default: it boots and runs the guest in seconds. KVM only when
# asked (CHECK_KVM=1): this project's machine is itself a VM whose nested KVM
# stops the guest with an "emulation failure" after minutes of a CPU's
# system time (after which qemu waits forever), and that is left for TCG.
console=$work/console.log
boot() {
    timeout 900 qemu-system-x86_64 "$@" -smp 2 -m 512 -nographic -no-reboot -nic none \
        -kernel "$vmlinuz" -initrd "$work/initrd.gz" -append "console=ttyS0 panic=-1 quiet" > "$console" 2>&1 &
    local qemu=$!
    while kill -0 "$qemu" 2>/dev/null; do
        if grep -q "KVM internal error" "$console"; then kill "$qemu"; wait "$qemu" || true; return 1; fi
        sleep 1
    done
    wait "$qemu" || true
}
start=$(date +%s) how=KVM
if ! { [ "${CHECK_KVM:-0}" = 1 ] && boot -enable-kvm -cpu host; }; then
    [ "${CHECK_KVM:-0}" = 1 ] && echo "check-debian-kernel: KVM cannot run the guest here ($(grep -m1 "KVM internal error" "$console" || echo "no access to /dev/kvm")): TCG" >&2
    start=$(date +%s) how=TCG
    boot -accel tcg -cpu max
fi
echo "check-debian-kernel: $kernel_pkg $kernel_version booted and ran in $(( $(date +%s) - start )) s under $how" >&2

python3 - "$cli" "$console" "$work/out" "$image" "${kernel_pkg#linux-image-}" <<'PY'
import json, os, re, subprocess, sys

cli, console, out_dir, image, release = sys.argv[1:6]
log = open(console, errors="replace").read().replace("\r", "")
os.makedirs(out_dir, exist_ok=True)
tag = "=== coldstart-debian"
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    passed, failed = passed + bool(ok), failed + (not ok)
    print(("PASS " if ok else "FAIL ") + name + (f": {detail}" if detail else ""))


paranoid = re.search(tag + r" paranoid (-?\d+)", log)
check("Debian's kernel says perf_event_paranoid 3", paranoid and paranoid.group(1) == "3",
      f"read {paranoid.group(1) if paranoid else 'nothing'}; console: {console}")
probes = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in re.finditer(tag + r" perf (\S+) uid (\d+) errno (\d+)", log)}
check("as root, perf_event_open(task-clock) opens", probes.get("root") == (0, 0), str(probes.get("root")))
check("as nobody, perf_event_open(task-clock) is refused with EACCES", probes.get("nobody") == (65534, 13), str(probes.get("nobody")))
runs = {m.group(1): (int(m.group(2)), m.group(3))
        for m in re.finditer(tag + r" run (\S+) exit (\d+)\n(.*?)\n" + tag + " end", log, re.S)}
check("the guest ran the host as root and as nobody", set(runs) == {"root", "nobody"}, f"runs seen: {sorted(runs)}")
for run, (status, text) in sorted(runs.items()):
    path = os.path.join(out_dir, run + ".json")
    with open(path, "w") as f:
        f.write(text)
    check(f"{run}: the host exited 0", status == 0, f"exit {status}")
    try:
        recorded = (json.loads(text).get("coldstart") or {}).get("sampling") or {}
    except ValueError as error:
        check(f"{run}: the timeline is JSON", False, str(error))
        continue
    refused = recorded.get("perfRefused")
    proc = subprocess.run([cli, "report", "--json", "--root", image, path], capture_output=True, text=True)
    check(f"{run}: coldstart report reads the timeline", proc.returncode == 0, proc.stderr.strip()[:400])
    if proc.returncode != 0:
        continue
    sampling = (json.loads(proc.stdout).get("profile") or {}).get("sampling") or {}
    screen = subprocess.run([cli, "report", "--root", image, path], capture_output=True, text=True).stdout
    first = " ".join(" ".join(screen.split("\n")[:40]).split())
    check(f"{run}: the launch ran on Debian's kernel ({release})", f"kernel {release}" in screen)
    if run == "root":
        check(f"{run}: sampled with the perf task clock, perf not refused", sampling.get("clock") == "perf-task-clock" and refused is None,
              f"clock {sampling.get('clock')}, perfRefused {refused}, {sampling.get('samples')} samples")
        check(f"{run}: the first screen says nothing of a refusal", "Perf events refused" not in screen)
        continue
    check(f"{run}: the POSIX CPU-timer fallback", sampling.get("clock") == "posix-cpu-timer", f"clock {sampling.get('clock')}")
    check(f"{run}: perfRefused records EACCES at paranoid 3, no CAP_PERFMON",
          refused is not None and refused.get("errno") == 13 and refused.get("paranoid") == 3 and refused.get("capPerfmon") is False,
          str(refused))
    advice = first[first.find("Perf events refused"):][:200] if "Perf events refused" in first else "no 'Perf events refused'"
    check(f"{run}: the first 40 lines name the cause (perf_event_paranoid = 3)", "kernel.perf_event_paranoid = 3" in advice, advice)
    check(f"{run}: the first 40 lines give the sysctl remedy", "sudo sysctl kernel.perf_event_paranoid=2" in first, "" if "sudo sysctl" in first else first[:300])
    print(f"{run}: {sampling.get('samples')} samples, {sampling.get('effectiveHz')} Hz effective")
print(f"debian kernel: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
