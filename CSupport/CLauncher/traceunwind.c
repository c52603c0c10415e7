/*
 * The tracer's unwinding (trace.h): the program's mappings and files, read
 * from /proc and mapped here read-only (CUnwind's images), and CUnwind's
 * walker (libunwind's remote API) over the stopped thread's registers and
 * stack copy, those files' DWARF CFI and, for the rest, the live program.
 */
#include "trace.h"

#if CS_TRACE_SUPPORTED

/* ---- the program's mappings and files ---- */

/* One file per path and load: the LD_AUDIT module's namespace loads its own
 * libc beside the program's, at another address. Keyed by path alone, the
 * two shared one load bias and one unwind table, so every walk through the
 * program's libc (a constructor's clock_gettime, __libc_start_call_main)
 * ended there. A load is told by its mappings' address less file offset,
 * which its segments share where the linker laid them out at their offsets
 * (the rare segment that does not gets a file entry of its own, unwound
 * alike). */
static int file_index(cs_trace *t, const char *path, uint64_t load) {
    for (int i = 0; i < t->nfiles; i++)
        if (t->files[i].load == load && strcmp(t->files[i].path, path) == 0) return i;
    if (t->nfiles == t->cfiles) {
        int cap = t->cfiles ? t->cfiles * 2 : 64;
        trace_file *grown = realloc(t->files, (size_t)cap * sizeof *grown);
        if (!grown) return -1;
        t->files = grown;
        t->cfiles = cap;
    }
    trace_file *f = &t->files[t->nfiles];
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    f->load = load;
    return t->nfiles++;
}

void trace_forget_files(cs_trace *t) {
    for (int i = 0; i < t->nfiles; i++) {
        trace_file *f = &t->files[i];
        cs_uw_image_release(&f->im);
    }
    t->nfiles = 0;
    t->nmaps = 0;
}

/* Reads /proc/PID/maps again; new mappings get a PERF_RECORD_MMAP. */
void trace_refresh_maps(cs_trace *t) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)t->pid);
    FILE *in = fopen(path, "re");
    if (!in) return;
    uint64_t ns = now_ns();
    trace_map *old = t->maps;
    int nold = t->nmaps;
    t->maps = NULL;
    t->nmaps = t->cmaps = 0;
    char line[512];
    while (fgets(line, sizeof line, in)) {
        unsigned long long start, end, offset;
        char perms[8], name[320];
        name[0] = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %319[^\n]", &start, &end, perms, &offset, name) < 4) continue;
        if (t->nmaps == t->cmaps) {
            int cap = t->cmaps ? t->cmaps * 2 : 256;
            trace_map *grown = realloc(t->maps, (size_t)cap * sizeof *grown);
            if (!grown) break;
            t->maps = grown;
            t->cmaps = cap;
        }
        trace_map *m = &t->maps[t->nmaps++];
        m->start = start;
        m->end = end;
        m->offset = offset;
        m->writable = perms[1] == 'w';
        m->executable = perms[2] == 'x';
        m->file = -1;
        m->announced = 0;
        const char *shown = name[0] ? name : "//anon";
        if (name[0] == '/' || strcmp(name, "[vdso]") == 0) m->file = file_index(t, name, m->start - m->offset);
        for (int i = 0; i < nold; i++)
            if (old[i].start == m->start && old[i].end == m->end && old[i].offset == m->offset && old[i].file == m->file) {
                m->announced = old[i].announced;
                break;
            }
        if (!m->announced && (m->executable || name[0] == '/')) trace_emit_mmap(t, m, shown, ns);
        m->announced = 1;
    }
    fclose(in);
    free(old);
}

static trace_map *map_at(cs_trace *t, uint64_t address) {
    int lo = 0, hi = t->nmaps - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        trace_map *m = &t->maps[mid];
        if (address < m->start) hi = mid - 1;
        else if (address >= m->end) lo = mid + 1;
        else return m;
    }
    return NULL;
}

/* The mapping holding the code address `address`, /proc read again once
 * when no executable mapping is known there (the program mapped it since,
 * maybe over an old one): new mappings are announced, so a frame in one is
 * in a module. */
static trace_map *code_map(cs_trace *t, uint64_t address) {
    trace_map *m = map_at(t, address);
    if (m && m->executable) return m;
    trace_refresh_maps(t);
    return map_at(t, address);
}

/* Maps the file (or copies the vDSO) and reads its load bias; whether it
 * has an unwind table. */
static int parse_file(cs_trace *t, trace_file *f, const trace_map *seen) {
    if (f->parsed) return f->im.eh_vaddr != 0;
    f->parsed = 1;
    if (f->path[0] == '/') {
        if (cs_uw_image_map(&f->im, f->path) != 0) return 0;
        /* The load bias from the mapping we saw: its file offset lies in a PT_LOAD. */
        if (cs_uw_image_bias(&f->im, seen->start, seen->offset, &f->bias) != 0) f->bias = 0;
    } else {
        size_t size = (size_t)(seen->end - seen->start);
        uint8_t *copy = malloc(size);
        struct iovec local = {copy, size}, remote = {(void *)(uintptr_t)seen->start, size};
        if (!copy || process_vm_readv(t->pid, &local, 1, &remote, 1, 0) != (ssize_t)size) {
            free(copy);
            return 0;
        }
        if (cs_uw_image_adopt(&f->im, copy, size) != 0) return 0;
        f->bias = (int64_t)seen->start;  /* the vDSO is linked at 0 */
    }
    return f->im.eh_vaddr != 0;
}

/* The unwind table of the module holding `ip`. */
static const unw_dyn_info_t *table_for(void *ctx, uint64_t ip) {
    cs_trace *t = ctx;
    trace_map *m = code_map(t, ip);
    if (!m || m->file < 0) return NULL;
    trace_file *f = &t->files[m->file];
    if (f->has_di) return &f->di;
    if (!parse_file(t, f, m)) return NULL;
    f->text_start = UINT64_MAX;
    f->text_end = 0;
    for (int i = 0; i < t->nmaps; i++)
        if (t->maps[i].file == m->file && t->maps[i].executable) {
            if (t->maps[i].start < f->text_start) f->text_start = t->maps[i].start;
            if (t->maps[i].end > f->text_end) f->text_end = t->maps[i].end;
        }
    if (cs_uw_image_table(&f->im, f->bias, f->text_start, f->text_end, &f->di) != 0) return NULL;
    f->has_di = 1;
    return &f->di;
}

/* Memory outside the stack copy: read-only file contents (unwind tables,
 * code) from the file, anything else (writable data) from the live program. */
static int read_word(void *ctx, uint64_t addr, uint64_t *val) {
    cs_trace *t = ctx;
    trace_map *m = map_at(t, addr);
    if (m && m->file >= 0 && !m->writable) {
        trace_file *f = &t->files[m->file];
        if (!f->parsed) parse_file(t, f, m);
        if (f->im.bytes) {
            uint64_t off = f->im.is_copy ? addr - m->start : addr - m->start + m->offset;
            if (off + sizeof *val <= f->im.size) {
                memcpy(val, f->im.bytes + off, sizeof *val);
                return 0;
            }
        }
    }
    struct iovec local = {val, sizeof *val}, remote = {(void *)(uintptr_t)addr, sizeof *val};
    return process_vm_readv(t->pid, &local, 1, &remote, 1, 0) == (ssize_t)sizeof *val ? 0 : -1;
}

static int is_code(void *ctx, uint64_t addr) {
    trace_map *m = code_map(ctx, addr);
    return m && m->executable;
}

int trace_load_unwinder(cs_trace *t, char *error, size_t error_len) {
    t->unw.ctx = t;
    t->unw.table_for = table_for;
    t->unw.read_word = read_word;
    t->unw.is_code = is_code;
    return cs_uw_load(&t->unw, error, error_len);
}

void trace_unwind_and_emit(cs_trace *t, pid_t tid, uint64_t ns, int copies) {
    const struct user_regs_struct *r = &t->regs;
    const uint64_t regs[CS_UW_NREGS] = {
        [UNW_X86_64_RAX] = r->rax, [UNW_X86_64_RDX] = r->rdx, [UNW_X86_64_RCX] = r->rcx, [UNW_X86_64_RBX] = r->rbx,
        [UNW_X86_64_RSI] = r->rsi, [UNW_X86_64_RDI] = r->rdi, [UNW_X86_64_RBP] = r->rbp, [UNW_X86_64_RSP] = r->rsp,
        [UNW_X86_64_R8] = r->r8,   [UNW_X86_64_R9] = r->r9,   [UNW_X86_64_R10] = r->r10, [UNW_X86_64_R11] = r->r11,
        [UNW_X86_64_R12] = r->r12, [UNW_X86_64_R13] = r->r13, [UNW_X86_64_R14] = r->r14, [UNW_X86_64_R15] = r->r15,
        [UNW_X86_64_RIP] = r->rip,
    };
    memcpy(t->unw.regs, regs, sizeof regs);
    t->unw.stack = t->stack;
    t->unw.stack_start = t->stack_start;
    t->unw.stack_len = t->stack_len;
    /* Also when libunwind never asks for the leaf's table (a walk that fails at once). */
    (void)code_map(t, r->rip);
    uint64_t ips[MAX_FRAMES];
    cs_uw_end end;
    int n = cs_uw_walk(&t->unw, ips, MAX_FRAMES, &end);
    if (n == 1 && end.stuck) t->unwind_failures++;
    for (int i = 0; i < copies; i++) trace_emit_sample(t, tid, ns, ips, n);
}

#endif /* CS_TRACE_SUPPORTED */
