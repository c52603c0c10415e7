/* libtwo.so: the library a later build adds, with a constructor of its own. */
int two_ready;

__attribute__((constructor)) static void two_constructor(void) { two_ready = 2; }

int two_value(void) { return two_ready; }
