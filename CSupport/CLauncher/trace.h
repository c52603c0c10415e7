/*
 * What the tracer's files share (trace.c: threads, stops, the tick loop and
 * the public calls; traceunwind.c: the program's mappings, unwound over a
 * stack copy by CUnwind's unwinder; tracerecords.c: the perf records
 * written). Private to CLauncher; none of it is async-signal-safe.
 */
#ifndef CS_TRACE_H
#define CS_TRACE_H

#include "cs_launcher.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cs_unwind_core.h"

#if defined(__x86_64__) && CS_UW_SUPPORTED
#define CS_TRACE_SUPPORTED 1
#else
#define CS_TRACE_SUPPORTED 0
#endif

/* Bytes of stack copied per sample from the stack pointer up (perf's DWARF
 * mode copies 8 KiB by default; Swift's frames are larger than C's). */
#define STACK_COPY 16384
#define MAX_FRAMES 128
/* A sample stands for at most this many periods (64 ms at 4 kHz: a tracer
 * descheduled longer than that on a loaded machine loses the rest). */
#define MAX_COPIES 256

#if CS_TRACE_SUPPORTED

typedef struct {
    uint64_t start, end, offset;
    int writable, executable;
    int file;              /* index into files, -1 for anonymous mappings */
    int announced;         /* a PERF_RECORD_MMAP was written for it */
} trace_map;

typedef struct {
    char path[256];
    uint64_t load;         /* its mappings' address less file offset: one entry per load */
    cs_uw_image im;        /* the whole file, read-only, or the vDSO's copy */
    int parsed;
    int64_t bias;          /* load address less ELF vaddr */
    uint64_t text_start, text_end;
    unw_dyn_info_t di;
    int has_di;
} trace_file;

typedef struct {
    pid_t tid;
    int stat_fd, sched_fd;
    uint64_t credited_ns;  /* CPU time the samples so far stand for */
    int interrupted;       /* PTRACE_INTERRUPT sent, its stop not seen */
    int started;           /* its first stop was seen and let go */
    char comm[16];         /* the kernel's name at the last look ("" before the first) */
} trace_thread;

struct cs_trace {
    pid_t pid;
    uint64_t period_ns;
    uint64_t next_tick_ns;
    int execed;            /* sampling starts at exec */
    trace_thread *threads;
    int nthreads, cthreads;
    trace_map *maps;
    int nmaps, cmaps;
    trace_file *files;
    int nfiles, cfiles;
    /* The sample being unwound. */
    struct user_regs_struct regs;
    uint8_t stack[STACK_COPY];
    uint64_t stack_start;
    size_t stack_len;
    cs_records *out;
    uint64_t samples, unwind_failures;
    uint64_t stopped_ns;   /* the child's threads' time spent stopped by the sampler */
    cs_uw_walker unw;      /* over `regs` and `stack` (traceunwind.c) */
    int exit_status;
    int exited;
    struct rusage usage;
};

static inline uint64_t now_ns(void) { return cs_launch_monotonic_ns(); }

/* tracerecords.c: a sample, a mapping, a thread's name, a new thread. */
void trace_emit_sample(cs_trace *t, pid_t tid, uint64_t ns, const uint64_t *ips, int n);
void trace_emit_mmap(cs_trace *t, const trace_map *m, const char *path, uint64_t ns);
void trace_emit_comm(cs_trace *t, pid_t tid, const char *name, uint64_t ns);
void trace_emit_fork(cs_trace *t, pid_t tid, pid_t parent, uint64_t ns);

/* traceunwind.c: the mappings read again from /proc, the files forgotten
 * (an exec), libunwind loaded, and the stopped thread's copy unwound and
 * written `copies` times. */
void trace_refresh_maps(cs_trace *t);
void trace_forget_files(cs_trace *t);
int trace_load_unwinder(cs_trace *t, char *error, size_t error_len);
void trace_unwind_and_emit(cs_trace *t, pid_t tid, uint64_t ns, int copies);

#endif /* CS_TRACE_SUPPORTED */
#endif /* CS_TRACE_H */
