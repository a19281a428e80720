/* fuzz.h — what the fuzz targets (tests/fuzz/fuzz_*.c) share. Each is linked by libFuzzer (make fuzz) or by
 * replay.c, which feeds it files (make test). */
#ifndef SPECULA_FUZZ_H
#define SPECULA_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* data[size] as a malloc'd C string (an embedded NUL ends it early, as it would in a file read as text). */
static inline char *fuzz_text(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s) abort();
    if (size) memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* Aborts, a crash to the fuzzer, when an invariant of a successful parse fails. */
#define FUZZ_CHECK(cond)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond);                               \
            abort();                                                                                                   \
        }                                                                                                              \
    } while (0)

#endif
