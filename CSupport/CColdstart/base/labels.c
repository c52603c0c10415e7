// Production mode's launch facts (docs/timeline-format.md, "labels"):
// COLDSTART_LABELS parsed at start-up, and the labels and sampling draw
// written into the timeline. Calls only the leaves (sys, jsonw).
#include "internal.h"

#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/utsname.h>

static bool key_char(char c, bool first) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || (!first && ((c >= '0' && c <= '9') || c == '.'));
}

// One stderr line naming the pair at fault; the labels are left empty.
static void reject(struct cs_labels *out, const char *why, const char *pair, size_t len) {
    char msg[160] = "ignoring COLDSTART_LABELS (";
    strcat(msg, why);
    strcat(msg, "): ");
    char shown[96];
    size_t n = len < sizeof shown - 1 ? len : sizeof shown - 1;
    memcpy(shown, pair, n);
    shown[n] = 0;
    out->n = 0;
    cs_warn(msg, shown);
}

void cs_labels_parse(const char *spec, struct cs_labels *out) {
    out->n = 0;
    size_t used = 0;
    for (const char *p = spec; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t klen = eq ? (size_t)(eq - p) : len, vlen = eq ? len - klen - 1 : 0;
        if (!eq || klen == 0) return reject(out, "want key=value pairs separated by commas", p, len);
        for (size_t i = 0; i < klen; i++)
            if (!key_char(p[i], i == 0)) return reject(out, "a key is [A-Za-z_][A-Za-z0-9_.]*", p, len);
        for (size_t i = 0; i < vlen; i++)
            if ((unsigned char)eq[1 + i] < 0x20 || eq[1 + i] == 0x7f) return reject(out, "control character in a value", p, len);
        if (klen > CS_LABEL_KEY_MAX || vlen > CS_LABEL_VALUE_MAX) return reject(out, "key over 64 or value over 256 bytes", p, len);
        if (out->n == CS_MAX_LABELS) return reject(out, "more than 16 labels", p, len);
        for (uint32_t i = 0; i < out->n; i++)
            if (out->key_len[i] == klen && memcmp(out->buf + out->key_off[i], p, klen) == 0)
                return reject(out, "a key given twice", p, len);
        uint32_t k = out->n++;
        out->key_off[k] = (uint16_t)used; out->key_len[k] = (uint16_t)klen;
        memcpy(out->buf + used, p, klen); used += klen;
        out->val_off[k] = (uint16_t)used; out->val_len[k] = (uint16_t)vlen;
        memcpy(out->buf + used, eq + 1, vlen); used += vlen;
        p += len;
        if (*p == ',') p++;
    }
}

bool cs_parse_fraction(const char *s, uint32_t *ppm) {
    uint64_t whole = 0, frac = 0, scale = 1000000;
    const char *p = s;
    if (!(*p >= '0' && *p <= '9') && *p != '.') return false;
    while (*p >= '0' && *p <= '9') { whole = whole * 10 + (uint64_t)(*p - '0'); if (whole > 1) return false; p++; }
    if (*p == '.') {
        p++;
        for (; *p >= '0' && *p <= '9'; p++) {
            scale /= 10;
            frac += (uint64_t)(*p - '0') * scale;   // digits past the sixth add 0
        }
    }
    if (*p != 0 || (p > s && p[-1] == '.' && p - 1 == s)) return false;
    if (whole == 1 && frac != 0) return false;
    *ppm = (uint32_t)(whole * 1000000 + frac);
    return true;
}

// The executable's GNU build-id as hex, from its program headers in memory
// (AT_PHDR: the executable is mapped for the whole life of the process).
static size_t executable_build_id(char *hex, size_t cap) {
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
    size_t phnum = (size_t)getauxval(AT_PHNUM);
    if (!ph) return 0;
    // The load bias comes from PT_PHDR; without it (some static
    // executables) the notes' address is unknown, and no guess is read.
    uintptr_t bias = 0;
    bool known = false;
    for (size_t i = 0; i < phnum; i++)
        if (ph[i].p_type == PT_PHDR) { bias = (uintptr_t)ph - ph[i].p_vaddr; known = true; }
    if (!known) return 0;
    for (size_t i = 0; i < phnum; i++) {
        if (ph[i].p_type != PT_NOTE) continue;
        uint8_t id[32];
        size_t n = cs_note_build_id((const char *)(bias + ph[i].p_vaddr), ph[i].p_memsz, id,
                                    (cap - 1) / 2 < sizeof id ? (cap - 1) / 2 : sizeof id);
        if (n) {
            cs_hex(id, n, hex);
            return 2 * n;
        }
    }
    return 0;
}

static bool user_has(const struct cs_labels *l, const char *key) {
    for (uint32_t i = 0; i < l->n; i++)
        if (l->key_len[i] == strlen(key) && memcmp(l->buf + l->key_off[i], key, l->key_len[i]) == 0) return true;
    return false;
}

static void default_label(struct cs_jw *w, const struct cs_labels *l, const char *key, const char *value, bool *first) {
    if (user_has(l, key) || value[0] == 0) return;
    cs_jw_raw(w, *first ? "" : ",");
    *first = false;
    cs_jw_key(w, key);
    cs_jw_cstr(w, value);
}

void cs_labels_write(struct cs_jw *w, const struct utsname *uts) {
    const struct cs_labels *l = &cs_g.cfg.labels;
    uint32_t ppm = cs_g.cfg.sample_ppm;
    cs_jw_raw(w, ",\n\"sample\":{\"fraction\":");
    char frac[10] = "0.000000";
    if (ppm >= 1000000) strcpy(frac, "1");
    else for (int d = 7; d >= 2; d--, ppm /= 10) frac[d] = (char)('0' + ppm % 10);
    cs_jw_raw(w, frac);
    cs_jw_raw(w, ",\"sampled\":"); cs_jw_raw(w, cs_g.cfg.sampled ? "true" : "false");
    cs_jw_raw(w, "},\n\"labels\":{");
    bool first = true;
    char build_id[65] = "";
    executable_build_id(build_id, sizeof build_id);
    default_label(w, l, "host", uts->nodename, &first);
    default_label(w, l, "kernel", uts->release, &first);
    default_label(w, l, "buildId", build_id, &first);
    for (uint32_t i = 0; i < l->n; i++) {
        cs_jw_raw(w, first ? "" : ",");
        first = false;
        cs_jw_str(w, l->buf + l->key_off[i], l->key_len[i]);
        cs_jw_raw(w, ":");
        cs_jw_str(w, l->buf + l->val_off[i], l->val_len[i]);
    }
    cs_jw_raw(w, "}");
}
