// What the writer does ahead of the launch's end, from the first of
// Coldstart's threads once main runs (the sampler's scan thread, or the
// watcher's with no sampler: core.c), so that the host's exit waits for
// none of it: the timeline's file made, the facts the plan needs read, the
// writer's scratch faulted in (docs/performance.md, "A short command-line
// tool").
#include "internal.h"

#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

void cs_timeline_prepare(void) {
    cs_out_prepare();
    cs_cpu_prepare();
    // What the plan needs that cannot change before the end (the process
    // start, the executable, uname's kernel release and host name): two /proc
    // reads and a uname off the host's exit. Only the first caller fills it;
    // the writer reads it once it is published.
    struct cs_out_early_facts *ef = &cs_g.out.facts;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&cs_g.out.facts_claimed, &expected, 1)) return;
    ef->start_rc = cs_process_start(&ef->start, &ef->without_launcher, &ef->boot_off);
    // A previous run's timeline at the destination goes now, not when this
    // one replaces it at the end: freeing its blocks was a synchronous
    // discard (~1 ms) on the host's exit on a file system mounted with
    // `discard`.
    // Older than the earliest the process can have started.
    if (ef->start_rc == 0 && ef->start.ns > ef->start.precision_ns)
        cs_out_remove_previous(cs_realtime_us(ef->start.ns - ef->start.precision_ns));
    ssize_t n = readlink("/proc/self/exe", ef->exe, sizeof ef->exe - 1);
    ef->exe[n > 0 ? n : 0] = 0;
    if (uname(&ef->uts) != 0) strcpy(ef->uts.release, "unknown");
    atomic_store_explicit(&cs_g.out.facts_ready, true, memory_order_release);
    // The writer's scratch: each first touch at the end was a page fault on
    // the host's exit.
    cs_prefault(&cs_g.out.plan, sizeof cs_g.out.plan);
    cs_prefault(cs_g.out.span_end_of, sizeof cs_g.out.span_end_of);
    cs_prefault(cs_g.out.thread_names, sizeof cs_g.out.thread_names);
    cs_prefault(cs_g.out.jw.buf, sizeof cs_g.out.jw.buf);
    cs_prefault(&cs_g.out.cpus, sizeof cs_g.out.cpus);
}
