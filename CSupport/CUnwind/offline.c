/*
 * Offline unwinding of a timeline's stack copies (cs_unwind.h): the module
 * table the timeline recorded places each address (path, load bias,
 * executable mapping); the files on disk give the unwind tables and any
 * read-only memory the CFI reads (address − bias = ELF vaddr, read through
 * the file's PT_LOAD segments). Nothing else of the process exists any
 * more: a read outside the copy and the files fails, and the walk ends
 * there, as the sampler's own unwinder ends it outside the loaded objects.
 */
#include "cs_unwind.h"
#include "cs_unwind_core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if CS_UW_SUPPORTED

typedef struct {
    char *path;
    uint8_t id[64];
    size_t id_len;
    uint64_t base, start, end;
    /* The file, opened at the first walk that needs it: 0 not yet, 1
     * usable (2: another entry's mapping), -1 missing, unreadable or
     * another build, -2 none to open (the vDSO, an anonymous mapping: like
     * code without unwind tables, the walk fails there). */
    int state;
    cs_uw_image im;
    int has_table;
    unw_dyn_info_t di;
    uint64_t lo, hi;        /* run-time span of its PT_LOAD segments */
} module;

struct cs_offline {
    cs_uw_walker w;
    module *mods;
    int n, cap;
    int last;               /* the module read from last (a walk reads one's tables many times) */
    int no_file;            /* the walk at hand needed a module without its file */
};

static module *module_at(cs_offline *u, uint64_t ip) {
    for (int i = 0; i < u->n; i++)
        if (ip >= u->mods[i].start && ip < u->mods[i].end) return &u->mods[i];
    return NULL;
}

/* The module's file, checked against the recorded build-id. Another
 * module entry of the same file and load shares its mapping. */
static int open_module(cs_offline *u, module *m) {
    if (m->state) return m->state > 0;
    m->state = m->path[0] == '/' ? -1 : -2;
    if (m->state == -2) return 0;
    for (int i = 0; i < u->n; i++) {
        module *o = &u->mods[i];
        if (o != m && o->state > 0 && o->base == m->base && strcmp(o->path, m->path) == 0) {
            m->im = o->im;
            m->im.is_copy = 0;
            m->state = 2;   /* shared: not released by this entry */
            break;
        }
    }
    if (m->state < 0) {
        if (cs_uw_image_map(&m->im, m->path) != 0) return 0;
        if (m->id_len && (m->im.build_id_len != m->id_len || memcmp(m->im.build_id, m->id, m->id_len) != 0)) {
            cs_uw_image_release(&m->im);
            return 0;
        }
        m->state = 1;
    }
    uint64_t lo, hi;
    cs_uw_image_span(&m->im, &lo, &hi);
    m->lo = lo + m->base;
    m->hi = hi + m->base;
    m->has_table = cs_uw_image_table(&m->im, (int64_t)m->base, m->start, m->end, &m->di) == 0;
    return 1;
}

static const unw_dyn_info_t *table_for(void *ctx, uint64_t ip) {
    cs_offline *u = ctx;
    module *m = module_at(u, ip);
    if (!m) return NULL;
    if (!open_module(u, m)) {
        u->no_file |= m->state == -1;
        return NULL;
    }
    return m->has_table ? &m->di : NULL;
}

static int read_word(void *ctx, uint64_t addr, uint64_t *val) {
    cs_offline *u = ctx;
    if (u->last >= 0) {
        module *m = &u->mods[u->last];
        if (addr >= m->lo && addr < m->hi && cs_uw_image_read(&m->im, addr - m->base, val, sizeof *val) == 0) return 0;
    }
    for (int i = 0; i < u->n; i++) {
        module *m = &u->mods[i];
        if (m->state <= 0 || addr < m->lo || addr >= m->hi) continue;
        if (cs_uw_image_read(&m->im, addr - m->base, val, sizeof *val) == 0) {
            u->last = i;
            return 0;
        }
    }
    return -1;
}

static int is_code(void *ctx, uint64_t addr) { return module_at(ctx, addr) != NULL; }

cs_offline *cs_offline_new(char *error, size_t error_len) {
    cs_offline *u = calloc(1, sizeof *u);
    if (!u) {
        snprintf(error, error_len, "out of memory");
        return NULL;
    }
    u->last = -1;
    u->w.ctx = u;
    u->w.table_for = table_for;
    u->w.read_word = read_word;
    u->w.is_code = is_code;
    if (cs_uw_load(&u->w, error, error_len) != 0) {
        free(u);
        return NULL;
    }
    return u;
}

void cs_offline_free(cs_offline *u) {
    if (!u) return;
    cs_uw_unload(&u->w);
    for (int i = 0; i < u->n; i++) {
        if (u->mods[i].state == 1) cs_uw_image_release(&u->mods[i].im);
        free(u->mods[i].path);
    }
    free(u->mods);
    free(u);
}

int cs_offline_add_module(cs_offline *u, const char *path, const uint8_t *id, size_t id_len, uint64_t base, uint64_t start,
                          uint64_t end) {
    if (u->n == u->cap) {
        int cap = u->cap ? u->cap * 2 : 64;
        module *grown = realloc(u->mods, (size_t)cap * sizeof *grown);
        if (!grown) return -1;
        u->mods = grown;
        u->cap = cap;
    }
    module *m = &u->mods[u->n];
    memset(m, 0, sizeof *m);
    if (!(m->path = strdup(path))) return -1;
    m->id_len = id_len <= sizeof m->id ? id_len : 0;
    memcpy(m->id, id, m->id_len);
    m->base = base;
    m->start = start;
    m->end = end;
    u->n++;
    return 0;
}

/* Where the frame-pointer chain goes on from the last frame the CFI reached
 * (the copy ended, or its CFI did): the index of that frame's caller in
 * `chain`, or 0. chain[i] (i ≥ 1) is the return address in the frame
 * record at r(i−1), r0 being the sampled RBP and r(i) = [r(i−1)]; the
 * records inside the copy give those addresses, up to the first outside it.
 * A last frame that keeps a frame pointer has its record at its RBP
 * (`last_bp`): its caller is chain[i + 1] where r(i) is that. Failing that,
 * the chain's own copy of the last return address, at that depth or
 * shallower (the chain skips callers of frames without a frame pointer),
 * the deepest (a recursion repeats one address). The sampler's join
 * (smpunwind.c), for the same records read later. */
static int chain_join(uint64_t bp, const uint8_t *stack, uint64_t sp, size_t len, uint64_t last_bp, uint64_t last_ip,
                      const uint64_t *chain, int nchain, int depth) {
    for (int i = 0; i + 1 < nchain; i++) {
        if (bp == last_bp) return i + 1;
        if (bp < sp || bp - sp > len || len - (bp - sp) < 8 || (bp & 7)) break;
        uint64_t next;
        memcpy(&next, stack + (bp - sp), 8);
        if (next <= bp) break;
        bp = next;
    }
    for (int j = depth - 1 < nchain - 1 ? depth - 1 : nchain - 1; j >= 1; j--)
        if (chain[j] == last_ip) return j + 1;
    return 0;
}

static int keep_chain(const uint64_t *chain, int nchain, uint64_t *out, int cap) {
    int n = 0;
    for (; n < nchain && n < cap; n++) out[n] = chain[n];
    return n;
}

int cs_offline_unwind(cs_offline *u, const uint64_t *regs, size_t nregs, const uint8_t *stack, size_t len,
                      const uint64_t *chain, int nchain, uint64_t *out, int cap, int *flags) {
    *flags = 0;
    if (nregs != 17 || cap <= 0) {
        *flags = CS_OFFLINE_FAILED;
        return keep_chain(chain, nchain, out, cap);
    }
    for (int i = 0; i < 17; i++) u->w.regs[cs_uw_perf_reg(i)] = regs[i];
    u->w.stack = stack;
    u->w.stack_start = regs[7];
    u->w.stack_len = len;
    u->no_file = 0;
    /* The leaf's file first: a walk that fails at once never asks for it. */
    module *leaf = module_at(u, regs[8]);
    if (leaf && !open_module(u, leaf) && leaf->state == -1) u->no_file = 1;
    cs_uw_end end;
    int n = u->no_file ? 0 : cs_uw_walk(&u->w, out, cap, &end);
    u->w.stack = NULL;
    if (u->no_file) {
        *flags = CS_OFFLINE_NO_FILE;
        return keep_chain(chain, nchain, out, cap);
    }
    if (n < 2) {
        *flags = CS_OFFLINE_FAILED;
        return keep_chain(chain, nchain, out, cap);
    }
    *flags = CS_OFFLINE_DWARF;
    if (!end.stuck || n >= cap) return n;
    int j = chain_join(regs[6], stack, regs[7], len, end.last_bp, out[n - 1], chain, nchain, n);
    if (j > 0) {
        for (int k = j; k < nchain && n < cap; k++) out[n++] = chain[k];
        *flags |= CS_OFFLINE_CHAIN_TAIL;
    }
    return n;
}

#else

struct cs_offline { int unused; };

cs_offline *cs_offline_new(char *error, size_t error_len) {
    snprintf(error, error_len, "offline unwinding supports x86_64 stack copies on an x86_64 machine only");
    return NULL;
}
void cs_offline_free(cs_offline *u) { (void)u; }
int cs_offline_add_module(cs_offline *u, const char *path, const uint8_t *id, size_t id_len, uint64_t base, uint64_t start,
                          uint64_t end) {
    (void)u; (void)path; (void)id; (void)id_len; (void)base; (void)start; (void)end;
    return -1;
}
int cs_offline_unwind(cs_offline *u, const uint64_t *regs, size_t nregs, const uint8_t *stack, size_t len,
                      const uint64_t *chain, int nchain, uint64_t *out, int cap, int *flags) {
    (void)u; (void)regs; (void)nregs; (void)stack; (void)len;
    *flags = CS_OFFLINE_FAILED;
    int n = 0;
    for (; n < nchain && n < cap; n++) out[n] = chain[n];
    return n;
}

#endif
