// Off-CPU stacks: unwinding another thread of this process, which is blocked
// in the kernel, from the only registers the kernel tells us without ptrace —
// the user stack pointer and program counter in /proc/.../syscall.
//
// The remote unwinder the sampler uses too (remoteunwind.c), over the live
// stack (the thread is blocked: cs_watch_blocked_stack checks it stayed so).
// Only the PC and SP are known; DWARF CFI recovers the caller's registers as
// it goes. A function that keeps a frame pointer finds its caller through
// it (rbp, x29), which /proc does not give: when the unwinder stops there,
// the first frame record (saved frame pointer, return address, checked two
// deep) above that frame's stack pointer is taken as the frame pointer and
// the stack unwound again (cs_offcpu_unwind). A plain frame-pointer walk
// from the reported SP would lose the C library's frames, which keep none.
//
// Runs only on the watcher thread (not async-signal-safe; dlopen is deferred
// until the host's library initializers have finished).
#include "internal.h"

#include <link.h>
#include <string.h>

bool cs_offcpu_ready(void) {
    struct cs_watch *wt = &cs_g.watch;
    if (wt->unwind_state) return wt->unwind_state > 0;
    wt->unwind_state = -1;
    // Left out by arming under a tight RLIMIT_AS (core.c said so): loading
    // it would give this thread a malloc arena.
    if (cs_g.proc.vm_no_arena) return false;
    if (!cs_unw_open(&wt->unw, wt->buf->pages, CS_WATCH_UNWIND_PAGES, true, "off-CPU time will have no stacks")) return false;
    wt->unwind_state = 1;
    return true;
}

static int in_executable(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    uint64_t addr = *(uint64_t *)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        uint64_t start = info->dlpi_addr + p->p_vaddr;
        if (p->p_type == PT_LOAD && (p->p_flags & PF_X) && addr >= start && addr < start + p->p_memsz) return 1;
    }
    return 0;
}

// Whether `ret` can be a return address: it lies in loaded code, right after
// a call (x86_64: E8 rel32, or FF /2 in its 2-, 3-, 6- or 7-byte forms;
// aarch64: BL, BLR, or the pointer-authenticating BLRAA/BLRAB forms).
static bool return_address(uint64_t ret) {
#if defined(__x86_64__)
    unsigned char b[8];
    if (ret < 4096 || !cs_unw_read(&cs_g.watch.unw, ret - 8, b, 8)) return false;
    bool call = b[3] == 0xE8;
    static const int back[] = {2, 3, 6, 7};
    for (int i = 0; i < 4 && !call; i++)
        call = b[8 - back[i]] == 0xFF && ((b[9 - back[i]] >> 3) & 7) == 2;
#else
    uint32_t insn;
    if (ret < 4096 || (ret & 3) || !cs_unw_read(&cs_g.watch.unw, ret - 4, &insn, 4)) return false;
    bool call = (insn & 0xFC000000u) == 0x94000000u         // BL
                || (insn & 0xFFFFFC1Fu) == 0xD63F0000u      // BLR
                || (insn & 0xFEFFF800u) == 0xD63F0800u;     // BLRAA, BLRAB, BLRAAZ, BLRABZ
#endif
    return call && dl_iterate_phdr(in_executable, &ret) == 1;
}

// A frame record at r ([r] the caller's frame pointer, [r + 8] the return
// address: rbp/ret on x86_64, x29/x30 on aarch64), checked two deep: a stale
// pair on the stack rarely chains.
static bool frame_record(uint64_t r, int depth) {
    uint64_t pair[2];
    if (!cs_unw_read(&cs_g.watch.unw, r, &pair[0], 8) || !cs_unw_read(&cs_g.watch.unw, r + 8, &pair[1], 8)) return false;
    pair[1] = cs_strip_return_address(pair[1]);
    if (!return_address(pair[1])) return false;
    if (pair[0] == 0 || depth == 0) return true;
    return pair[0] > r && pair[0] - r < (8u << 20) && (pair[0] & 7) == 0 && frame_record(pair[0], depth - 1);
}

int cs_offcpu_unwind(uint64_t pc, uint64_t sp, uint64_t *frames, int max) {
    struct cs_watch *wt = &cs_g.watch;
    if (wt->unwind_state <= 0) return 0;
    struct cs_unw_space *u = &wt->unw;
    // The stack may have changed since the last unwind: forget cached pages.
    cs_unw_forget(u);
    u->regs[CS_UNW_REG_PC] = pc;
    u->regs[CS_UNW_REG_SP] = sp;
    u->have = 1ull << CS_UNW_REG_PC | 1ull << CS_UNW_REG_SP;
    bool stuck;
    uint64_t last_sp = sp;
    int n = cs_unw_walk(u, frames, max, &stuck, &last_sp, NULL);
    if (!stuck || n >= max) return n;
    // The kernel gives no rbp, and a function that keeps a frame pointer
    // (Swift code, most of Foundation) finds its caller through it: the
    // unwinder stops at the first such frame whose callees did not save rbp.
    // Its rbp is one of the frame records above that frame's stack pointer —
    // the first, unless the frame's locals hold a stale record of an earlier
    // call. So try the first few, unwinding again with each, and keep a
    // result only if it extends the first one, reaches the outermost frame
    // (_start, or the thread's start) and every added frame returns into
    // loaded code right after a call: a stale record leads to garbage.
    // Otherwise the stack stays short but right.
    int tries = 0;
    for (uint64_t r = (last_sp + 7) & ~(uint64_t)7; r < last_sp + 4096 && tries < 4; r += 8) {
        if (!frame_record(r, 1)) continue;
        tries++;
        uint64_t more[CS_WATCH_MAX_DEPTH];
        int cap = max < CS_WATCH_MAX_DEPTH ? max : CS_WATCH_MAX_DEPTH;
        u->regs[CS_UNW_REG_FP] = r;
        u->have |= 1ull << CS_UNW_REG_FP;
        uint64_t ignored;
        int m = cs_unw_walk(u, more, cap, &stuck, &ignored, NULL);
        bool plausible = !stuck && m > n && memcmp(more, frames, (size_t)n * sizeof *frames) == 0;
        // libunwind ends a chain cleanly on a zero rbp even after garbage: every
        // frame it added must be a return address into loaded code.
        for (int i = n; i < m && plausible; i++) plausible = return_address(more[i]);
        if (plausible) {
            memcpy(frames, more, (size_t)m * sizeof *frames);
            wt->frame_pointer_guesses++;
            return m;
        }
    }
    return n;
}
