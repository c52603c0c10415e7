// The early-init target has no API: linking it places one function in the
// executable's .preinit_array (earliest user code, before every shared
// library's constructor) and one constructor that runs just before main.
#ifndef COLDSTART_EARLY_H
#define COLDSTART_EARLY_H
#endif
