// Off-CPU stacks: unwinding another thread of this process, which is blocked
// in the kernel, from the only registers the kernel tells us without ptrace —
// the user stack pointer and program counter in /proc/.../syscall.
//
// Why libunwind's *remote* API over our own memory: `unw_init_local` unwinds
// the calling thread (or a ucontext) and reads memory by dereferencing it, so
// a stale stack would crash the host; the local library refuses
// `unw_init_remote`. libunwind-x86_64.so.8 or -aarch64.so.8 (same Debian package as the
// sampler's libunwind.so.8) takes our accessors instead: memory is read with
// process_vm_readv on our own pid, which returns an error rather than faulting;
// unwind tables are found with dl_iterate_phdr and PT_GNU_EH_FRAME, searched by
// libunwind's dwarf_search_unwind_table. Only RIP and RSP are known; DWARF CFI
// recovers the caller's registers as it goes. A function that keeps a frame
// pointer finds its caller through RBP, which /proc does not give: when the
// unwinder stops there, the first frame record (saved RBP, return address,
// checked two deep) above that frame's stack pointer is taken as RBP and the
// stack unwound again (cs_offcpu_unwind). A plain frame-pointer walk from the
// reported SP would lose the C library's frames, which keep none.
//
// Runs only on the watcher thread (not async-signal-safe; dlopen is deferred
// until the host's library initializers have finished).
#include "internal.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include <sys/uio.h>
#if defined(__x86_64__)
#include <libunwind-x86_64.h>
#define PC_REG UNW_X86_64_RIP
#define SP_REG UNW_X86_64_RSP
#define FP_REG UNW_X86_64_RBP
#elif defined(__aarch64__)
#include <libunwind-aarch64.h>
#define PC_REG UNW_AARCH64_PC
#define SP_REG UNW_AARCH64_SP
#define FP_REG UNW_AARCH64_X29
#endif

typedef unw_addr_space_t (*create_as_fn)(unw_accessors_t *, int);
typedef int (*init_remote_fn)(unw_cursor_t *, unw_addr_space_t, void *);
typedef int (*step_fn)(unw_cursor_t *);
typedef int (*get_reg_fn)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
typedef int (*policy_fn)(unw_addr_space_t, unw_caching_policy_t);
// Exported by libunwind but declared only in its private headers.
typedef int (*search_fn)(unw_addr_space_t, unw_word_t, unw_dyn_info_t *, unw_proc_info_t *, int, void *);

enum { FN_CREATE, FN_INIT, FN_STEP, FN_GET_REG, FN_SEARCH, FN_POLICY };
#define FN(type, i) ((type)cs_g.watch.unwind_fn[i])

// Copies up to 8 bytes of own memory through the page cache; false if any of
// it is unmapped.
static bool read_own(uint64_t addr, void *dst, size_t n) {
    struct cs_watch *wt = &cs_g.watch;
    struct cs_watch_page *pages = wt->buf->pages;
    unsigned char *out = dst;
    while (n > 0) {
        uint64_t base = addr & ~(uint64_t)4095;
        struct cs_watch_page *page = NULL;
        for (int i = 0; i < CS_WATCH_UNWIND_PAGES && !page; i++)
            if (pages[i].addr == base) page = &pages[i];
        if (!page) {
            page = &pages[wt->unwind_page_next];
            wt->unwind_page_next = (wt->unwind_page_next + 1) % CS_WATCH_UNWIND_PAGES;
            struct iovec local = {page->bytes, 4096}, remote = {(void *)(uintptr_t)base, 4096};
            page->addr = base;
            page->ok = process_vm_readv(cs_g.proc.pid, &local, 1, &remote, 1, 0) == 4096;
        }
        if (!page->ok) return false;
        size_t k = 4096 - (size_t)(addr - base);
        if (k > n) k = n;
        memcpy(out, page->bytes + (addr - base), k);
        out += k;
        addr += k;
        n -= k;
    }
    return true;
}

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write, void *arg) {
    (void)as;
    (void)arg;
    if (write) return -UNW_EINVAL;
    return read_own(addr, val, sizeof *val) ? 0 : -UNW_EINVAL;
}

static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write, void *arg) {
    (void)as;
    (void)arg;
    if (write) return -UNW_EINVAL;
    if (reg == PC_REG) { *val = cs_g.watch.unwind_regs[0]; return 0; }
    if (reg == SP_REG) { *val = cs_g.watch.unwind_regs[1]; return 0; }
    if (reg == FP_REG && cs_g.watch.unwind_has_rbp) { *val = cs_g.watch.unwind_regs[2]; return 0; }
    return -UNW_EBADREG;
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write, void *arg) {
    (void)as; (void)reg; (void)val; (void)write; (void)arg;
    return -UNW_EBADREG;
}

static int resume(unw_addr_space_t as, unw_cursor_t *c, void *arg) {
    (void)as; (void)c; (void)arg;
    return -UNW_EINVAL;
}

static int get_proc_name(unw_addr_space_t as, unw_word_t ip, char *buf, size_t len, unw_word_t *off, void *arg) {
    (void)as; (void)ip; (void)buf; (void)len; (void)off; (void)arg;
    return -UNW_ENOINFO;
}

static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg) {
    (void)as; (void)pi; (void)arg;
}

static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *addr, void *arg) {
    (void)as; (void)addr; (void)arg;
    return -UNW_ENOINFO;
}

struct lookup {
    uint64_t ip;
    unw_dyn_info_t di;
    bool found;
};

// Finds the loaded object holding `ip` and describes its .eh_frame_hdr
// binary-search table the way libunwind's own local lookup does.
static int find_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct lookup *l = data;
    const ElfW(Phdr) *text = NULL, *eh = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        uint64_t start = info->dlpi_addr + p->p_vaddr;
        if (p->p_type == PT_LOAD && l->ip >= start && l->ip < start + p->p_memsz) text = p;
        else if (p->p_type == PT_GNU_EH_FRAME) eh = p;
    }
    if (!text) return 0;
    if (!eh) return 1;
    // version 1; eh_frame_ptr pcrel|sdata4; fde_count udata4; table datarel|sdata4
    const unsigned char *hdr = (const unsigned char *)(info->dlpi_addr + eh->p_vaddr);
    if (hdr[0] != 1 || hdr[1] != 0x1b || hdr[2] != 0x03 || hdr[3] != 0x3b) return 1;
    uint32_t count;
    memcpy(&count, hdr + 8, sizeof count);
    memset(&l->di, 0, sizeof l->di);
    l->di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
    l->di.start_ip = info->dlpi_addr + text->p_vaddr;
    l->di.end_ip = l->di.start_ip + text->p_memsz;
    l->di.u.rti.segbase = (unw_word_t)(uintptr_t)hdr;
    l->di.u.rti.table_data = (unw_word_t)(uintptr_t)(hdr + 12);
    l->di.u.rti.table_len = count * 2 * sizeof(int32_t) / sizeof(unw_word_t);
    l->found = true;
    return 1;
}

static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi, int need_unwind_info, void *arg) {
    struct lookup l;
    memset(&l, 0, sizeof l);
    l.ip = ip;
    dl_iterate_phdr(find_object, &l);
    if (!l.found) return -UNW_ENOINFO;
    return FN(search_fn, FN_SEARCH)(as, ip, &l.di, pi, need_unwind_info, arg);
}

bool cs_offcpu_ready(void) {
    struct cs_watch *wt = &cs_g.watch;
    if (wt->unwind_state) return wt->unwind_state > 0;
    wt->unwind_state = -1;
    static const char *const names[] = {
        [FN_CREATE] = CS_UNW_NAME("create_addr_space"), [FN_INIT] = CS_UNW_NAME("init_remote"),
        [FN_STEP] = CS_UNW_NAME("step"), [FN_GET_REG] = CS_UNW_NAME("get_reg"),
        [FN_SEARCH] = CS_UNW_NAME("dwarf_search_unwind_table"), [FN_POLICY] = CS_UNW_NAME("set_caching_policy"),
    };
    struct cs_dl dl;
    if (!cs_dl_functions(&dl)) return false;   // a static program: blocked time without stacks
    void *lib = dl.open(CS_UNW_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        cs_warn(cs_out_of_descriptors() ? "no descriptor left under RLIMIT_NOFILE to load " CS_UNW_LIBRARY "; off-CPU time will have no stacks"
                                        : CS_UNW_LIBRARY " not found (Debian: libunwind8); off-CPU time will have no stacks", NULL);
        return false;
    }
    for (int i = 0; i < 6; i++) {
        wt->unwind_fn[i] = dl.sym(lib, names[i]);
        if (!wt->unwind_fn[i]) {
            cs_warn(CS_UNW_LIBRARY " lacks ", names[i]);
            dl.close(lib);
            return false;
        }
    }
    unw_accessors_t accessors = {   // copied by create_addr_space
        .find_proc_info = find_proc_info, .put_unwind_info = put_unwind_info,
        .get_dyn_info_list_addr = get_dyn_info_list_addr, .access_mem = access_mem,
        .access_reg = access_reg, .access_fpreg = access_fpreg, .resume = resume,
        .get_proc_name = get_proc_name,
    };
    unw_addr_space_t as = FN(create_as_fn, FN_CREATE)(&accessors, 0);
    if (!as) {
        dl.close(lib);
        return false;
    }
    // Unwind rules are cached by instruction address: code does not change
    // while it is loaded, and repeated blocks at one call site then cost ~7 µs.
    FN(policy_fn, FN_POLICY)(as, UNW_CACHE_GLOBAL);
    wt->unwind_lib = lib;
    wt->unwind_as = as;
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
    if (ret < 4096 || !read_own(ret - 8, b, 8)) return false;
    bool call = b[3] == 0xE8;
    static const int back[] = {2, 3, 6, 7};
    for (int i = 0; i < 4 && !call; i++)
        call = b[8 - back[i]] == 0xFF && ((b[9 - back[i]] >> 3) & 7) == 2;
#else
    uint32_t insn;
    if (ret < 4096 || (ret & 3) || !read_own(ret - 4, &insn, 4)) return false;
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
    if (!read_own(r, &pair[0], 8) || !read_own(r + 8, &pair[1], 8)) return false;
    pair[1] = cs_strip_return_address(pair[1]);
    if (!return_address(pair[1])) return false;
    if (pair[0] == 0 || depth == 0) return true;
    return pair[0] > r && pair[0] - r < (8u << 20) && (pair[0] & 7) == 0 && frame_record(pair[0], depth - 1);
}

// Frames with libunwind from the registers in unwind_regs. *stuck: it
// stopped on an error (not at the outermost frame), with *last_sp the stack
// pointer of the last frame it reached.
static int unwind_once(uint64_t *frames, int max, bool *stuck, uint64_t *last_sp) {
    struct cs_watch *wt = &cs_g.watch;
    unw_cursor_t cursor;
    *stuck = false;
    if (FN(init_remote_fn, FN_INIT)(&cursor, (unw_addr_space_t)wt->unwind_as, NULL) != 0) return 0;
    int n = 0, step = 1;
    do {
        unw_word_t ip, sp;
        if (FN(get_reg_fn, FN_GET_REG)(&cursor, UNW_REG_IP, &ip) != 0 || ip == 0) { step = -1; break; }
        if (FN(get_reg_fn, FN_GET_REG)(&cursor, UNW_REG_SP, &sp) == 0) *last_sp = sp;
        frames[n++] = ip;
    } while (n < max && (step = FN(step_fn, FN_STEP)(&cursor)) > 0);
    // step 0: libunwind reached the outermost frame (its CFI ends the chain).
    *stuck = step < 0;
    return n;
}

int cs_offcpu_unwind(uint64_t pc, uint64_t sp, uint64_t *frames, int max) {
    struct cs_watch *wt = &cs_g.watch;
    if (wt->unwind_state <= 0) return 0;
    // The stack may have changed since the last unwind: forget cached pages.
    for (int i = 0; i < CS_WATCH_UNWIND_PAGES; i++) wt->buf->pages[i].addr = 0;
    wt->unwind_regs[0] = pc;
    wt->unwind_regs[1] = sp;
    wt->unwind_has_rbp = false;
    bool stuck;
    uint64_t last_sp = sp;
    int n = unwind_once(frames, max, &stuck, &last_sp);
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
        wt->unwind_regs[2] = r;
        wt->unwind_has_rbp = true;
        uint64_t ignored;
        int m = unwind_once(more, cap, &stuck, &ignored);
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
