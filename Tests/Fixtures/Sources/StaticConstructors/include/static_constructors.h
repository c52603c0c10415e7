#ifndef STATIC_CONSTRUCTORS_H
#define STATIC_CONSTRUCTORS_H
#ifdef __cplusplus
extern "C" {
#endif
/// How many entries the C++ static constructor put in the table (3).
int static_constructors_entries(void);
#ifdef __cplusplus
}
#endif
#endif
