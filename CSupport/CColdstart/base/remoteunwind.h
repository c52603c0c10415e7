// DWARF unwinding of a stack that is not the caller's, with libunwind's
// *remote* API over this process's own memory: the one unwinder of the
// sampler (a stack the kernel copied at a sample, unwound on Coldstart's scan
// thread or by the stopper) and of the watcher (a blocked thread's live
// stack, unwound on the watcher's thread). Never on a host thread's behalf
// inside one of its signals. Calls sys.c only.
#ifndef COLDSTART_REMOTEUNWIND_H
#define COLDSTART_REMOTEUNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch.h"

/// One page of own memory read with process_vm_readv.
struct cs_unw_page {
    uint64_t addr;             // page address; 0 = empty (page 0 is never
                               // mapped: an empty entry reads as unreadable)
    bool ok;
    unsigned char bytes[4096];
};

/// One user's unwinder: its own libunwind address space (and so its own
/// cache of unwind rules), the registers and stack of the unwind at hand,
/// and a page cache. Used by one thread at a time.
struct cs_unw_space {
    void *lib;                 // dlopen handle of libunwind-x86_64.so.8
    void *fn[6];               // its entry points
    void *as;                  // unw_addr_space_t, NULL: unusable
    // The stack being unwound: registers known (bit i: regs[i] valid) ...
    uint64_t regs[CS_UNW_NREGS];
    uint64_t have;
    // ... and, for a sampled stack, the copy the kernel made of
    // [stack_addr, stack_addr + stack_len). With a copy, nothing else of the
    // stack is read: the live stack has moved on since. Other memory (unwind
    // tables, code) is read only inside a loaded object.
    const unsigned char *stack;
    uint64_t stack_addr;
    uint32_t stack_len;
    // Without a copy (the watcher: the thread is blocked), memory anywhere.
    bool live;
    int pid;                   // this process (getpid is a system call each time)
    struct cs_unw_page *pages;
    int npages;                // a power of two
    uint64_t object_lo, object_hi;   // the loaded object read from last
};

/// Loads libunwind-x86_64.so.8 and makes `sp`'s address space over `pages`
/// (`npages` of them, a power of two, caller-owned). False when unavailable,
/// having said so with `what` on stderr (a library that cannot be loaded:
/// quietly when `what` is NULL, for a caller that tries again). Not async-signal-safe (dlopen): from Coldstart's
/// threads, once the host's library initializers have run.
bool cs_unw_open(struct cs_unw_space *sp, struct cs_unw_page *pages, int npages, bool live, const char *what);
/// Forgets the cached pages (the live stack may have changed, a library
/// may have been unloaded; it touches every page's entry). Async-signal-safe.
void cs_unw_forget(struct cs_unw_space *sp);
/// Up to `max` frames (leaf first) from sp->regs; *stuck: libunwind stopped
/// on an error rather than at the outermost frame, *last_sp the stack
/// pointer and *last_bp (unless NULL) the RBP of the last frame it reached. Lock-free lookups (_dl_find_object),
/// no malloc; libunwind's own locks are per address space, so this is
/// async-signal-safe for the one thread using `sp`.
int cs_unw_walk(struct cs_unw_space *sp, uint64_t *frames, int max, bool *stuck, uint64_t *last_sp, uint64_t *last_bp);
/// Reads `n` bytes of own memory through the page cache (the stack copy
/// first); false if unreadable or out of bounds. Async-signal-safe.
bool cs_unw_read(struct cs_unw_space *sp, uint64_t addr, void *dst, size_t n);

#endif
