// A namespace-scope object with a constructor: the compiler emits a
// `_GLOBAL__sub_I_registry.cpp` function into .init_array, which runs
// before main (coldstart inspect's C++ static constructor fixture).
#include "static_constructors.h"
#include <map>
#include <string>

namespace {
struct Registry {
    std::map<std::string, int> table;
    Registry() {
        table["alpha"] = 1;
        table["beta"] = 2;
        table["gamma"] = 3;
    }
};
Registry registry;
}  // namespace

extern "C" int static_constructors_entries(void) { return static_cast<int>(registry.table.size()); }
