/* libone.so: a C library constructor, run by the loader before main. */
int one_ready;

__attribute__((constructor)) static void one_constructor(void) { one_ready = 1; }

int one_value(void) { return one_ready; }
