// Arming (cs_preinit, cs_before_main) and the host's event log (marks and
// spans). Where the launch ends and who stops what: end.c.
#include "internal.h"

#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct cs_global cs_g;

// ---- arming ----

// "RLIMIT_NOFILE is <limit>: Coldstart keeps to a quarter of it (<share>
// descriptors) <tail>", on stderr.
static void warn_descriptors(const char *tail) {
    char msg[160] = "RLIMIT_NOFILE is ", num[24];
    cs_format_u64(cs_g.proc.fd_limit, num);
    cs_append(msg, sizeof msg, num);
    cs_append(msg, sizeof msg, ": Coldstart keeps to a quarter of it (");
    cs_format_u64(cs_fd_share(), num);
    cs_append(msg, sizeof msg, num);
    cs_append(msg, sizeof msg, " descriptors) ");
    cs_warn(msg, tail);
}

// Whether Coldstart's share of the descriptor limit holds what it needs
// (sys.h, CS_FD_SHARE): not even the timeline's (nothing opened, profiling
// off), or not the sampler's and watcher's for the main thread (both off).
_Static_assert(CS_FD_SHARE == 4 && CS_FD_RESERVE == 12, "the figures descriptors_suffice prints");
static bool descriptors_suffice(void) {
    if (cs_fd_share() < CS_FD_RESERVE) {
        warn_descriptors("and needs 12 (a limit of 48 or more); profiling off");
        return false;
    }
    if (cs_fd_allowance() < 3 && (cs_g.cfg.sampler != CS_SAMPLER_OFF || cs_g.cfg.watch)) {
        warn_descriptors("and needs 18 to sample and watch threads (a limit of 72 or more); no sampling, no off-CPU watch");
        cs_g.cfg.sampler = CS_SAMPLER_OFF;
        cs_g.cfg.watch = false;
    }
    return true;
}

// ---- the address-space share (sys.h, CS_VM_SHARE) ----

#define CS_MIB (1024ull * 1024)
// A thread's first malloc makes glibc reserve it an arena of its own:
// HEAP_MAX_SIZE, 64 MiB on a 64-bit system (PROT_NONE, but address space).
// Coldstart's threads malloc only through libunwind (its dlopen, its
// address spaces) and through pthread_create (the new thread's TLS vector),
// so the scan thread that starts the watcher's gets one, and so does the
// watcher that loads libunwind: the 64–128 MiB most of VmSize's growth was.
#define CS_VM_ARENA (64 * CS_MIB)
// A thread's guard page, static TLS and glibc's rounding, on each stack.
#define CS_VM_THREAD_EXTRA (64 * 1024ull)
// A perf ring: a host thread's 33 pages, a bridge CPU's up to 65 (smpclock.c,
// smpbridge.c); the main thread's (at most 257) and the first few are in
// the sampler's fixed part.
#define CS_VM_RING (65 * 4096ull)
#define CS_VM_MIN_RINGS 8
#define CS_VM_SAMPLE (sizeof(struct cs_sample) + CS_SMP_AVG_DEPTH * sizeof(uint64_t))

// What each part maps, in bytes of address space (most of it is touched
// only as used, so this is VmSize, not memory).
static uint64_t vm_base(void) {
    // The event log, the writer's thread, and slack for the small mappings
    // of the writer and the libraries' calls (a page here and there).
    return sizeof(struct cs_event) * CS_MAX_EVENTS + CS_NAME_BYTES + CS_WRITER_STACK + CS_VM_THREAD_EXTRA + 256 * 1024ull;
}

static uint64_t vm_watch(void) { return sizeof(struct cs_watch_buffers) + CS_WATCH_STACK + CS_VM_THREAD_EXTRA; }

static uint64_t vm_sampler(uint64_t samples) {
    // The scan thread, the helper's 16 KiB stack, one record, the main
    // thread's largest ring and CS_VM_MIN_RINGS more.
    return samples * CS_VM_SAMPLE + CS_SCAN_STACK + CS_VM_THREAD_EXTRA + 16 * 1024 + CS_SMP_REC_BYTES
        + 257 * 4096ull + CS_VM_MIN_RINGS * CS_VM_RING;
}

// What libunwind brings: the library (with libunwind.so and liblzma, ~0.4
// MiB mapped) on each thread that loads it, the sampler's pending records
// and page cache, and the arenas: the watcher's (its libunwind), the scan
// thread's (its libunwind, or the watcher's thread it starts). The offline
// unwinder loads none: its pool of registers and stack copies instead.
static uint64_t vm_libunwind(bool sampler, bool dwarf, bool raw, bool watch) {
    uint64_t b = watch ? CS_MIB + CS_VM_ARENA : 0;
    if (dwarf) b += CS_MIB + CS_SMP_PENDING_BYTES + sizeof(struct cs_unw_page) * CS_SMP_UNWIND_PAGES;
    if (raw) b += CS_SMP_RAW_BYTES;
    if (sampler && (dwarf || watch)) b += CS_VM_ARENA;
    return b;
}

// "RLIMIT_AS leaves <room> MiB: Coldstart keeps to a quarter of it (<share>
// MiB) <tail>", on stderr.
static void warn_address_space(const char *tail, uint64_t samples) {
    char msg[240] = "RLIMIT_AS leaves ", num[24];
    cs_format_u64(cs_g.proc.vm_room / CS_MIB, num);
    cs_append(msg, sizeof msg, num);
    cs_append(msg, sizeof msg, " MiB of address space: Coldstart keeps to a quarter of it (");
    cs_format_u64(cs_vm_share() / CS_MIB, num);
    cs_append(msg, sizeof msg, num);
    cs_append(msg, sizeof msg, " MiB) ");
    cs_append(msg, sizeof msg, tail);
    if (samples) {
        cs_format_u64(samples, num);
        cs_append(msg, sizeof msg, ", at most ");
        cs_append(msg, sizeof msg, num);
        cs_append(msg, sizeof msg, " samples");
    }
    cs_warn(msg, NULL);
}

// Whether Coldstart's share of the address space holds what it needs: all
// that is configured (nothing changes, nothing said), else the most of it
// that fits, in this order: no libunwind (no malloc arenas: frame-pointer
// stacks, no off-CPU stacks), fewer samples, no sampling, no watch, and
// last no profiling (false). One line on stderr says which. Each mapping's
// own failure still degrades on its own; this keeps those that succeed from
// taking the room the host's later allocations need.
static bool address_space_suffices(void) {
    uint64_t share = cs_vm_share();
    if (share == UINT64_MAX) return true;
    bool sampler = cs_g.cfg.sampler != CS_SAMPLER_OFF, watch = cs_g.cfg.watch;
    uint64_t base = vm_base(), with_watch = base + (watch ? vm_watch() : 0);
    uint64_t want = with_watch + (sampler ? vm_sampler(cs_g.cfg.max_samples) : 0)
        + vm_libunwind(sampler, sampler && !cs_g.cfg.unwind_fp && !cs_g.cfg.unwind_offline,
                       sampler && !cs_g.cfg.unwind_fp && cs_g.cfg.unwind_offline, watch);
    if (want <= share) {
        cs_g.proc.vm_max_rings = (uint32_t)((share - want) / CS_VM_RING + CS_VM_MIN_RINGS);
        return true;
    }
    if (base > share) {
        warn_address_space("and needs more for the event log and the writer; profiling off", 0);
        return false;
    }
    cs_g.proc.vm_no_arena = true;
    cs_g.cfg.unwind_fp = true;
    if (sampler && with_watch + vm_sampler(100) <= share) {
        uint64_t fit = (share - with_watch - vm_sampler(0)) / CS_VM_SAMPLE;
        uint64_t samples = fit < cs_g.cfg.max_samples ? fit : cs_g.cfg.max_samples;
        cs_g.proc.vm_max_rings = (uint32_t)((share - with_watch - vm_sampler(samples)) / CS_VM_RING + CS_VM_MIN_RINGS);
        warn_address_space(watch ? "and loads no libunwind (frame-pointer stacks, no off-CPU stacks)" : "and loads no libunwind (frame-pointer stacks)",
                           samples < cs_g.cfg.max_samples ? samples : 0);
        cs_g.cfg.max_samples = (uint32_t)samples;
        return true;
    }
    cs_g.cfg.sampler = CS_SAMPLER_OFF;
    if (watch && with_watch <= share) {
        warn_address_space(sampler ? "and needs more to sample threads; no sampling, no off-CPU stacks" : "and loads no libunwind (no off-CPU stacks)", 0);
        return true;
    }
    cs_g.cfg.watch = false;
    warn_address_space("and needs more to sample or watch threads; no sampling, no off-CPU watch", 0);
    return true;
}

// A child the host forks is not the launch (end.c ends nothing there), and
// must hold nothing of the parent's profiling: its perf events (mapped and
// re-enabled, they gave a child that dropped to another user its root
// parent's stacks, or through the bridge another user's), the watcher's
// /proc files of the parent's threads, the timeline's file and directory.
// Profiling is off in the child from its first instruction. System calls
// only: after a fork of a multithreaded process, only async-signal-safe
// code may run.
static void on_fork_child(void) {
    atomic_store(&cs_g.state, CS_OFF);
    cs_sampler_fork_child();
    cs_watch_fork_child();
    int fd = cs_out_take_prepared();
    if (fd >= 0) close(fd);
    cs_out_close_dir();
    cs_cpu_release();
}

static void arm(char **envp, bool from_preinit) {
    uint64_t now = cs_monotonic_ns();
    if (!cs_config_read(envp)) return;
    // Estimated even when a launcher gave the start, so that both are in the file.
    if (from_preinit) cs_estimate_start();
    // Within its share of the descriptor limit, or not at all: at a tiny
    // limit every descriptor is the host's.
    cs_fd_budget_read();
    if (!descriptors_suffice()) return;
    // Within its share of the address space, or not at all (RLIMIT_AS).
    cs_vm_budget_read();
    if (!address_space_suffices()) return;
    cs_g.proc.pid = (int)cs_syscall(SYS_getpid);
    cs_g.proc.euid = geteuid();
    // Under `unshare -p -f` without `--mount-proc`, /proc is the parent
    // namespace's: the ids it lists are not the ones system calls take, so
    // nothing found there may be sampled, moved or read by id (sys.h,
    // cs_proc_foreign). One readlink here, ~2–4 µs (the exact test reads
    // a status file, ~13 µs: Coldstart's first thread does it, for a pid
    // that happens to have the same number in both namespaces). The
    // watcher finds every thread there: off. The sampler keeps the main
    // thread, whose id is gettid's.
    if (cs_proc_note_ns(cs_g.proc.pid, cs_g.cfg.sampler != CS_SAMPLER_OFF)) cs_g.cfg.watch = false;
    // Growing the descriptor table to reach a high range waits for an RCU
    // grace period once the process has a second thread (8–14 ms measured):
    // do it now, while the process has one, or not at all.
    if (from_preinit && cs_g.proc.fd_limit >= 1024) cs_g.proc.high_fd = 768;
    if (!cs_out_choose(cs_g.cfg.value, cs_g.cfg.dir)) return;

    cs_g.log.events = cs_map_zeroed(sizeof(struct cs_event) * CS_MAX_EVENTS);
    cs_g.log.names = cs_map_zeroed(CS_NAME_BYTES);
    if (!cs_g.log.events || !cs_g.log.names) {
        cs_warn("cannot allocate the event log; profiling off", NULL);
        return;
    }
    if (from_preinit) {
        cs_g.launch.t_earliest = now;
        cs_rusage_now(&cs_g.launch.ru_earliest);
    }
    atomic_store(&cs_g.state, CS_RECORDING);
    if (pthread_atfork(cs_sampler_fork_prepare, cs_sampler_fork_parent, on_fork_child) != 0) {
        cs_warn("cannot register the fork handlers; profiling off", NULL);
        atomic_store(&cs_g.state, CS_OFF);
        return;
    }
    // One thread started here, not two (pthread_create costs this thread
    // 50–85 µs on a VM): the sampler's starts the watcher's, unless there is
    // none. That first thread of ours also has the writer prepare the write
    // once main runs (cs_timeline_prepare), off the host's threads; with
    // neither, the writer does it all at the end.
    cs_watch_start();
    cs_sampler_start();
    if (!cs_g.smp.started) {
        cs_g.watch.prepares_write = true;
        cs_watch_start_thread();
    } else if (cs_g.proc.vm_no_arena) {
        // From this thread, whose arena is the host's: from the scan thread
        // its TLS vector would be that thread's first malloc, and a 64 MiB
        // arena (address_space_suffices). ~50–85 µs of this thread, only
        // under a tight RLIMIT_AS.
        cs_watch_start_thread();
    }
    if (from_preinit) {
        cs_g.launch.t_setup_end = cs_monotonic_ns();
        cs_rusage_now(&cs_g.launch.ru_setup_end);
    }
}

void cs_preinit(int argc, char **argv, char **envp) {
    (void)argc;
    (void)argv;
    cs_g.proc.preinit_ran = true;
    arm(envp, true);
}

void cs_before_main(void) {
    cs_g.proc.before_main_ran = true;
    if (!cs_g.proc.preinit_ran) {
        // Linked where .preinit_array does not run (a shared library): arm now,
        // without an earliest-init time.
        extern char **environ;
        arm(environ, false);
    }
    if (atomic_load(&cs_g.state) != CS_RECORDING) return;
    // Stamped before the wakes: the scan thread, woken, loads the unwinder
    // at once, and on a loaded machine this thread may wait for a CPU.
    cs_g.launch.t_main = cs_monotonic_ns();
    cs_watch_main_started();
    cs_sampler_main_started();
    cs_rusage_now(&cs_g.launch.ru_main);
    long hz = sysconf(_SC_CLK_TCK);
    cs_g.proc.ticks_per_second = hz > 0 ? (uint64_t)hz : 100;
    cs_end_arm();
}

// ---- the event log ----

bool cs_is_enabled(void) {
    return atomic_load_explicit(&cs_g.state, memory_order_relaxed) != CS_OFF
        && !atomic_load_explicit(&cs_g.out.written, memory_order_relaxed);
}

static struct cs_event *reserve(uint32_t *slot) {
    uint32_t i = atomic_fetch_add(&cs_g.log.next_event, 1);
    if (i >= CS_MAX_EVENTS) {
        atomic_fetch_add(&cs_g.log.dropped_events, 1);
        return NULL;
    }
    *slot = i;
    return &cs_g.log.events[i];
}

static void fill(struct cs_event *ev, uint16_t kind, const char *name) {
    ev->kind = kind;
    ev->tid = cs_gettid();
    ev->ns = cs_monotonic_ns();
    struct timespec cpu;
    ev->thread_cpu_ns = clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0
        ? (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec : 0;
    cs_rusage_now(&ev->ru);
    if (name) {
        uint32_t n = (uint32_t)strnlen(name, CS_MAX_NAME);
        if (n == CS_MAX_NAME && name[n]) n = (uint32_t)cs_utf8_cut(name, n);   // cut: on a character
        uint32_t off = atomic_fetch_add(&cs_g.log.names_used, n);
        if (off + n <= CS_NAME_BYTES) {
            memcpy(cs_g.log.names + off, name, n);
            ev->name_off = off;
            ev->name_len = n;
        } else {
            atomic_fetch_add(&cs_g.log.dropped_name_bytes, n);
        }
    }
}

// Marks and spans are accepted until the timeline is written: after ready()
// they are the extended launch.
static bool accepting(void) {
    int s = atomic_load(&cs_g.state);
    return s == CS_RECORDING || (s == CS_ENDED && cs_g.launch.end_reason == CS_END_READY && atomic_load(&cs_g.out.writer_tid) == 0);
}

// Reserves a slot while the log accepts events, counted in `log.busy` until
// leave(): the log is unmapped after the timeline is written (end.c) only
// once no caller is between the two. Lock-free, async-signal-safe.
static struct cs_event *enter(uint32_t *slot) {
    atomic_fetch_add(&cs_g.log.busy, 1);
    struct cs_event *ev = accepting() ? reserve(slot) : NULL;
    if (!ev) atomic_fetch_sub(&cs_g.log.busy, 1);
    return ev;
}

static void leave(struct cs_event *ev) {
    atomic_store_explicit(&ev->committed, 1, memory_order_release);
    atomic_fetch_sub(&cs_g.log.busy, 1);
}

void cs_mark(const char *name, bool phase_boundary) {
    uint32_t slot;
    struct cs_event *ev = enter(&slot);
    if (!ev) return;
    fill(ev, CS_EV_MARK, name);
    if (atomic_load(&cs_g.state) != CS_RECORDING) ev->flags |= CS_FLAG_EXTENDED;
    else if (phase_boundary) ev->flags |= CS_FLAG_BOUNDARY;
    leave(ev);
}

uint32_t cs_span_begin(const char *name) {
    uint32_t slot;
    struct cs_event *ev = enter(&slot);
    if (!ev) return 0;
    fill(ev, CS_EV_SPAN_BEGIN, name);
    if (atomic_load(&cs_g.state) != CS_RECORDING) ev->flags |= CS_FLAG_EXTENDED;
    leave(ev);
    return slot + 1;
}

void cs_span_end(uint32_t id) {
    if (id == 0 || id > CS_MAX_EVENTS) return;
    uint32_t slot;
    struct cs_event *ev = enter(&slot);
    if (!ev) return;
    fill(ev, CS_EV_SPAN_END, NULL);
    ev->begin_slot = id;
    leave(ev);
}

void cs_set_swift_version(const char *version) {
    if (cs_g.proc.swift_version[0] || atomic_load(&cs_g.state) == CS_OFF) return;
    size_t n = strnlen(version, sizeof cs_g.proc.swift_version - 1);
    memcpy(cs_g.proc.swift_version, version, n);
    cs_g.proc.swift_version[n] = 0;
}
