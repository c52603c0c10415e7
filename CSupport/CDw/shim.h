// elfutils' libdw and libdwfl, for function names, inlined frames and source
// lines from DWARF (Debian: libdw-dev to build; libdw1 at run time). Only the
// analysis library (so the coldstart CLI and the tests) links it, never a host.
#include <elfutils/libdwfl.h>
#include <elfutils/libdwelf.h>
#include <dwarf.h>
