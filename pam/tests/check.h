/* Assertion counter shared by the C tests: every CHECK is one counted assertion. */
#ifndef TG_CHECK_H
#define TG_CHECK_H

#include <stdio.h>

static int check_passed, check_failed;

#define CHECK(cond, ...)                                         \
    do {                                                         \
        if (cond) {                                              \
            check_passed++;                                      \
        } else {                                                 \
            check_failed++;                                      \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fputc('\n', stderr);                                 \
        }                                                        \
    } while (0)

/* Prints the line the Makefile adds up; the exit status mirrors it. */
static inline int check_summary(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
    printf("tally: %d %d\n", check_passed, check_failed);
    fflush(stdout);
    return check_failed == 0 ? 0 : 1;
}

/* The number of elements of an array. */
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

#endif /* TG_CHECK_H */
