/* The app: calls libone, and libtwo when built with -DWITH_TWO. */
int one_value(void);
#ifdef WITH_TWO
int two_value(void);
#endif

int main(void) {
    int value = one_value();
#ifdef WITH_TWO
    value += two_value();
#endif
    return value == 0;
}
