// The leaf of the capture layer's call graph (sys.h): system helpers that
// call nothing else of Coldstart's.
#include "internal.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

int cs_gettid(void) { return (int)cs_syscall(SYS_gettid); }

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

const char *cs_env_get(char **envp, const char *name) {
    size_t n = strlen(name);
    for (char **e = envp; e && *e; e++) {
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
    }
    return NULL;
}

void cs_rusage_now(struct cs_rusage *out) {
    struct rusage ru;
    if (cs_syscall(SYS_getrusage, RUSAGE_SELF, &ru) != 0) {
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

uint64_t cs_clock_ns(clockid_t id) {
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t cs_monotonic_ns(void) { return cs_clock_ns(CLOCK_MONOTONIC); }

clockid_t cs_thread_cpu_clock(int tid) {
    return (clockid_t)((~(uint32_t)tid << 3) | 4u /* per thread */ | 2u /* CPUCLOCK_SCHED */);
}

bool cs_thread_cpu(int tid, uint64_t *ns) {
    struct timespec ts;
    if (tid <= 0 || clock_gettime(cs_thread_cpu_clock(tid), &ts) != 0) return false;
    *ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    return true;
}

void cs_futex_wait(_Atomic int *word, int val, uint64_t deadline_ns) {
    struct timespec ts = {(time_t)(deadline_ns / 1000000000ull), (long)(deadline_ns % 1000000000ull)};
    cs_syscall(SYS_futex, (int *)word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, val, deadline_ns ? &ts : NULL, NULL,
            FUTEX_BITSET_MATCH_ANY);
}

void cs_futex_wake(_Atomic int *word) {
    cs_syscall(SYS_futex, (int *)word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX, NULL, NULL, 0);
}

void cs_sleep_ns(uint64_t ns) {
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

void *cs_map_zeroed(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   // Linux 5.14
#endif

void cs_prefault(void *p, size_t bytes) {
    if (bytes == 0) return;
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)4095, hi = ((uintptr_t)p + bytes + 4095) & ~(uintptr_t)4095;
    if (madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE) == 0) return;
    // Touched by hand only on a kernel without the advice (EINVAL): ENOMEM
    // says the range is no longer mapped (the buffers went after ready()
    // while the scan thread was still starting: a host that crashed in 1 of
    // ~400 launches of HostPatterns term-chain after), EFAULT that it cannot
    // be written.
    if (errno != EINVAL) return;
    for (uintptr_t a = (uintptr_t)p; a < (uintptr_t)p + bytes; a = (a & ~(uintptr_t)4095) + 4096)
        __atomic_fetch_add((char *)a, 0, __ATOMIC_RELAXED);
}

void cs_fd_budget_read(void) {
    struct rlimit rl;
    cs_g.proc.fd_limit = getrlimit(RLIMIT_NOFILE, &rl) != 0 ? 1024 : rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur;
}

uint64_t cs_fd_share(void) { return cs_g.proc.fd_limit / CS_FD_SHARE; }

uint64_t cs_fd_allowance(void) {
    uint64_t share = cs_fd_share();
    return share > CS_FD_RESERVE ? (share - CS_FD_RESERVE) / 2 : 0;
}

void cs_vm_budget_read(void) {
    struct rlimit rl;
    cs_g.proc.vm_room = UINT64_MAX;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return;
    // The first field of statm: the process's size in pages, as VmSize.
    // Unreadable (no /proc): no room known, so none is taken.
    char buf[64];
    ssize_t n = cs_read_small_file("/proc/self/statm", buf, sizeof buf - 1);
    uint64_t pages = 0;
    ssize_t i = 0;
    for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++) pages = pages * 10 + (uint64_t)(buf[i] - '0');
    long page = sysconf(_SC_PAGESIZE);
    uint64_t used = pages * (uint64_t)(page > 0 ? page : 4096);
    cs_g.proc.vm_room = i == 0 || used >= rl.rlim_cur ? 0 : rl.rlim_cur - used;
}

uint64_t cs_vm_share(void) { return cs_g.proc.vm_room == UINT64_MAX ? UINT64_MAX : cs_g.proc.vm_room / CS_VM_SHARE; }

bool cs_out_of_descriptors(void) {
    int fd = open("/", O_PATH | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        return false;
    }
    return errno == EMFILE || errno == ENFILE;
}

bool cs_fd_is(int fd, uint64_t dev, uint64_t ino) {
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_dev == dev && (uint64_t)st.st_ino == ino;
}

int cs_open_known(int dirfd, const char *path, int flags, bool high, uint64_t *dev, uint64_t *ino) {
    struct stat st;
    *dev = *ino = 0;
    if (fstatat(dirfd, path, &st, 0) != 0) return -1;
    uint64_t d = (uint64_t)st.st_dev, i = (uint64_t)st.st_ino;
    int fd = openat(dirfd, path, flags | O_CLOEXEC);
    fd = high ? cs_fd_high(fd, d, i) : cs_fd_is(fd, d, i) ? fd : -1;
    if (fd >= 0) {
        *dev = d;
        *ino = i;
    }
    return fd;
}

ssize_t cs_read_small_file(const char *path, char *buf, size_t cap) {
    uint64_t dev, ino;
    int fd = cs_open_known(AT_FDCWD, path, O_RDONLY, false, &dev, &ino);
    if (fd < 0) return -1;
    ssize_t n;
    do n = read(fd, buf, cap); while (n < 0 && errno == EINTR);
    if (cs_fd_is(fd, dev, ino)) close(fd);
    return n;
}

int cs_fd_high(int fd, uint64_t dev, uint64_t ino) {
    if (!cs_fd_is(fd, dev, ino)) return -1;
    if (cs_g.proc.high_fd == 0) return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, cs_g.proc.high_fd);
    if (high < 0) return fd;
    // The host's dup2 onto `high` replaced our copy there: the low one stays.
    if (!cs_fd_is(high, dev, ino)) return fd;
    if (cs_fd_is(fd, dev, ino)) close(fd);
    return high;
}

void cs_restore_default(int sig) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
}

bool cs_safe_read(uintptr_t addr, void *buf, size_t len) {
    if (!cs_g.proc.can_read_safely) return false;
    struct iovec local = {buf, len};
    struct iovec remote = {(void *)addr, len};
    return cs_syscall(SYS_process_vm_readv, cs_g.proc.pid ? cs_g.proc.pid : (int)cs_syscall(SYS_getpid), &local, 1ul, &remote, 1ul, 0ul)
        == (long)len;
}

void cs_safe_read_init(void) {
    uint64_t probe = 0x5a5a, got = 0;
    cs_g.proc.can_read_safely = true;
    cs_g.proc.can_read_safely = cs_safe_read((uintptr_t)&probe, &got, sizeof got) && got == probe;
}

// ---- Coldstart's own threads ----

// `always`: the thread's first and last points, whatever the step. The
// last slot is kept for the last point. Only the thread itself writes its
// series. Async-signal-safe (two clock reads).
static void own_point(struct cs_own_thread *t, bool always) {
    uint32_t n = atomic_load_explicit(&t->npoints, memory_order_relaxed);
    if (n >= CS_OWN_POINTS || (!always && n >= CS_OWN_POINTS - 1)) return;
    uint64_t cpu = cs_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t step = (uint64_t)CS_OWN_STEP_NS << (n / (CS_OWN_POINTS / 8));
    if (!always && n > 0 && cpu - t->points[n - 1].cpu_ns < step) return;
    t->points[n] = (struct cs_own_point){cs_monotonic_ns(), cpu};
    atomic_store_explicit(&t->npoints, n + 1, memory_order_release);
}

static void *own_thread_main(void *arg) {
    struct cs_own_thread *slot = arg;
    own_point(slot, true);
    atomic_store(&slot->tid, cs_gettid());
    // After the tid is published: a scan that sees `starting` drop sees the tid.
    atomic_fetch_sub(&cs_g.own.starting, 1);
    void *r = slot->body(NULL);
    own_point(slot, true);
    atomic_store(&slot->cpu_ns, cs_clock_ns(CLOCK_THREAD_CPUTIME_ID));
    atomic_store(&slot->done, 1);
    return r;
}

void cs_own_tick(void) {
    int tid = cs_gettid();
    uint32_t n = atomic_load(&cs_g.own.count);
    for (uint32_t i = 0; i < n && i < CS_OWN_MAX; i++)
        if (atomic_load(&cs_g.own.threads[i].tid) == tid) {
            own_point(&cs_g.own.threads[i], false);
            return;
        }
}

static void init_attr(pthread_attr_t *attr, size_t stack_size) {
    pthread_attr_init(attr);
    pthread_attr_setdetachstate(attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(attr, stack_size);
}

int cs_start_thread(void *(*body)(void *), size_t stack_size) {
    uint32_t i = atomic_fetch_add(&cs_g.own.count, 1);
    if (i >= CS_OWN_MAX) {
        atomic_fetch_sub(&cs_g.own.count, 1);
        return EAGAIN;
    }
    struct cs_own_thread *slot = &cs_g.own.threads[i];
    slot->body = body;
    // Before the thread exists: a scan of /proc/self/task that finds it
    // before it knows its own id skips it (cs_own_thread) and looks again.
    atomic_fetch_add(&cs_g.own.starting, 1);
    // Every signal blocked but SIGPROF: the Swift runtime's crash handler
    // suspends each thread with a SIGPROF before it prints the backtrace
    // (a thread that blocks it is reported as "failed to suspend thread").
    // Nothing of ours sends SIGPROF to these threads.
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGPROF);
    pthread_sigmask(SIG_SETMASK, &all, &old);   // the new thread inherits it
    pthread_attr_t attr;
    init_attr(&attr, stack_size);
    // From a host thread, the new one starts on another CPU; so do the
    // threads and the helper it starts, until each calls cs_own_unplace.
    // Left to the kernel, it started on its creator's CPU even with another
    // one idle and preempted it there: its start (helper, watcher's thread,
    // clocks) cost the host's library initializers ~0.3 ms of a 12 ms tool
    // (docs/performance.md). The attribute makes glibc hold the new thread
    // until it is moved (~30 µs more of the creator's time).
    cpu_set_t elsewhere;
    unsigned cpu;
    bool place = !cs_own_thread(cs_gettid(), false) && cs_syscall(SYS_sched_getaffinity, 0, sizeof elsewhere, &elsewhere) > 0
        && cs_syscall(SYS_getcpu, &cpu, NULL, NULL) == 0 && cpu < CPU_SETSIZE;
    if (place) {
        // The first placement's: later readers never see it change.
        if (!atomic_load(&cs_g.own.placed)) cs_g.own.home = elsewhere;
        CPU_CLR(cpu, &elsewhere);
        place = CPU_COUNT(&elsewhere) > 0 && pthread_attr_setaffinity_np(&attr, sizeof elsewhere, &elsewhere) == 0;
        if (place) atomic_store(&cs_g.own.placed, true);
    }
    pthread_t thread;
    int rc = pthread_create(&thread, &attr, own_thread_main, slot);
    if (rc != 0 && place) {
        // Refused (a CPU gone meanwhile): where the kernel likes.
        pthread_attr_destroy(&attr);
        init_attr(&attr, stack_size);
        rc = pthread_create(&thread, &attr, own_thread_main, slot);
    }
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        atomic_fetch_sub(&cs_g.own.starting, 1);
        atomic_store(&slot->done, 1);   // the slot stays used, with no tid
    }
    return rc;
}

void cs_own_unplace(void) {
    if (atomic_load(&cs_g.own.placed)) sched_setaffinity(0, sizeof cs_g.own.home, &cs_g.own.home);
}

bool cs_own_thread(int tid, bool or_starting) {
    // `starting` first: see own_thread_main.
    if (or_starting && atomic_load(&cs_g.own.starting) > 0) return true;
    uint32_t n = atomic_load(&cs_g.own.count);
    for (uint32_t i = 0; i < n && i < CS_OWN_MAX; i++)
        if (atomic_load(&cs_g.own.threads[i].tid) == tid) return true;
    return false;
}

int cs_own_running(int except, int *tids) {
    if (atomic_load(&cs_g.own.starting) > 0) return -1;
    int n = 0;
    uint32_t count = atomic_load(&cs_g.own.count);
    for (uint32_t i = 0; i < count && i < CS_OWN_MAX; i++) {
        int tid = atomic_load(&cs_g.own.threads[i].tid);
        if (tid == 0 || tid == except || atomic_load(&cs_g.own.threads[i].done)) continue;
        if (tids) tids[n] = tid;
        n++;
    }
    return n;
}

// ---- a /proc of another pid namespace ----

bool cs_proc_foreign(void) { return atomic_load_explicit(&cs_g.proc.proc_foreign, memory_order_relaxed); }

uint64_t cs_own_cpu_ns(void) {
    uint64_t sum = 0;
    uint32_t n = atomic_load(&cs_g.own.count);
    for (uint32_t i = 0; i < n && i < CS_OWN_MAX; i++) {
        struct cs_own_thread *t = &cs_g.own.threads[i];
        uint64_t ns = 0;
        // A thread that has ended has no clock any more: its last reading.
        if (atomic_load(&t->done) || !cs_thread_cpu(atomic_load(&t->tid), &ns)) ns = atomic_load(&t->cpu_ns);
        sum += ns;
    }
    return sum;
}

size_t cs_note_build_id(const char *notes, size_t len, uint8_t *out, size_t cap) {
    for (size_t off = 0; off + sizeof(ElfW(Nhdr)) <= len;) {
        ElfW(Nhdr) nh;
        memcpy(&nh, notes + off, sizeof nh);
        size_t name_at = off + sizeof nh, desc_at = name_at + ((nh.n_namesz + 3) & ~3u);
        if (desc_at + nh.n_descsz > len) break;
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(notes + name_at, "GNU", 4) == 0) {
            size_t n = nh.n_descsz < cap ? nh.n_descsz : cap;
            memcpy(out, notes + desc_at, n);
            return n;
        }
        off = desc_at + ((nh.n_descsz + 3) & ~3u);
    }
    return 0;
}

void cs_hex(const uint8_t *bytes, size_t n, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    out[2 * n] = 0;
}

uint64_t cs_realtime_us(uint64_t mono_ns) {
    struct timespec rt, mono;
    if (clock_gettime(CLOCK_REALTIME, &rt) != 0 || clock_gettime(CLOCK_MONOTONIC, &mono) != 0) return 0;
    uint64_t rt_now = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
    uint64_t mono_now = (uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec;
    if (mono_now < mono_ns || rt_now < mono_now - mono_ns) return 0;
    return (rt_now - (mono_now - mono_ns)) / 1000;
}

bool cs_append(char *dst, size_t cap, const char *s) {
    size_t n = strlen(dst), k = strlen(s);
    if (n + k + 1 > cap) return false;
    memcpy(dst + n, s, k + 1);
    return true;
}

struct cs_dl_lookup {
    const char *name;
    void *found;
};

static uint32_t gnu_hash(const char *s) {
    uint32_t h = 5381;
    for (; *s; s++) h = h * 33 + (unsigned char)*s;
    return h;
}

// dl_iterate_phdr callback: the defined symbol `name` of libc.so.6 (or, for
// glibc before 2.34, libdl.so.2), found through its GNU hash table.
static int find_symbol(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct cs_dl_lookup *l = data;
    const char *slash = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    const char *file = slash ? slash + 1 : info->dlpi_name;
    if (!file || (strcmp(file, "libc.so.6") != 0 && strcmp(file, "libdl.so.2") != 0)) return 0;
    const ElfW(Dyn) *dyn = NULL;
    for (size_t i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) dyn = (const void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    uintptr_t base = info->dlpi_addr;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const uint32_t *gh = NULL;
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        uintptr_t v = dyn->d_un.d_ptr < base ? dyn->d_un.d_ptr + base : dyn->d_un.d_ptr;   // relocated in place or not
        if (dyn->d_tag == DT_SYMTAB) symtab = (const void *)v;
        else if (dyn->d_tag == DT_STRTAB) strtab = (const void *)v;
        else if (dyn->d_tag == DT_GNU_HASH) gh = (const void *)v;
    }
    if (!symtab || !strtab || !gh || gh[0] == 0) return 0;
    uint32_t nbuckets = gh[0], symoffset = gh[1], bloom_size = gh[2];
    const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(gh + 4) + bloom_size);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t h = gnu_hash(l->name);
    for (uint32_t i = buckets[h % nbuckets]; i >= symoffset; i++) {
        uint32_t h2 = chain[i - symoffset];
        const ElfW(Sym) *sym = &symtab[i];
        if ((h | 1) == (h2 | 1) && sym->st_shndx != SHN_UNDEF && sym->st_value != 0
            && strcmp(strtab + sym->st_name, l->name) == 0) {
            l->found = (void *)(base + sym->st_value);
            return 1;
        }
        if (h2 & 1) break;
    }
    return 0;
}

static void *loader_symbol(const char *name) {
    struct cs_dl_lookup l = {name, NULL};
    dl_iterate_phdr(find_symbol, &l);
    return l.found;
}

// The first object dl_iterate_phdr lists is the program (in a static link
// too): without a PT_INTERP it was linked statically.
static int main_has_interp(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    for (size_t i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_INTERP) *(bool *)data = true;
    return 1;
}

bool cs_dl_functions(struct cs_dl *dl) {
    bool dynamic = false;
    dl_iterate_phdr(main_has_interp, &dynamic);
    if (!dynamic) return false;
    *dl = (struct cs_dl){loader_symbol("dlopen"), loader_symbol("dlclose"), loader_symbol("dlsym"), loader_symbol("dlinfo")};
    if (!dl->open || !dl->close || !dl->sym || !dl->info) {
        cs_warn("cannot find dlopen in libc.so.6; no libunwind", NULL);
        return false;
    }
    return true;
}
