#ifndef SLOW_INIT_H
#define SLOW_INIT_H
#include <stdint.h>
/// CPU time (CLOCK_THREAD_CPUTIME_ID, ns) the library's constructor burned.
uint64_t slow_init_constructor_cpu_ns(void);
/// Whether the constructor saw the process environment (PATH) and its name:
/// what a profiler that loads libraries before libc's constructor must keep.
int slow_init_saw_environment(void);
#endif
