#ifndef CXX_THROW_H
#define CXX_THROW_H
#ifdef __cplusplus
extern "C" {
#endif
/// Throws and catches `count` C++ exceptions through a few frames; returns how
/// many were caught.
int cxx_throw_and_catch(int count);
/// Walks the loaded objects with dl_iterate_phdr, allocating in the callback
/// (while the loader's lock is held); returns how many objects it saw.
int iterate_objects_allocating(void);
#ifdef __cplusplus
}
#endif
#endif
