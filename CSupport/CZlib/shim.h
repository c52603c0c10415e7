// zlib, for the gzip members of pprof exports (Debian: zlib1g-dev to build;
// libz.so.1 is part of every Debian system). Only the coldstart CLI links it.
#include <zlib.h>
