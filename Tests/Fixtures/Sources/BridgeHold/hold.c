// The bridge's test knob, linked into SamplerHost alone: the capture layer
// holds its task clocks back for COLDSTART_BRIDGE_HOLD_MS, as a quiet kernel
// holds them 10-18 ms, so that SamplerTests can test the bridge on a warm
// kernel too. This definition replaces the capture layer's weak one, which
// returns 0 in every host that does not link this target: a host never
// reads the variable.
#include "bridge_hold.h"

#include <stdlib.h>

uint64_t cs_test_bridge_hold_ns(void) {
    const char *value = getenv("COLDSTART_BRIDGE_HOLD_MS");
    if (!value || !*value) return 0;
    char *end;
    unsigned long ms = strtoul(value, &end, 10);
    if (*end || ms > 1000) return 0;
    return (uint64_t)ms * 1000000u;
}
