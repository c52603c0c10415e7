// The fuzz worker's entry point (FuzzTests). The fuzzing test runs this test
// bundle again as a child with COLDSTART_FUZZ_WORKER set; this constructor
// then runs the worker (coldstart_fuzz_worker, Swift, in FuzzTests.swift)
// and exits with its status before XCTest's main. So the worker is no
// XCTest method: a test run neither runs it nor counts it as skipped.
// The executable's constructors run after its libraries' and after the
// Swift runtime has registered the bundle's metadata (swiftrt.o's
// constructor, linked first), so Swift code may run here.
#include <stdlib.h>

// Weak: a program that linked this target without the tests has no worker.
extern int coldstart_fuzz_worker(void) __attribute__((weak));

__attribute__((constructor)) static void fuzz_worker_entry(void) {
    if (getenv("COLDSTART_FUZZ_WORKER") && coldstart_fuzz_worker) exit(coldstart_fuzz_worker());
}
