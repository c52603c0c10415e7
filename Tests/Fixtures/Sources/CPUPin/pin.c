#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // sched_setaffinity, CPU_SET
#endif
#include "cpu_pin.h"

#include <sched.h>

static cpu_set_t initial;
static int have_initial;

// The process's CPUs before any thread is pinned.
__attribute__((constructor)) static void remember_initial(void) {
    have_initial = sched_getaffinity(0, sizeof initial, &initial) == 0;
}

int cpu_pin_current(void) { return sched_getcpu(); }

int cpu_pin_to(int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return sched_setaffinity(0, sizeof one, &one);
}

int cpu_pin_release(void) {
    if (!have_initial) return -1;
    return sched_setaffinity(0, sizeof initial, &initial);
}
