// libunwind's remote API over this process's own memory (remoteunwind.h).
//
// Why the remote API: `unw_init_local` unwinds the calling thread (or a
// ucontext) and reads memory by dereferencing it, so a stale stack would
// crash the host, and run inside a host thread's signal it needs 8–10 KiB of
// that thread's stack and keeps a pipe among the host's descriptors (the
// host closed it and libunwind closed the host's files: docs/security.md).
// libunwind-x86_64.so.8 (-aarch64.so.8) takes our accessors instead: registers from the
// sample (or from /proc), memory from the kernel's copy of the stack or
// through process_vm_readv, which returns an error rather than faulting;
// unwind tables found with _dl_find_object (lock-free) and PT_GNU_EH_FRAME,
// searched by libunwind's dwarf_search_unwind_table.
#include "remoteunwind.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#if defined(__aarch64__)
#include <libunwind-aarch64.h>
#define FP_REG UNW_AARCH64_X29
#else
#include <libunwind-x86_64.h>
#define FP_REG UNW_X86_64_RBP
#endif

#include "sys.h"

typedef unw_addr_space_t (*create_as_fn)(unw_accessors_t *, int);
typedef int (*init_remote_fn)(unw_cursor_t *, unw_addr_space_t, void *);
typedef int (*step_fn)(unw_cursor_t *);
typedef int (*get_reg_fn)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
typedef int (*policy_fn)(unw_addr_space_t, unw_caching_policy_t);
// Exported by libunwind but declared only in its private headers.
typedef int (*search_fn)(unw_addr_space_t, unw_word_t, unw_dyn_info_t *, unw_proc_info_t *, int, void *);

enum { FN_CREATE, FN_INIT, FN_STEP, FN_GET_REG, FN_SEARCH, FN_POLICY };
#define FN(sp, type, i) ((type)(sp)->fn[i])

void cs_unw_forget(struct cs_unw_space *sp) {
    for (int i = 0; i < sp->npages; i++) sp->pages[i].addr = 0;
    sp->object_lo = sp->object_hi = 0;
}

// Whether [addr, addr + n) lies in one loaded object's mapping; the last
// one found is remembered (an unwind reads one object's tables many times).
static bool in_object(struct cs_unw_space *sp, uint64_t addr, size_t n) {
    if (addr >= sp->object_lo && addr + n <= sp->object_hi) return true;
    struct dl_find_object fo;
    if (_dl_find_object((void *)(uintptr_t)addr, &fo) != 0 || addr + n > (uint64_t)(uintptr_t)fo.dlfo_map_end) return false;
    sp->object_lo = (uint64_t)(uintptr_t)fo.dlfo_map_start;
    sp->object_hi = (uint64_t)(uintptr_t)fo.dlfo_map_end;
    return true;
}

bool cs_unw_read(struct cs_unw_space *sp, uint64_t addr, void *dst, size_t n) {
    if (sp->stack) {
        if (addr >= sp->stack_addr && addr + n <= sp->stack_addr + sp->stack_len) {
            memcpy(dst, sp->stack + (addr - sp->stack_addr), n);
            return true;
        }
        // The rest of the stack has changed since the copy: garbage.
        if (!sp->live && !in_object(sp, addr, n)) return false;
    }
    unsigned char *out = dst;
    while (n > 0) {
        uint64_t base = addr & ~(uint64_t)4095;
        // Direct-mapped by page number (npages is a power of two): a miss is
        // one process_vm_readv, and a launch's unwind tables then stay cached.
        struct cs_unw_page *page = &sp->pages[(base >> 12) & (uint64_t)(sp->npages - 1)];
        if (page->addr != base) {
            struct iovec local = {page->bytes, 4096}, remote = {(void *)(uintptr_t)base, 4096};
            page->addr = base;
            page->ok = process_vm_readv(sp->pid, &local, 1, &remote, 1, 0) == 4096;
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
    if (write) return -UNW_EINVAL;
    return cs_unw_read(arg, addr, val, sizeof *val) ? 0 : -UNW_EINVAL;
}

static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write, void *arg) {
    (void)as;
    const struct cs_unw_space *sp = arg;
    if (write || reg < 0 || reg >= CS_UNW_NREGS || !(sp->have & (1ull << reg))) return -UNW_EBADREG;
    *val = sp->regs[reg];
    return 0;
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

// The loaded object holding `ip` and its .eh_frame_hdr binary-search table,
// described the way libunwind's own local lookup does.
static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi, int need_unwind_info, void *arg) {
    struct cs_unw_space *sp = arg;
    struct dl_find_object fo;
    if (_dl_find_object((void *)(uintptr_t)ip, &fo) != 0 || !fo.dlfo_eh_frame) return -UNW_ENOINFO;
    // version 1; eh_frame_ptr pcrel|sdata4; fde_count udata4; table datarel|sdata4
    unsigned char hdr[12];
    uint64_t at = (uint64_t)(uintptr_t)fo.dlfo_eh_frame;
    if (!cs_unw_read(sp, at, hdr, sizeof hdr) || hdr[0] != 1 || hdr[1] != 0x1b || hdr[2] != 0x03 || hdr[3] != 0x3b)
        return -UNW_ENOINFO;
    uint32_t count;
    memcpy(&count, hdr + 8, sizeof count);
    unw_dyn_info_t di;
    memset(&di, 0, sizeof di);
    di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
    di.start_ip = (unw_word_t)(uintptr_t)fo.dlfo_map_start;
    di.end_ip = (unw_word_t)(uintptr_t)fo.dlfo_map_end;
    di.u.rti.segbase = at;
    di.u.rti.table_data = at + 12;
    di.u.rti.table_len = count * 2 * sizeof(int32_t) / sizeof(unw_word_t);
    return FN(sp, search_fn, FN_SEARCH)(as, ip, &di, pi, need_unwind_info, arg);
}

bool cs_unw_open(struct cs_unw_space *sp, struct cs_unw_page *pages, int npages, bool live, const char *what) {
    static const char *const names[] = {
        [FN_CREATE] = CS_UNW_NAME("create_addr_space"), [FN_INIT] = CS_UNW_NAME("init_remote"),
        [FN_STEP] = CS_UNW_NAME("step"), [FN_GET_REG] = CS_UNW_NAME("get_reg"),
        [FN_SEARCH] = CS_UNW_NAME("dwarf_search_unwind_table"), [FN_POLICY] = CS_UNW_NAME("set_caching_policy"),
    };
    memset(sp, 0, sizeof *sp);
    sp->pages = pages;
    sp->npages = npages;
    sp->live = live;
    sp->pid = getpid();
    struct cs_dl dl;
    if (!cs_dl_functions(&dl)) return false;   // a static program: no loader to load it with
    void *lib = dl.open(CS_UNW_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        if (what)
            cs_warn(cs_out_of_descriptors() ? "no descriptor left under RLIMIT_NOFILE to load " CS_UNW_LIBRARY "; "
                                            : CS_UNW_LIBRARY " could not be loaded (Debian: libunwind8); ", what);
        return false;
    }
    for (int i = 0; i < 6; i++) {
        sp->fn[i] = dl.sym(lib, names[i]);
        if (!sp->fn[i]) {
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
    unw_addr_space_t as = FN(sp, create_as_fn, FN_CREATE)(&accessors, 0);
    if (!as) {
        dl.close(lib);
        return false;
    }
    // Unwind rules are cached by instruction address: code does not change
    // while it is loaded, and a repeated call site then costs a few µs.
    FN(sp, policy_fn, FN_POLICY)(as, UNW_CACHE_GLOBAL);
    sp->lib = lib;
    sp->as = as;
    return true;
}

int cs_unw_walk(struct cs_unw_space *sp, uint64_t *frames, int max, bool *stuck, uint64_t *last_sp, uint64_t *last_bp) {
    unw_cursor_t cursor;
    *stuck = false;
    if (!sp->as || FN(sp, init_remote_fn, FN_INIT)(&cursor, (unw_addr_space_t)sp->as, sp) != 0) return 0;
    int n = 0, step = 1;
    do {
        unw_word_t ip, rsp;
        if (FN(sp, get_reg_fn, FN_GET_REG)(&cursor, UNW_REG_IP, &ip) != 0 || ip == 0) { step = -1; break; }
        if (FN(sp, get_reg_fn, FN_GET_REG)(&cursor, UNW_REG_SP, &rsp) == 0) *last_sp = rsp;
        unw_word_t rbp;
        if (last_bp && FN(sp, get_reg_fn, FN_GET_REG)(&cursor, FP_REG, &rbp) == 0) *last_bp = rbp;
        frames[n++] = ip;
    } while (n < max && (step = FN(sp, step_fn, FN_STEP)(&cursor)) > 0);
    // step 0: libunwind reached the outermost frame (its CFI ends the chain).
    *stuck = step < 0;
    return n;
}
