// Placement only: the work is in CColdstart (cs_preinit, cs_before_main), so
// all mutable state stays in its one struct.
#include "coldstart_early.h"
#include <coldstart_startup.h>

// Runs before every shared library's DT_INIT/DT_INIT_ARRAY. libc's own
// constructors have not run, so the environment comes from envp.
static void coldstart_preinit(int argc, char **argv, char **envp) {
    cs_preinit(argc, argv, envp);
}

__attribute__((section(".preinit_array"), used))
static void (*const coldstart_preinit_entry)(int, char **, char **) = coldstart_preinit;

// Executable constructors run after every shared library's; 101 is the first
// priority user code may take, so this is the executable's first constructor.
__attribute__((constructor(101)))
static void coldstart_before_main(void) {
    cs_before_main();
}
