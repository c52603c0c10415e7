#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct cs_global cs_g;

static const int abandon_signals[] = {SIGINT, SIGTERM, SIGHUP};

// ---- small async-signal-safe helpers ----

int cs_gettid(void) { return (int)syscall(SYS_gettid); }

void cs_rusage_now(struct cs_rusage *out) {
    struct rusage ru;
    if (syscall(SYS_getrusage, RUSAGE_SELF, &ru) != 0) {
        memset(out, 0, sizeof *out);
        return;
    }
    out->minflt = (uint64_t)ru.ru_minflt;
    out->majflt = (uint64_t)ru.ru_majflt;
    out->nvcsw = (uint64_t)ru.ru_nvcsw;
    out->nivcsw = (uint64_t)ru.ru_nivcsw;
    out->utime_ns = (uint64_t)ru.ru_utime.tv_sec * 1000000000ull + (uint64_t)ru.ru_utime.tv_usec * 1000ull;
    out->stime_ns = (uint64_t)ru.ru_stime.tv_sec * 1000000000ull + (uint64_t)ru.ru_stime.tv_usec * 1000ull;
}

void cs_warn(const char *msg, const char *detail) {
    char line[PATH_MAX + 256];
    size_t n = 0;
    const char *parts[] = {"coldstart: ", msg, detail ? detail : "", "\n"};
    for (size_t p = 0; p < 4; p++) {
        size_t k = strlen(parts[p]);
        if (k > sizeof line - n) k = sizeof line - n;
        memcpy(line + n, parts[p], k);
        n += k;
    }
    ssize_t ignored = write(STDERR_FILENO, line, n);
    (void)ignored;
}

// Appends `s` to dst (capacity cap) and keeps it NUL-terminated; false if cut.
static bool append(char *dst, size_t cap, const char *s) {
    size_t n = strlen(dst), k = strlen(s);
    if (n + k + 1 > cap) return false;
    memcpy(dst + n, s, k + 1);
    return true;
}

const char *cs_env_get(char **envp, const char *name) {
    size_t n = strlen(name);
    for (char **e = envp; e && *e; e++) {
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
    }
    return NULL;
}

static const char *errno_text(int e) {
    switch (e) {
    case EACCES: return "permission denied";
    case ENOENT: return "no such directory";
    case EROFS: return "read-only file system";
    case ENOTDIR: return "not a directory";
    default: return "not writable";
    }
}

// ---- arming ----

// Fills cs_g.dest from COLDSTART / COLDSTART_DIR; false (with one warning) when
// the value is invalid or the directory is not writable.
static bool choose_destination(const char *value, const char *dir_env) {
    char dir[PATH_MAX] = "";
    char cwd[PATH_MAX];
    bool has_cwd = syscall(SYS_getcwd, cwd, sizeof cwd) > 0;
    size_t vlen = strlen(value);
    bool is_path = vlen > 5 && strcmp(value + vlen - 5, ".json") == 0;

    if (strcmp(value, "1") == 0) {
        const char *base = (dir_env && *dir_env) ? dir_env : NULL;
        if (base && base[0] == '/') append(dir, sizeof dir, base);
        else {
            // Relative to the start-up directory: the host may chdir later.
            if (!has_cwd) { cs_warn("cannot read the current directory; profiling off", NULL); return false; }
            append(dir, sizeof dir, cwd);
            if (base) { append(dir, sizeof dir, "/"); append(dir, sizeof dir, base); }
        }
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = 0;
        const char *name = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
        char pid[24];
        cs_format_u64((uint64_t)cs_g.pid, pid);
        bool ok = append(cs_g.dest, sizeof cs_g.dest, dir)
            && append(cs_g.dest, sizeof cs_g.dest, "/coldstart-")
            && append(cs_g.dest, sizeof cs_g.dest, *name ? name : "app")
            && append(cs_g.dest, sizeof cs_g.dest, "-")
            && append(cs_g.dest, sizeof cs_g.dest, pid)
            && append(cs_g.dest, sizeof cs_g.dest, ".json");
        if (!ok) { cs_warn("timeline path too long; profiling off", NULL); return false; }
    } else if (is_path) {
        if (value[0] != '/') {
            if (!has_cwd) { cs_warn("cannot read the current directory; profiling off", NULL); return false; }
            append(cs_g.dest, sizeof cs_g.dest, cwd);
            append(cs_g.dest, sizeof cs_g.dest, "/");
        }
        if (!append(cs_g.dest, sizeof cs_g.dest, value)) {
            cs_warn("timeline path too long; profiling off", NULL);
            return false;
        }
        memcpy(dir, cs_g.dest, sizeof dir);
        *strrchr(dir, '/') = 0;
        if (dir[0] == 0) append(dir, sizeof dir, "/");
    } else {
        cs_warn("COLDSTART must be 0, 1 or a path ending in .json; profiling off. Got: ", value);
        return false;
    }

    if (syscall(SYS_faccessat, AT_FDCWD, dir, W_OK | X_OK, 0) != 0) {
        char why[PATH_MAX + 64] = "";
        append(why, sizeof why, dir);
        append(why, sizeof why, " (");
        append(why, sizeof why, errno_text(errno));
        append(why, sizeof why, "); profiling off");
        cs_warn("cannot write the timeline to ", why);
        return false;
    }
    char pid[24];
    cs_format_u64((uint64_t)cs_g.pid, pid);
    append(cs_g.tmp, sizeof cs_g.tmp, cs_g.dest);
    append(cs_g.tmp, sizeof cs_g.tmp, ".tmp.");
    append(cs_g.tmp, sizeof cs_g.tmp, pid);
    return true;
}

static void *map_zeroed(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void arm(char **argv, char **envp, bool from_preinit) {
    const char *value = cs_env_get(envp, "COLDSTART");
    if (value == NULL || value[0] == 0 || strcmp(value, "0") == 0) return;

    uint64_t now = cs_monotonic_ns();
    cs_g.pid = (int)syscall(SYS_getpid);

    const char *spawn = cs_env_get(envp, "COLDSTART_SPAWN_NS");
    if (spawn && cs_parse_u64(spawn, &cs_g.spawn_boottime_ns) != 0) {
        cs_warn("ignoring COLDSTART_SPAWN_NS (not a CLOCK_BOOTTIME nanosecond count): ", spawn);
        cs_g.spawn_boottime_ns = 0;
    }
    const char *extend = cs_env_get(envp, "COLDSTART_EXTEND_MS");
    uint64_t extend_ms = 0;
    if (extend && (cs_parse_u64(extend, &extend_ms) != 0 || extend_ms > 600000)) {
        cs_warn("ignoring COLDSTART_EXTEND_MS (want 0 to 600000 ms): ", extend);
        extend_ms = 0;
    }
    cs_g.extend_ns = extend_ms * 1000000ull;

    if (!choose_destination(value, cs_env_get(envp, "COLDSTART_DIR"))) return;

    cs_g.events = map_zeroed(sizeof(struct cs_event) * CS_MAX_EVENTS);
    cs_g.names = map_zeroed(CS_NAME_BYTES);
    if (!cs_g.events || !cs_g.names) {
        cs_warn("cannot allocate the event log; profiling off", NULL);
        return;
    }
    if (from_preinit) {
        cs_g.t_earliest = now;
        cs_rusage_now(&cs_g.ru_earliest);
    }
    atomic_store(&cs_g.state, CS_RECORDING);
    // The watcher first: it then also watches the sampler's own set-up.
    cs_watch_start(envp, from_preinit);
    cs_sampler_start(argv, envp);
    if (from_preinit) {
        cs_g.t_setup_end = cs_monotonic_ns();
        cs_rusage_now(&cs_g.ru_setup_end);
    }
}

void cs_preinit(int argc, char **argv, char **envp) {
    (void)argc;
    cs_g.preinit_ran = true;
    arm(argv, envp, true);
}

static void on_abandon_signal(int sig) {
    int saved = errno;
    if ((int)syscall(SYS_getpid) == cs_g.pid) cs_end_launch(CS_END_SIGNAL, sig);
    // Restore the default action and re-raise: the signal is blocked while
    // this handler runs, so it is delivered as soon as the handler returns and
    // the process ends exactly as it would have without Coldstart.
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    raise(sig);
    errno = saved;
}

static void on_process_exit(int status, void *arg) {
    (void)arg;
    if ((int)syscall(SYS_getpid) != cs_g.pid) return;  // a forked child
    cs_end_launch(status == 0 ? CS_END_EXIT : CS_END_ERROR_EXIT, status);
}

void cs_before_main(void) {
    cs_g.before_main_ran = true;
    if (!cs_g.preinit_ran) {
        // Linked where .preinit_array does not run (a shared library): arm now,
        // without an earliest-init time.
        extern char **environ;
        arm(NULL, environ, false);
    }
    if (atomic_load(&cs_g.state) != CS_RECORDING) return;
    cs_watch_main_started();
    cs_g.t_main = cs_monotonic_ns();
    cs_sampler_after_initializers();
    cs_rusage_now(&cs_g.ru_main);
    long hz = sysconf(_SC_CLK_TCK);
    cs_g.ticks_per_second = hz > 0 ? (uint64_t)hz : 100;

    if (on_exit(on_process_exit, NULL) != 0)
        cs_warn("cannot register the exit handler; an exit before ready() will not be recorded", NULL);

    // Only over the default action: a handler or SIG_IGN the host chose stays.
    for (size_t i = 0; i < sizeof abandon_signals / sizeof *abandon_signals; i++) {
        int sig = abandon_signals[i];
        struct sigaction old;
        if (sigaction(sig, NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_abandon_signal;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        cs_g.owns_signal[sig] = sigaction(sig, &sa, NULL) == 0;
    }
}

static void release_signals(void) {
    for (size_t i = 0; i < sizeof abandon_signals / sizeof *abandon_signals; i++) {
        int sig = abandon_signals[i];
        if (!cs_g.owns_signal[sig]) continue;
        struct sigaction cur;
        // Leave it alone if the host has installed its own handler since.
        if (sigaction(sig, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == on_abandon_signal) {
            struct sigaction dfl;
            memset(&dfl, 0, sizeof dfl);
            dfl.sa_handler = SIG_DFL;
            sigaction(sig, &dfl, NULL);
        }
        cs_g.owns_signal[sig] = false;
    }
}

// ---- the launch end and the single writer ----

static void sleep_ns(uint64_t ns) {
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

// Becomes the writer if nobody is; otherwise waits (bounded) for the writer,
// unless the writer is this very thread (a signal interrupted its write).
static void write_once(void) {
    int me = cs_gettid();
    int expected = 0;
    if (atomic_compare_exchange_strong(&cs_g.writer_tid, &expected, me)) {
        cs_sampler_stop();
        if (cs_write_timeline() != 0)
            cs_warn("could not write the timeline to ", cs_g.dest);
        atomic_store(&cs_g.written, 1);
        cs_sampler_release();
        return;
    }
    if (expected == me) return;
    for (int i = 0; i < 5000 && !atomic_load(&cs_g.written); i++) sleep_ns(1000000);
}

void cs_end_launch(enum cs_end_reason reason, int status) {
    int expected = CS_RECORDING;
    if (atomic_compare_exchange_strong(&cs_g.state, &expected, CS_ENDED)) {
        cs_g.t_end = cs_monotonic_ns();
        cs_rusage_now(&cs_g.ru_end);
        cs_g.end_reason = reason;
        cs_g.end_status = status;
    } else if (expected == CS_OFF) {
        return;
    }
    write_once();
}

static void *ready_writer(void *arg) {
    (void)arg;
    if (cs_g.extend_ns) sleep_ns(cs_g.extend_ns);
    write_once();
    return NULL;
}

void cs_ready(void) {
    int expected = CS_RECORDING;
    if (!atomic_compare_exchange_strong(&cs_g.state, &expected, CS_ENDED)) return;
    cs_g.t_ready = cs_g.t_end = cs_monotonic_ns();
    cs_rusage_now(&cs_g.ru_end);
    cs_g.end_reason = CS_END_READY;
    if (cs_g.extend_ns == 0) cs_sampler_stop();
    release_signals();
    // Serialising can take milliseconds with many samples: do it off the
    // caller's thread. The exit handler finishes it if the process ends first.
    if (cs_start_thread(ready_writer, 256 * 1024) != 0 && cs_g.extend_ns == 0) write_once();
    // (Without the thread and with an extension, the exit handler writes it.)
}

int cs_start_thread(void *(*body)(void *), size_t stack_size) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);   // the new thread inherits it
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, stack_size);
    pthread_t thread;
    int rc = pthread_create(&thread, &attr, body, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

// ---- the event log ----

bool cs_is_recording(void) { return atomic_load_explicit(&cs_g.state, memory_order_relaxed) == CS_RECORDING; }

bool cs_is_enabled(void) {
    return atomic_load_explicit(&cs_g.state, memory_order_relaxed) != CS_OFF
        && !atomic_load_explicit(&cs_g.written, memory_order_relaxed);
}

static struct cs_event *reserve(uint32_t *slot) {
    uint32_t i = atomic_fetch_add(&cs_g.next_event, 1);
    if (i >= CS_MAX_EVENTS) {
        atomic_fetch_add(&cs_g.dropped_events, 1);
        return NULL;
    }
    *slot = i;
    return &cs_g.events[i];
}

static void fill(struct cs_event *ev, uint16_t kind, const char *name) {
    ev->kind = kind;
    ev->tid = cs_gettid();
    ev->ns = cs_monotonic_ns();
    cs_rusage_now(&ev->ru);
    if (name) {
        uint32_t n = (uint32_t)strnlen(name, CS_MAX_NAME);
        uint32_t off = atomic_fetch_add(&cs_g.names_used, n);
        if (off + n <= CS_NAME_BYTES) {
            memcpy(cs_g.names + off, name, n);
            ev->name_off = off;
            ev->name_len = n;
        } else {
            atomic_fetch_add(&cs_g.dropped_name_bytes, n);
        }
    }
}

// Marks and spans are accepted until the timeline is written: after ready()
// they are the extended launch.
static bool accepting(void) {
    int s = atomic_load_explicit(&cs_g.state, memory_order_relaxed);
    return s == CS_RECORDING || (s == CS_ENDED && cs_g.end_reason == CS_END_READY && atomic_load(&cs_g.writer_tid) == 0);
}

void cs_mark(const char *name, bool phase_boundary) {
    if (!accepting()) return;
    uint32_t slot;
    struct cs_event *ev = reserve(&slot);
    if (!ev) return;
    fill(ev, CS_EV_MARK, name);
    if (atomic_load(&cs_g.state) != CS_RECORDING) ev->flags |= CS_FLAG_EXTENDED;
    else if (phase_boundary) ev->flags |= CS_FLAG_BOUNDARY;
    atomic_store_explicit(&ev->committed, 1, memory_order_release);
}

uint32_t cs_span_begin(const char *name) {
    if (!accepting()) return 0;
    uint32_t slot;
    struct cs_event *ev = reserve(&slot);
    if (!ev) return 0;
    fill(ev, CS_EV_SPAN_BEGIN, name);
    if (atomic_load(&cs_g.state) != CS_RECORDING) ev->flags |= CS_FLAG_EXTENDED;
    atomic_store_explicit(&ev->committed, 1, memory_order_release);
    return slot + 1;
}

void cs_span_end(uint32_t id) {
    if (id == 0 || id > CS_MAX_EVENTS || !accepting()) return;
    uint32_t slot;
    struct cs_event *ev = reserve(&slot);
    if (!ev) return;
    fill(ev, CS_EV_SPAN_END, NULL);
    ev->begin_slot = id;
    atomic_store_explicit(&ev->committed, 1, memory_order_release);
}

void cs_set_swift_version(const char *version) {
    if (cs_g.swift_version[0] || atomic_load(&cs_g.state) == CS_OFF) return;
    size_t n = strnlen(version, sizeof cs_g.swift_version - 1);
    memcpy(cs_g.swift_version, version, n);
    cs_g.swift_version[n] = 0;
}
