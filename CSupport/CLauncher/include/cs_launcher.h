#ifndef CS_LAUNCHER_H
#define CS_LAUNCHER_H

/*
 * The launcher side of `coldstart run`: starts a program with perf events
 * already attached, so it is sampled from its first instruction after exec
 * (the dynamic loader), and hands the raw ring-buffer records to Swift.
 *
 * Runs in the coldstart CLI only, never inside the profiled program. Swift
 * cannot call the variadic syscall(2), nor do the work between fork and exec
 * (nothing but async-signal-safe calls may run there), hence C.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#define CS_LAUNCH_MAX_CPUS 64

/* The sample identifier the tracer's records carry (PERF_SAMPLE_IDENTIFIER). */
#define CS_TRACE_SAMPLE_ID 1

/* cs_launch_start's flags. */
#define CS_LAUNCH_TRACE_IF_REFUSED 1  /* perf refused: sample by tracing the child instead */

typedef struct cs_trace cs_trace;

/* One launch. Zero it, then cs_launch_start; cs_launch_close frees it. */
typedef struct cs_launch {
    pid_t pid;
    int ncpus;                          /* rings in use (1 when per-task, not per-CPU) */
    int clock_fds[CS_LAUNCH_MAX_CPUS];  /* task-clock sampling events */
    int fault_fds[CS_LAUNCH_MAX_CPUS];  /* page-fault events (-1: not opened) */
    int name_fds[CS_LAUNCH_MAX_CPUS];   /* thread names: COMM and FORK records (-1: not opened) */
    void *rings[CS_LAUNCH_MAX_CPUS];
    size_t ring_data_bytes;
    uint64_t clock_ids[CS_LAUNCH_MAX_CPUS];  /* PERF_EVENT_IOC_ID of each event */
    uint64_t fault_ids[CS_LAUNCH_MAX_CPUS];
    int per_cpu;                        /* 1: one inherited event per CPU (threads followed) */
    int sampling;                       /* 1: events attached; 0: launched unsampled */
    int faults;                         /* 1: page-fault events attached */
    int kernel_samples;                 /* 1: the task clock samples kernel mode too */
    uint64_t release_ns;                /* CLOCK_MONOTONIC just before the child was let exec */
    int perf_errno;                     /* errno of the refused perf_event_open, 0 when it opened */
    int tracing;                        /* 1: sampled by tracing (perf refused), l->trace set */
    cs_trace *trace;
    char perf_error[256];               /* the perf refusal, when tracing replaced it */
    char error[256];                    /* why sampling is off, when it is */
} cs_launch;

/* Raw records drained from the rings, appended (malloc'd, grown as needed). */
typedef struct cs_records {
    uint8_t *bytes;
    size_t count;
    size_t capacity;
} cs_records;

/*
 * Forks, attaches the events to the child while it waits on a pipe, then
 * lets it exec `path`. `hz`: task-clock samples per CPU second (kernel mode
 * included when the kernel allows it, `l->kernel_samples`); `fault_period`:
 * one sample per that many page faults (0: no fault events). When the events
 * cannot be opened the program still runs, unsampled, and `l->error` says why.
 * `spawn_slot`, when not NULL, is an `envp` entry whose digits (after the
 * `=`) the child overwrites with CLOCK_BOOTTIME ns just before exec.
 * `stdout_fd` >= 0 becomes the child's stdout. With CS_LAUNCH_TRACE_IF_REFUSED
 * in `flags`, a refused perf_event_open (`l->perf_errno`) makes the launcher
 * trace the child instead (`l->tracing`, "Tracing" below): then wait with
 * cs_trace_wait, not waitpid. Returns 0, or an errno when
 * the program could not be started at all (then no child exists).
 * Not async-signal-safe (the parent side allocates nothing, the child side
 * only calls read, clock_gettime, dup2, sigprocmask, execve, _exit).
 */
int cs_launch_start(cs_launch *l, const char *path, char *const argv[], char *const envp[],
                    char *spawn_slot, int stdout_fd, unsigned hz, unsigned fault_period, unsigned flags);

/*
 * A reference launch for the loader's own time (no perf event, no LD_AUDIT
 * module): forks, and while the child waits on a pipe makes the FIFO
 * `fifo_prefix`.<child pid> (mode 0600) and opens its read end
 * non-blocking (`*fifo_fd`, close-on-exec, so the child never holds it),
 * then stamps `l->release_ns` and lets the child exec `path` with stdout
 * and stderr on /dev/null. `envp` is to set LD_DEBUG=statistics and
 * LD_DEBUG_OUTPUT=`fifo_prefix`: glibc's ld.so then opens that FIFO
 * (O_WRONLY, which returns at once because the reader is there) and writes
 * its statistics after relocating every object, before the first
 * initializer. When the FIFO cannot be made the child is killed before
 * exec. Only `l->pid` and `l->release_ns` are set. Returns 0, or an errno
 * (then no child is left). Not async-signal-safe (the child side only
 * calls read, sigaction, sigprocmask, dup2, clock_gettime, execve, _exit).
 */
int cs_launch_reference(cs_launch *l, const char *path, char *const argv[], char *const envp[], const char *fifo_prefix,
                        int *fifo_fd);

/*
 * Serves a reference launch for up to `timeout_ms`: reads what arrives on
 * `fifo_fd` (up to `cap` bytes kept in `text`, `*length` of them so far;
 * the rest read and dropped, so ld.so never blocks on a full pipe) and sets
 * `*arrival_ns` (CLOCK_MONOTONIC, when 0) as poll returns with the first
 * bytes. Keep calling it until the child is reaped, and keep `fifo_fd` open
 * until then: ld.so's exit statistics go to the same FIFO, and a FIFO
 * without a reader would kill the child with SIGPIPE. 1: the child was
 * reaped (`status` as waitpid's, `usage` wait4's); 0: still running.
 * Async-signal-safe (wait4, poll, read, clock_gettime, nanosleep).
 */
int cs_launch_statistics_wait(cs_launch *l, int fifo_fd, int timeout_ms, uint64_t *arrival_ns, char *text, size_t cap,
                              size_t *length, int *status, struct rusage *usage);

/*
 * Moves every complete record out of the rings into `out` (records keep
 * their perf_event_header; a record split by the ring's wrap is joined).
 * Returns the number of bytes added, or -1 when out of memory (the rings are
 * then left as they are). Not async-signal-safe (realloc).
 */
long cs_launch_drain(cs_launch *l, cs_records *out);

/* Waits up to `timeout_ms` for a ring to fill past its wake-up mark.
 * Async-signal-safe (poll or nanosleep only). */
void cs_launch_poll(cs_launch *l, int timeout_ms);

/* Stops the task-clock sampling (page faults stay counted).
 * Async-signal-safe (ioctl only). */
void cs_launch_stop_sampling(cs_launch *l);

/* Stops the events, unmaps the rings, closes the descriptors.
 * Async-signal-safe (ioctl, munmap, close). */
void cs_launch_close(cs_launch *l);

/* Makes room for `more` bytes after `out->count`: 0, or -1 when out of
 * memory (`out` unchanged). Not async-signal-safe (realloc). */
int cs_records_reserve(cs_records *out, size_t more);

/* Frees the drained records. Not async-signal-safe (free). */
void cs_records_free(cs_records *r);

/*
 * 1 when the file at `path` contains the bytes of `needle` (memmem over a
 * read-only mapping; Swift's Glibc module does not export memmem), 0 when
 * not or unreadable. Async-signal-safe (open, fstat, mmap, memmem, munmap,
 * close), though only the CLI calls it.
 */
int cs_file_contains(const char *path, const char *needle);

/*
 * Opens a counting (never sampling) task-clock event on the calling thread
 * and returns its descriptor, or -1. While any task-bound perf event exists
 * the kernel keeps its scheduler hooks switched on, so a profiled child's
 * first perf_event_open costs microseconds instead of the 6-25 ms a quiet
 * machine charges (docs/performance.md): `coldstart run` holds one for its
 * whole batch. Close the descriptor to let it go. Async-signal-safe (one
 * system call), though only the CLI and the tests call it.
 */
int cs_launch_keep_perf_warm(void);

/* 0 when this process may open a task-clock event on itself, else the errno
 * perf_event_open gave (EPERM from a seccomp filter or perf_event_paranoid,
 * EACCES, ENOSYS). Async-signal-safe (perf_event_open, close). */
int cs_launch_perf_errno(void);

/* 1 when this process runs in secure-execution mode (AT_SECURE: it gained
 * privilege at exec, e.g. a file capability), 0 otherwise.
 * Async-signal-safe (getauxval reads memory only). */
int cs_launch_secure_execution(void);

/* The environment strings the kernel put on this process's stack at exec
 * (`NAME=value\0` each), which glibc's secure-execution clean-up leaves in
 * place while it removes their pointers from `environ`; /proc/self/environ
 * would show them too, but a process raised by a file capability may not
 * open its own. Copies up to `cap` bytes into `buf` (none when NULL) and
 * returns their full size, or -1. Not async-signal-safe (sscanf). */
long cs_launch_original_environment(char *buf, size_t cap);

/*
 * Tracing (trace.c): where perf_event_open is refused (a container's seccomp
 * profile, perf_event_paranoid 3/4 without CAP_PERFMON), the launcher, as
 * the program's parent, traces it (PTRACE_SEIZE before exec, every thread
 * from its clone) and interrupts each running thread once per 1/hz of wall
 * time, taking one sample per 1/hz of the thread's CPU time (schedstat, exact
 * while it is stopped; a late tracer's sample counts for each period it
 * covers, up to 256): registers and 16 KiB of stack, unwound with
 * libunwind's DWARF CFI (libunwind-x86_64.so.8, loaded at run time) while
 * the thread runs on. Samples and mappings land in the records as the perf
 * path's do (PERF_RECORD_SAMPLE with CS_TRACE_SAMPLE_ID, PERF_RECORD_MMAP,
 * and for thread names PERF_RECORD_FORK at each clone and PERF_RECORD_COMM
 * when a look at a thread's stat, once a period, finds a new name).
 * Signals are given back at their delivery stop, group stops kept, and a
 * system call an interrupt ended with EINTR restarted. x86_64 only.
 * None of these is async-signal-safe (malloc, stdio).
 */
/* Seizes `l->pid` (forked, not yet released): 0, or -1 with `l->error` set. */
int cs_trace_attach(cs_launch *l, unsigned hz);
/* Samples and serves the child for up to `timeout_ms`, appending records to
 * `out`. 1: the program ended (`status` as waitpid's, `usage` wait4's);
 * 0: still running; -1: not tracing. */
int cs_trace_wait(cs_launch *l, cs_records *out, int timeout_ms, int *status, struct rusage *usage);
/* Samples taken, samples whose unwind failed at the leaf, and the time the
 * program's threads spent stopped for samples (ns). */
void cs_trace_counts(const cs_launch *l, uint64_t *samples, uint64_t *unwind_failures, uint64_t *stopped_ns);
void cs_trace_free(cs_trace *t);

/*
 * The kernel's own perf code, from /proc/kallsyms: [start, end) of every
 * text symbol named perf_*, __perf_* or ___perf_* (the event output, the
 * software events, the ring buffer), each ending where the next symbol
 * begins, sorted. A kernel-mode sample of the program whose address is in
 * one is time the kernel spent writing the launcher's records (a page-fault
 * record per fault, an mmap record per mapping) on the program's thread.
 * Writes up to `cap` pairs into `ranges` (start, end, start, end, ...) and
 * returns their count, or -1 when the file cannot be read or shows no
 * addresses (kptr_restrict: zeros for an unprivileged reader). Not
 * async-signal-safe (malloc, stdio).
 */
long cs_launch_kernel_perf_ranges(uint64_t *ranges, size_t cap);

/* CLOCK_MONOTONIC / CLOCK_BOOTTIME in ns, as the rest of the launcher reads
 * them. Async-signal-safe (clock_gettime). */
uint64_t cs_launch_monotonic_ns(void);
uint64_t cs_launch_boottime_ns(void);

#endif
