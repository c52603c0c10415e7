// The timeline's `ownThreads`: each of Coldstart's threads' CPU clock at
// points of the launch (cs_own_tick), so that the analysis can count that
// CPU apart from the host's in each phase's getrusage.
#include "internal.h"

void cs_own_write(struct cs_jw *w, uint64_t start) {
    uint32_t count = atomic_load(&cs_g.own.count);
    if (count > CS_OWN_MAX) count = CS_OWN_MAX;
    cs_jw_raw(w, ",\n\"ownThreads\":[");
    bool first = true;
    for (uint32_t i = 0; i < count; i++) {
        const struct cs_own_thread *t = &cs_g.own.threads[i];
        uint32_t n = atomic_load_explicit(&t->npoints, memory_order_acquire);
        int tid = atomic_load(&t->tid);
        if (n == 0 || tid == 0) continue;
        if (n > CS_OWN_POINTS) n = CS_OWN_POINTS;
        cs_jw_raw(w, first ? "{\"tid\":" : ",{\"tid\":");
        first = false;
        cs_jw_i64(w, tid);
        cs_jw_raw(w, ",\"cpu\":[");
        for (uint32_t k = 0; k < n; k++) {
            cs_jw_raw(w, k ? ",[" : "[");
            cs_jw_i64(w, (int64_t)t->points[k].ns - (int64_t)start);
            cs_jw_raw(w, ",");
            cs_jw_u64(w, t->points[k].cpu_ns);
            cs_jw_raw(w, "]");
        }
        cs_jw_raw(w, "]}");
    }
    cs_jw_raw(w, "]");
}
