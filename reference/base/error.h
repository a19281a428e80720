/* error.h — how every fallible call in specula reports a problem.
 * A function that can fail returns 0 on success and -1 on failure, after
 * writing one human-readable sentence into an sp_error the caller owns:
 * the file, the tensor or the field, what was expected and what was found. */
#ifndef SPECULA_ERROR_H
#define SPECULA_ERROR_H

#include <stddef.h>

typedef struct {
    char msg[1024];
} sp_error;

/* Formats the message into e (when e is not NULL) and returns -1, so that
 * `return sp_fail(err, "...", ...);` reads as one statement. */
int sp_fail(sp_error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefixes an existing message with more context ("loading X: " + old). */
int sp_wrap(sp_error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Allocation that never returns NULL: prints where it failed and exits.
 * Used for the working buffers whose size the caller has already checked. */
void *sp_xcalloc(size_t n, size_t size, const char *what);
/* realloc to n·size bytes with the same contract. */
void *sp_xrealloc(void *ptr, size_t n, size_t size, const char *what);

#endif
