// The module table, by which the sampling sections (smpjson.c) and the
// watcher's blocked stacks (watchjson.c) place frames. Runs in the timeline writer,
// which may be a signal handler: /proc/self/maps is read with open/read into a
// fixed buffer, ELF headers are read from memory with cs_safe_read, and
// nothing allocates.
//
// The table is taken by the scan thread once main runs, and again when the
// timeline is written if the loader has unloaded anything since, or loaded
// something that a recorded frame lies in (its dlopen/dlclose counts, from
// dl_iterate_phdr; Coldstart's own libunwind loads count too, hence the
// frames), or if the writer runs in a signal handler (the loader's lock is
// not ours to take there). Reading
// /proc/self/maps and the ELF headers costs ~0.4 ms, which the host's exit
// then no longer waits for; the scan thread asks for the executable
// mappings alone where the kernel can (cs_modules_query: ~0.08 ms instead of
// ~0.25 ms of its CPU, which the host's main thread shares the machine with). A library dlopen'd *and* dlclose'd during the
// launch is gone from /proc/self/maps by then, and its frames are recorded
// with module -1 and their absolute address; so are code mappings made
// without the loader (an mmap'd executable file) after the early table.
#include "internal.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>


struct maps_reader {
    int fd;
    size_t len, pos;
    char buf[4096];
};

// Copies the next line (without '\n') into `line`; false at the end.
static bool next_line(struct maps_reader *r, char *line, size_t cap) {
    size_t n = 0;
    for (;;) {
        if (r->pos == r->len) {
            ssize_t k = read(r->fd, r->buf, sizeof r->buf);
            if (k <= 0) {
                line[n] = 0;
                return n > 0;
            }
            r->len = (size_t)k;
            r->pos = 0;
        }
        char c = r->buf[r->pos++];
        if (c == '\n') break;
        if (n + 1 < cap) line[n++] = c;
    }
    line[n] = 0;
    return true;
}

// The GNU build-id from the PT_NOTE segments of the object at `bias`.
static void read_build_id(struct cs_module *m, const ElfW(Phdr) *ph, int phnum) {
    for (int i = 0; i < phnum; i++) {
        if (ph[i].p_type != PT_NOTE) continue;
        char notes[512];
        size_t len = ph[i].p_memsz < sizeof notes ? ph[i].p_memsz : sizeof notes;
        if (!cs_safe_read(m->base + ph[i].p_vaddr, notes, len)) continue;
        m->build_id_len = (uint8_t)cs_note_build_id(notes, len, m->build_id, sizeof m->build_id);
        if (m->build_id_len) return;
    }
}

// Load bias and build-id from the ELF header mapped at `header`.
static void identify(struct cs_module *m, uint64_t header, uint64_t file_offset) {
    ElfW(Ehdr) eh;
    ElfW(Phdr) ph[32];
    // Without a fault-free read, assume the usual layout (vaddr = file offset).
    m->base = m->start - file_offset;
    if (!cs_safe_read(header, &eh, sizeof eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return;
    int phnum = eh.e_phnum < 32 ? eh.e_phnum : 32;
    if (!cs_safe_read(header + eh.e_phoff, ph, (size_t)phnum * sizeof *ph)) return;
    for (int i = 0; i < phnum; i++) {
        if (ph[i].p_type != PT_LOAD) continue;
        m->base = header - (ph[i].p_vaddr & ~(uint64_t)4095);   // the lowest PT_LOAD maps the header
        break;
    }
    read_build_id(m, ph, phnum);
}

struct loaded_lookup {
    struct cs_module *m;
    bool found;
};

// dl_iterate_phdr callback: if the object covers m->start, its load bias and
// build-id, read straight from its loaded segments (no system call).
static int find_loaded(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct loaded_lookup *l = data;
    struct cs_module *m = l->m;
    bool covers = false;
    for (int i = 0; i < info->dlpi_phnum && !covers; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = info->dlpi_addr + ph->p_vaddr;
        covers = ph->p_type == PT_LOAD && m->start >= (lo & ~(uint64_t)4095) && m->start < lo + ph->p_memsz;
    }
    if (!covers) return 0;
    m->base = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum && !m->build_id_len; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        size_t len = ph->p_memsz < 512 ? ph->p_memsz : 512;
        m->build_id_len = (uint8_t)cs_note_build_id((const char *)(uintptr_t)(info->dlpi_addr + ph->p_vaddr), len,
                                                    m->build_id, sizeof m->build_id);
    }
    l->found = true;
    return 1;
}

// A path longer than the table keeps is cut on a character boundary, so the
// timeline's string stays UTF-8 where the path was. Pure.
static void copy_path(struct cs_module *m, const char *path) {
    size_t n = strnlen(path, sizeof m->path - 1);
    if (path[n]) n = cs_utf8_cut(path, n);
    memcpy(m->path, path, n);
    m->path[n] = 0;
}

// Reads /proc/self/maps. With `loaded_objects` (never in a signal handler:
// dl_iterate_phdr takes the loader's lock), the bias and build-id of what the
// loader loaded come from its own list, in memory; anything else (a file the
// program mapped itself) is read with cs_safe_read, one system call per read.
void cs_modules_read_maps(bool loaded_objects) {
    S->nmodules = 0;
    struct maps_reader r = {.fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC)};
    if (r.fd < 0) return;
    char line[CS_SMP_PATH + 128];
    char header_path[CS_SMP_PATH] = "";
    uint64_t header_at = 0;
    while (next_line(&r, line, sizeof line)) {
        struct cs_maps_line ml;
        if (!cs_parse_maps_line(line, &ml)) continue;
        uint64_t start = ml.start, end = ml.end, offset = ml.offset;
        const char *perms = ml.perms, *path = ml.path;
        if (*path == 0 || (*path == '[' && strcmp(path, "[vdso]") != 0)) continue;
        if (offset == 0) {
            header_at = start;
            strncpy(header_path, path, sizeof header_path - 1);
        }
        if (perms[2] != 'x' || S->nmodules == CS_SMP_MAX_MODULES) continue;
        struct cs_module *m = &S->modules[S->nmodules++];
        memset(m, 0, sizeof *m);
        m->start = start;
        m->end = end;
        copy_path(m, path);
        struct loaded_lookup l = {m, false};
        if (loaded_objects) dl_iterate_phdr(find_loaded, &l);
        if (!l.found) identify(m, strcmp(path, header_path) == 0 ? header_at : start, offset);
    }
    close(r.fd);
}

void cs_modules_load(void) { cs_modules_read_maps(false); }

// PROCMAP_QUERY (Linux 6.11, include/uapi/linux/fs.h, newer than the C
// library's headers): one ioctl on the maps file returns the first mapping at
// or after an address that matches the flags, with its file's path.
struct procmap_query {
    uint64_t size, query_flags, query_addr;
    uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
    uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
    uint64_t vma_name_addr, build_id_addr;
};
#define CS_PROCMAP_QUERY _IOWR('f', 17, struct procmap_query)
#define CS_PROCMAP_EXECUTABLE 0x04
#define CS_PROCMAP_COVERING_OR_NEXT 0x10

// The table of cs_modules_read_maps(true) from the executable mappings alone, asked
// one by one: the kernel then formats ~20 paths instead of every mapping's
// line (~120 for a Foundation tool), and nothing is parsed. False (the table
// empty) on a kernel without the query, or when a mapping is not one the
// loader made, whose ELF header only the maps text locates.
bool cs_modules_query(void) {
    S->nmodules = 0;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = true;
    char path[PATH_MAX];
    for (uint64_t addr = 0; ok;) {
        struct procmap_query q = {
            .size = sizeof q, .query_flags = CS_PROCMAP_EXECUTABLE | CS_PROCMAP_COVERING_OR_NEXT, .query_addr = addr,
            .vma_name_size = sizeof path, .vma_name_addr = (uintptr_t)path,
        };
        if (ioctl(fd, CS_PROCMAP_QUERY, &q) != 0) {
            ok = errno == ENOENT;   // past the last one
            break;
        }
        addr = q.vma_end;
        // Anonymous code and the kernel's special mappings but the vDSO are
        // no modules, as in the maps text.
        if (q.vma_name_size == 0 || (path[0] == '[' && strcmp(path, "[vdso]") != 0)) continue;
        if (S->nmodules == CS_SMP_MAX_MODULES) break;
        struct cs_module *m = &S->modules[S->nmodules++];
        memset(m, 0, sizeof *m);
        m->start = q.vma_start;
        m->end = q.vma_end;
        copy_path(m, path);
        struct loaded_lookup l = {m, false};
        dl_iterate_phdr(find_loaded, &l);
        ok = l.found;
    }
    close(fd);
    if (!ok) S->nmodules = 0;
    return ok;
}

struct loader_counts {
    bool known;
    uint64_t adds, subs;
};

// dl_iterate_phdr callback: the counts, from the first object (then stop).
static int read_counts(struct dl_phdr_info *info, size_t size, void *data) {
    struct loader_counts *c = data;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        c->known = true;
        c->adds = info->dlpi_adds;
        c->subs = info->dlpi_subs;
    }
    return 1;
}

static struct loader_counts loader_counts(void) {
    struct loader_counts c = {0};
    dl_iterate_phdr(read_counts, &c);
    return c;
}

void cs_modules_preload(void) {
    struct loader_counts c = loader_counts();
    if (!c.known) return;
    if (!cs_modules_query()) cs_modules_read_maps(true);
    S->modules_adds = c.adds;
    S->modules_subs = c.subs;
    S->modules_early = true;
}

// Whether a reload could place `a`: it is outside the table but inside an
// object the loader has now. (A frame-pointer walk through code without frame
// pointers yields addresses in no object at all: no table would place them.)
static bool missing(uint64_t a) {
    struct dl_find_object fo;
    return cs_module_of(a) < 0 && _dl_find_object((void *)(uintptr_t)a, &fo) == 0;
}

// Whether the table holds every recorded frame that lies in a loaded object:
// the samples' and the watcher's blocked stacks' (leaves at their address,
// return addresses at address − 1, as they are written).
static bool frames_covered(void) {
    uint32_t n = atomic_load(&S->next_sample);
    if (n > S->max_samples) n = S->max_samples;
    for (uint32_t i = 0; i < n; i++) {
        const struct cs_sample *smp = &S->samples[i];
        if (!atomic_load_explicit(&smp->committed, memory_order_acquire)) continue;
        for (uint32_t f = 0; f < smp->nframes; f++) {
            uint64_t a = S->frames[smp->frame_off + f];
            if (missing(f == 0 ? a : a - 1)) return false;
        }
    }
    const struct cs_watch_buffers *b = cs_g.watch.buf;
    uint32_t nstacks = b ? atomic_load_explicit(&cs_g.watch.nstacks, memory_order_acquire) : 0;
    for (uint32_t s = 0; s < nstacks; s++) {
        for (uint32_t f = 0; f < b->stacks[s].len; f++) {
            uint64_t a = b->frames[b->stacks[s].off + f];
            if (missing(f == 0 ? a : a - 1)) return false;
        }
    }
    return true;
}

void cs_modules_for_writer(void) {
    bool in_handler = cs_g.launch.end_reason == CS_END_SIGNAL;
    if (S->modules_early && !in_handler) {
        struct loader_counts c = loader_counts();
        if (c.known && c.subs == S->modules_subs && (c.adds == S->modules_adds || frames_covered())) return;
    }
    cs_modules_read_maps(!in_handler);
}

// Index of the module holding `addr`, or -1. The table is sorted by address.
int cs_module_of(uint64_t addr) {
    int lo = 0, hi = (int)S->nmodules - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const struct cs_module *m = &S->modules[mid];
        if (addr < m->start) hi = mid - 1;
        else if (addr >= m->end) lo = mid + 1;
        else return mid;
    }
    return -1;
}
