// Stack walking inside the sampling signal handler.
//
// libunwind is dlopen'd privately (RTLD_LOCAL) and only when sampling is on:
// linking it would rebind the host's `_Unwind_*` (C++ and Swift exceptions)
// from libgcc_s to libunwind for the whole process.
//
// Two of libunwind's calls are unsafe in a signal handler, and we redirect
// them by rewriting *libunwind's own* GOT entries (nobody else's):
// - `dl_iterate_phdr` takes the loader's lock. A sample landing while any
//   thread holds it (inside dlopen, dlclose or a dl_iterate_phdr callback)
//   can deadlock or read a list being edited. The replacement asks glibc's
//   lock-free `_dl_find_object` for the one object holding the address
//   libunwind looks for and hands libunwind's callback that object only.
//   libunwind's callback data starts with that address; this is checked on
//   the first real lookups (the replacement runs beside the real iteration and
//   must agree) before any sample is taken, else libunwind is not used.
// - `__tls_get_addr`: libunwind keeps its per-thread trace cache in TLS. In a
//   dlopen'd library that TLS is allocated with malloc on a thread's first
//   access, which in a handler that interrupted malloc deadlocks. The
//   replacement returns a per-thread block from the sampler's thread table.
// `malloc` becomes "always fails" and `free` a no-op for libunwind: the
// paths that allocate (.debug_frame, minidebuginfo) are never needed here.
// `sigprocmask` is skipped inside the handler, where all signals are blocked.
//
// libunwind's local memory reader dereferences whatever address the unwind
// tables (or, without them, its frame-pointer guess) produce. Behind ours, a
// read in the handler goes through only if it lies in the thread's stack or
// in a loaded object; anything else is read with process_vm_readv, which
// fails instead of faulting. (libunwind's cached fast path reads the stack
// directly, at offsets the unwind tables gave.)
//
// A statically linked program (`swiftc -static-executable`) has no loader: a
// library dlopen'd there gets a libc and a link map of its own, so the lookups
// above cannot agree. It is profiled with frame pointers, silently (that is
// what a static link means, not a failure). dlopen and its kin are looked up
// in the loaded libc.so.6's symbol table rather than referenced: a reference
// would make a static link pull in glibc's static dlopen, with a "Using
// 'dlopen' in statically linked applications" warning per call site.
//
// The frame-pointer walk (COLDSTART_UNWINDER=fp, or when libunwind cannot be
// used) reads the stack only inside the range between the stack pointer and
// the first unreadable page above it, probed once per thread with
// process_vm_readv, so a broken frame chain ends the walk instead of faulting.
#include "internal.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>


#define PAGE 4096ul
#define CS_STACK_PROBE_MAX (1024 * 1024)   // readable bytes looked for above sp

// ---- libunwind's redirected imports ----

struct verify {
    int (*cb)(struct dl_phdr_info *, size_t, void *);
    void *data;
    uintptr_t accepted;      // dlpi_addr of the object the callback took
    bool found;
};

static int verify_cb(struct dl_phdr_info *info, size_t size, void *arg) {
    struct verify *v = arg;
    int r = v->cb(info, size, v->data);
    if (r) {
        v->found = true;
        v->accepted = info->dlpi_addr;
    }
    return r;
}

// The object holding `ip`, presented as dl_iterate_phdr would. Lock-free.
static int lookup_one(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data, uintptr_t ip, uintptr_t *addr) {
    struct dl_find_object fo;
    if (_dl_find_object((void *)ip, &fo) != 0 || fo.dlfo_eh_frame == NULL) return 0;
    const ElfW(Ehdr) *eh = fo.dlfo_map_start;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0) return 0;
    uintptr_t ph = (uintptr_t)fo.dlfo_map_start + eh->e_phoff;
    if (ph + eh->e_phnum * sizeof(ElfW(Phdr)) > (uintptr_t)fo.dlfo_map_end) return 0;
    struct dl_phdr_info info;
    memset(&info, 0, sizeof info);
    info.dlpi_addr = fo.dlfo_link_map->l_addr;
    info.dlpi_name = fo.dlfo_link_map->l_name;
    info.dlpi_phdr = (const ElfW(Phdr) *)ph;
    info.dlpi_phnum = eh->e_phnum;
    if (addr) *addr = info.dlpi_addr;
    return cb(&info, sizeof info, data);
}

static int hook_dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data) {
    uintptr_t ip = *(const uintptr_t *)data;   // libunwind: struct dwarf_callback_data { unw_word_t ip; …}
    if (atomic_load_explicit(&S->unw_verified, memory_order_acquire)) return lookup_one(cb, data, ip, NULL);
    // Set-up only (never in a handler): run both ways and insist they agree.
    uintptr_t mine = 0;
    int r_mine = lookup_one(cb, data, ip, &mine);
    struct verify v = {cb, data, 0, false};
    int r = S->real_dl_iterate_phdr(verify_cb, &v);
    if ((r_mine != 0) != (r != 0) || (r && v.accepted != mine)) atomic_store(&S->unw_verify_failed, 1);
    return r;
}

typedef struct { unsigned long module, offset; } cs_tls_index;

static void *hook_tls_get_addr(cs_tls_index *ti) {
    struct cs_smp_thread *t = cs_sampler_current_thread();
    if (t == NULL) t = cs_sampler_thread(cs_gettid(), true);
    if (t == NULL || ti->offset + sizeof(uint64_t) > sizeof t->tls) {
        // No room: a block that says "this thread's cache is being destroyed",
        // so libunwind unwinds without a cache instead of touching real TLS.
        return (char *)S->dead_tls + ti->offset % sizeof S->dead_tls;
    }
    return (char *)t->tls + ti->offset;
}

static void *hook_malloc(size_t n) { (void)n; return NULL; }

// libunwind blocks every signal around its internal locks, two system calls
// each time (a third of a cold unwind here). Inside our handler every signal
// is already blocked (sa_mask is full), so there they are skipped; anywhere
// else (the warm-up, a thread's exit) they run.
static int hook_sigprocmask(int how, const sigset_t *set, sigset_t *old) {
    struct cs_smp_thread *t = cs_sampler_current_thread();
    if (t && atomic_load_explicit(&t->in_handler, memory_order_relaxed)) {
        if (old) sigfillset(old);
        return 0;
    }
    return (int)syscall(SYS_rt_sigprocmask, how, set, old, sizeof(uint64_t));
}
static void hook_free(void *p) { (void)p; }

static void probe_stack(struct cs_smp_thread *t, uintptr_t sp);

static int hook_access_mem(void *as, uintptr_t addr, uintptr_t *val, int write, void *arg) {
    struct cs_smp_thread *t = write ? NULL : cs_sampler_current_thread();
    if (t && atomic_load_explicit(&t->in_handler, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&S->access_checks, 1, memory_order_relaxed);
        // From this very frame up to the stack's readable top is stack in use
        // (libunwind's own context lies just below the handler's frames).
        uintptr_t here = (uintptr_t)__builtin_frame_address(0) & ~(PAGE - 1);
        bool known = (addr >= here && addr + sizeof *val <= t->stack_hi)
            || (addr >= t->object_lo && addr + sizeof *val <= t->object_hi);
        if (!known) {
            struct dl_find_object fo;
            if (_dl_find_object((void *)addr, &fo) == 0 && addr + sizeof *val <= (uintptr_t)fo.dlfo_map_end) {
                t->object_lo = (uintptr_t)fo.dlfo_map_start;
                t->object_hi = (uintptr_t)fo.dlfo_map_end;
            } else {
                return cs_safe_read(addr, val, sizeof *val) ? 0 : -8;   // -UNW_EINVAL
            }
        }
    }
    return S->real_access_mem(as, addr, val, write, arg);
}

// Puts hook_access_mem in front of the local address space's reader.
static void wrap_access_mem(const struct cs_dl *dl, void *h) {
    typedef void **(*get_accessors_fn)(void *);
    get_accessors_fn get = (get_accessors_fn)dl->sym(h, CS_UNW_NAME("get_accessors"));
    void **local = dl->sym(h, CS_UNW_LOCAL_NAME("local_addr_space"));
    if (!get || !local || !*local) return;
    void **acc = get(*local);   // unw_accessors_t: access_mem is its fourth member
    if (!acc || !acc[3]) return;
    S->real_access_mem = (cs_access_mem_fn)acc[3];
    acc[3] = (void *)hook_access_mem;
}

// Rewrites libunwind's GOT entries for the functions above. Returns how many
// of dl_iterate_phdr and __tls_get_addr were found (both are needed).
static int patch_got(struct link_map *lm) {
    const ElfW(Dyn) *dyn = lm->l_ld;
    uintptr_t base = lm->l_addr;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const ElfW(Rela) *rel[2] = {NULL, NULL};
    size_t relsz[2] = {0, 0};
    // glibc relocates these d_ptr values in place; be correct either way.
#define PTR(v) ((uintptr_t)(v) < base ? (uintptr_t)(v) + base : (uintptr_t)(v))
    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB: symtab = (const void *)PTR(dyn->d_un.d_ptr); break;
        case DT_STRTAB: strtab = (const void *)PTR(dyn->d_un.d_ptr); break;
        case DT_JMPREL: rel[0] = (const void *)PTR(dyn->d_un.d_ptr); break;
        case DT_PLTRELSZ: relsz[0] = dyn->d_un.d_val; break;
        case DT_RELA: rel[1] = (const void *)PTR(dyn->d_un.d_ptr); break;
        case DT_RELASZ: relsz[1] = dyn->d_un.d_val; break;
        default: break;
        }
    }
#undef PTR
    if (!symtab || !strtab) return 0;
    static const char *const names[] = {"dl_iterate_phdr", "__tls_get_addr", "malloc", "free", "sigprocmask"};
    void *const hooks[] = {(void *)hook_dl_iterate_phdr, (void *)hook_tls_get_addr, (void *)hook_malloc, (void *)hook_free,
                           (void *)hook_sigprocmask};
    int essential = 0;
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; rel[k] && i < relsz[k] / sizeof(ElfW(Rela)); i++) {
            uint32_t type = ELF64_R_TYPE(rel[k][i].r_info);
            if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
            const char *name = strtab + symtab[ELF64_R_SYM(rel[k][i].r_info)].st_name;
            for (int h = 0; h < 5; h++) {
                if (strcmp(name, names[h]) != 0) continue;
                void **slot = (void **)(base + rel[k][i].r_offset);
                uintptr_t page = (uintptr_t)slot & ~(PAGE - 1);
                // RELRO pages are read-only after relocation: open, write, close.
                bool ro = mprotect((void *)page, PAGE, PROT_READ | PROT_WRITE) == 0;
                if (h == 0) S->real_dl_iterate_phdr = (cs_dl_iterate_fn)*slot;
                *slot = hooks[h];
                if (ro && (uintptr_t)slot >= base) {
                    // Leave .got.plt writable as the loader left it; only RELRO goes back.
                    const ElfW(Ehdr) *eh = (const void *)base;
                    const ElfW(Phdr) *ph = (const void *)(base + eh->e_phoff);
                    for (int p = 0; p < eh->e_phnum; p++) {
                        if (ph[p].p_type == PT_GNU_RELRO && (uintptr_t)slot >= base + ph[p].p_vaddr
                            && (uintptr_t)slot < base + ph[p].p_vaddr + ph[p].p_memsz)
                            mprotect((void *)page, PAGE, PROT_READ);
                    }
                }
                if (h < 2) essential++;
            }
        }
    }
    return essential;
}

static bool fail(const char *why, const char *detail) {
    cs_warn(why, detail);
    return false;
}

// dl_iterate_phdr callback: stops (1) at an object named libunwind.so*
// (libunwind.so, .so.8, .so.8.0.1; not libunwind-x86_64.so).
static int is_libunwind(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
    return strncmp(base, "libunwind.so", 12) == 0;
}

bool cs_unwind_usable(void) {
    // Asked at start-up, before anything of ours could have loaded it (the
    // watcher's remote unwinder depends on it), among the loaded objects: a
    // dlopen with RTLD_NOLOAD would search the library path and open the
    // file (~0.1 ms of the host's start-up).
    if (dl_iterate_phdr(is_libunwind, NULL) == 0) return true;
    return fail("the program already uses libunwind.so.8, so Coldstart cannot make it signal-safe; unwinding with frame pointers", NULL);
}

bool cs_unwind_load(void) {
#if !CS_ARCH_SUPPORTED
    return fail("libunwind sampling needs x86_64 or aarch64; using frame pointers", NULL);
#else
    struct cs_dl dl;
    if (!cs_dl_functions(&dl)) return false;
    // On the scan thread after the library initializers: libc is set up, and
    // the host's main thread does not wait for the load (~0.6 ms).
    void *h = dl.open("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return fail(cs_out_of_descriptors() ? "no descriptor left under RLIMIT_NOFILE to load libunwind.so.8; unwinding with frame pointers"
                                            : "cannot load libunwind.so.8 (Debian: apt-get install libunwind8); unwinding with frame pointers", NULL);
    S->unw_handle = h;
    S->unw_backtrace = (cs_unw_backtrace_fn)dl.sym(h, "unw_backtrace");
    struct link_map *lm = NULL;
    if (!S->unw_backtrace || dl.info(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm)
        return fail("libunwind.so.8 has no unw_backtrace; unwinding with frame pointers", NULL);
    if (patch_got(lm) != 2 || !S->real_dl_iterate_phdr)
        return fail("cannot redirect libunwind's loader calls; unwinding with frame pointers", NULL);
    wrap_access_mem(&dl, h);
    // Warm-up outside any handler: libunwind's one-time set-up (pthread_once,
    // its pthread key, memory pools) happens here, and the redirection is
    // checked against the real dl_iterate_phdr.
    void *frames[64];
    int n = S->unw_backtrace(frames, 64);
    if (n < 2 || atomic_load(&S->unw_verify_failed))
        return fail(cs_out_of_descriptors() ? "no descriptor left under RLIMIT_NOFILE for libunwind's memory checks; unwinding with frame pointers"
                                            : "libunwind's lookups did not match the loader's; unwinding with frame pointers", NULL);
    // Which of libunwind's two TLS words is the cache pointer: the warm-up set it.
    struct cs_smp_thread *t = cs_sampler_thread(cs_gettid(), true);
    for (size_t i = 0; i < sizeof S->dead_tls / sizeof *S->dead_tls; i++)
        S->dead_tls[i] = (t && t->tls[i] != 0) ? 0 : 1;
    // libunwind's pthread key must be one glibc stores without allocating
    // (index < 32). Ours, made after it, bounds it.
    pthread_key_t probe;
    if (pthread_key_create(&probe, NULL) == 0) {
        pthread_key_delete(probe);
        if (probe >= 32) return fail("too many pthread keys before start-up for a signal-safe libunwind; unwinding with frame pointers", NULL);
    }
    S->unw_ready_ns = cs_monotonic_ns();
    atomic_store_explicit(&S->unw_verified, 1, memory_order_release);
    return true;
#endif
}

// ---- unwinding ----

// Finds the readable extent above `sp` for this thread's frame-pointer walk.
static void probe_stack(struct cs_smp_thread *t, uintptr_t sp) {
    uintptr_t lo = sp & ~(PAGE - 1), hi = lo;
    char byte;
    while (hi - lo < CS_STACK_PROBE_MAX && cs_safe_read(hi, &byte, 1)) hi += PAGE;
    t->stack_lo = lo;
    t->stack_hi = hi;
}

static int fp_walk(uintptr_t sp, uintptr_t fp, struct cs_smp_thread *t, uint64_t *out, int n, int cap) {
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
}

int cs_unwind(void *ucv, struct cs_smp_thread *t, uint64_t *out, int cap) {
#if CS_ARCH_SUPPORTED
    uintptr_t pc, sp, fp;
    cs_ucontext_regs(ucv, &pc, &sp, &fp);
    out[0] = pc;
    if (S->unwinder == CS_UNW_LIBUNWIND && atomic_load_explicit(&S->unw_verified, memory_order_acquire)) {
        // The readable top of this stack, for the memory reader (hook_access_mem).
        uintptr_t here = (uintptr_t)__builtin_frame_address(0);
        uintptr_t low = here < sp ? here : sp;
        if (t && (low < t->stack_lo || sp >= t->stack_hi)) probe_stack(t, low);
        // From here: this function, the handler, the signal trampoline, then
        // the interrupted PC. Keep from the PC on.
        enum { SKIP_MAX = 12 };
        void *buf[CS_SMP_MAX_DEPTH + SKIP_MAX];
        int n = S->unw_backtrace(buf, cap + SKIP_MAX);
        for (int i = 0; i < n && i < SKIP_MAX; i++) {
            if ((uintptr_t)buf[i] != pc) continue;
            int k = 0;
            for (; i + k < n && k < cap; k++) out[k] = (uint64_t)(uintptr_t)buf[i + k];
            return k;
        }
        atomic_fetch_add(&S->unwind_failures, 1);
    }
    return fp_walk(sp, fp, t, out, 1, cap);
#else
    (void)ucv; (void)t; (void)out; (void)cap;
    return 0;
#endif
}
