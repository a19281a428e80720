/* error.c — sp_error formatting and the checked allocator. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sp_fail(sp_error *e, const char *fmt, ...) {
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int sp_wrap(sp_error *e, const char *fmt, ...) {
    if (!e) return -1;
    char prefix[512], old[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    size_t n = strlen(prefix);
    if (n >= sizeof e->msg) n = sizeof e->msg - 1;
    memcpy(e->msg, prefix, n);
    size_t room = sizeof e->msg - 1 - n, m = strlen(old);
    memcpy(e->msg + n, old, m < room ? m : room);
    e->msg[n + (m < room ? m : room)] = '\0';
    return -1;
}

void *sp_xcalloc(size_t n, size_t size, const char *what) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "specula: out of memory allocating %zu x %zu bytes for %s\n", n, size, what);
        exit(2);
    }
    return p;
}

void *sp_xrealloc(void *ptr, size_t n, size_t size, const char *what) {
    void *p = (n && size && n > (size_t)-1 / size) ? NULL : realloc(ptr, (n ? n : 1) * (size ? size : 1));
    if (!p) {
        fprintf(stderr, "specula: out of memory growing %s to %zu x %zu bytes\n", what, n, size);
        exit(2);
    }
    return p;
}
