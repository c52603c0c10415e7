#include "cxx_throw.h"

#include <link.h>
#include <stdlib.h>

#include <stdexcept>
#include <string>

namespace {
[[gnu::noinline]] void thrower(int depth, int i) {
    if (depth == 0) throw std::runtime_error("fixture exception " + std::to_string(i));
    thrower(depth - 1, i);
}
}  // namespace

int cxx_throw_and_catch(int count) {
    int caught = 0;
    for (int i = 0; i < count; i++) {
        try {
            thrower(4, i);
        } catch (const std::runtime_error &e) {
            if (std::string(e.what()).rfind("fixture exception", 0) == 0) caught++;
        }
    }
    return caught;
}

int iterate_objects_allocating(void) {
    int seen = 0;
    dl_iterate_phdr([](struct dl_phdr_info *, size_t, void *data) -> int {
        free(malloc(64));
        ++*static_cast<int *>(data);
        return 0;
    }, &seen);
    return seen;
}
