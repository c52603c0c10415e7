#ifndef BRIDGE_HOLD_H
#define BRIDGE_HOLD_H
#include <stdint.h>
/* The capture layer's test hook (CSupport/CColdstart/sampler/smp.h): how
 * long its task clocks are held back, as a quiet kernel holds them. Every
 * host links its weak 0; a fixture linking this target gets the nanoseconds
 * of COLDSTART_BRIDGE_HOLD_MS (0 to 1000; 0 unset or out of range). */
uint64_t cs_test_bridge_hold_ns(void);
#endif
