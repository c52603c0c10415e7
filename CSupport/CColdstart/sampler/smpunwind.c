// How a sample's stack becomes frames (smp.h).
//
// By default the kernel takes every sample: at each overflow of a thread's
// task clock it copies the thread's user registers and the top
// `stack_bytes` of its user stack into the event's ring, with its own
// frame-pointer call chain, as `perf record --call-graph dwarf` does. No
// signal is sent, no Coldstart code runs on the host's thread. The scan
// thread (or the stopper, for the last few) unwinds the copy with DWARF CFI,
// libunwind's remote API over the copy (remoteunwind.c): code without frame
// pointers (the loader, libc, Debian's C libraries, libdispatch) keeps its
// callers. Where the copy ends before the outermost frame, the kernel's
// frame-pointer chain, if it passes through the last frame the CFI reached,
// gives the rest; where the CFI fails at once, the chain is the stack.
//
// libunwind-x86_64.so.8 (-aarch64.so.8) is loaded once main runs (a dlopen among the host's
// library initializers could run libc's initializers a second time,
// concurrently); the samples before wait in `pending`, as the kernel wrote
// them.
//
// The signal fallback (where the kernel cannot record stacks: a POSIX timer
// when perf_event_open is refused, a ring the locked-memory limit refuses)
// walks frame pointers in the handler: no library call, no descriptor, a
// few hundred bytes of the interrupted thread's stack, and only inside the
// readable range between the stack pointer and the first unreadable page
// above it (probed once per thread with process_vm_readv), so a broken
// frame chain ends the walk instead of faulting.
#include "internal.h"

#include <string.h>

#define PAGE 4096ul
#define CS_STACK_PROBE_MAX (1024 * 1024)   // readable bytes looked for above sp

// ---- the DWARF unwinder, off the host's threads ----

bool cs_unwind_load(bool last_try) {
#if !CS_ARCH_SUPPORTED
    (void)last_try;
    return false;
#else
    if (!cs_unw_open(&S->unw, S->unw_pages, CS_SMP_UNWIND_PAGES, false, last_try ? "sampled stacks walk frame pointers" : NULL))
        return false;
    S->unw_ready_ns = cs_monotonic_ns();
    atomic_store_explicit(&S->unw_verified, 1, memory_order_release);
    return true;
#endif
}

// Where the kernel's frame-pointer chain goes on from the last frame the CFI
// reached (the copy ended, or its CFI did): the index of that frame's caller
// in `chain`, or 0. chain[i] (i ≥ 1) is the return address in the frame
// record at r(i−1), r0 being the sampled RBP and r(i) = [r(i−1)]; the
// records inside the copy give those addresses, up to the first outside it.
// A last frame that keeps a frame pointer has its record at its RBP
// (`last_bp`): its caller is chain[i + 1] where r(i) is that. Failing that,
// the chain's own copy of the last return address, at that depth or
// shallower (the chain skips callers of frames without a frame pointer),
// the deepest (a recursion repeats one address).
static int chain_join(uint64_t bp, const unsigned char *stack, uint64_t sp, uint32_t len, uint64_t last_bp, uint64_t last_ip,
                      const uint64_t *chain, int nchain, int depth) {
    for (int i = 0; i + 1 < nchain; i++) {
        if (bp == last_bp) return i + 1;
        if (bp < sp || bp + 8 > sp + len || (bp & 7)) break;
        uint64_t next;
        memcpy(&next, stack + (bp - sp), 8);
        if (next <= bp) break;
        bp = next;
    }
    for (int j = depth - 1 < nchain - 1 ? depth - 1 : nchain - 1; j >= 1; j--)
        if (chain[j] == last_ip) return j + 1;
    return 0;
}

int cs_unwind_sample(const uint64_t *regs, const unsigned char *stack, uint32_t len, const uint64_t *chain, int nchain,
                     uint64_t *out, int cap, uint16_t *flags) {
    int n = 0;
    *flags = 0;
    if (regs && atomic_load_explicit(&S->unw_verified, memory_order_acquire)) {
        uint64_t t0 = cs_clock_ns(CLOCK_THREAD_CPUTIME_ID);
        struct cs_unw_space *u = &S->unw;
        for (int i = 0; i < CS_PERF_NREGS; i++) u->regs[cs_perf_reg_to_unw(i)] = regs[i];
        u->have = (1ull << CS_UNW_NREGS) - 1;
        u->stack = stack;
        u->stack_addr = regs[CS_PERF_SP];
        u->stack_len = len;
        bool stuck;
        uint64_t last_sp = 0, last_bp = 0;
        n = cs_unw_walk(u, out, cap, &stuck, &last_sp, &last_bp);
        u->stack = NULL;
        S->unwind_ns += cs_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
        if (n >= 2) {
            *flags = CS_SMP_DWARF;
            S->dwarf_samples++;
            if (!stuck || n >= cap) return n;
            int j = chain_join(regs[CS_PERF_FP], stack, regs[CS_PERF_SP], len, last_bp, out[n - 1], chain, nchain, n);
            if (j > 0) {
                for (int k = j; k < nchain && n < cap; k++) out[n++] = chain[k];
                *flags |= CS_SMP_CHAIN_TAIL;
            }
            return n;
        }
        atomic_fetch_add(&S->unwind_failures, 1);
    }
    n = 0;
    for (int j = 0; j < nchain && n < cap; j++) out[n++] = chain[j];
    return n;
}

// ---- the signal fallback's frame-pointer walk ----

bool cs_unwind_stack_room(size_t bytes) {
    char probe;
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    return here > bytes && cs_safe_read(here - bytes, &probe, 1);
}

// Finds the readable extent above `sp` for this thread's frame-pointer walk.
static void probe_stack(struct cs_smp_thread *t, uintptr_t sp) {
    uintptr_t lo = sp & ~(PAGE - 1), hi = lo;
    char byte;
    while (hi - lo < CS_STACK_PROBE_MAX && cs_safe_read(hi, &byte, 1)) hi += PAGE;
    t->stack_lo = lo;
    t->stack_hi = hi;
}

int cs_unwind(void *ucv, struct cs_smp_thread *t, uint64_t *out, int cap) {
#if CS_ARCH_SUPPORTED
    uintptr_t pc, sp, fp;
    cs_ucontext_regs(ucv, &pc, &sp, &fp);
    out[0] = pc;
    int n = 1;
    if (!t) return n;
    if (sp < t->stack_lo || sp >= t->stack_hi) probe_stack(t, sp);
    while (n < cap) {
        if (fp < sp || (fp & 7) || fp < t->stack_lo || fp + 16 > t->stack_hi) break;
        uintptr_t next = ((const uintptr_t *)fp)[0], ret = cs_strip_return_address(((const uintptr_t *)fp)[1]);
        if (ret < PAGE) break;
        out[n++] = ret;
        if (next <= fp) break;
        fp = next;
    }
    return n;
#else
    (void)ucv; (void)t; (void)out; (void)cap;
    return 0;
#endif
}
