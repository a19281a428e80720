/* atomic_file.h — every file specula writes is written whole or not at all: a temporary beside the final name,
 * flushed to the disk and renamed over it. An error or a kill at any moment leaves the previous file as it was
 * (at worst with a stray NAME.tmp.PID.N beside it). Assumes POSIX rename. */
#ifndef SPECULA_ATOMIC_FILE_H
#define SPECULA_ATOMIC_FILE_H

#include <stdio.h>

#include "error.h"

typedef struct {
    FILE *f;    /* write here between atomic_open and atomic_commit/abort */
    char *path; /* the final name */
    char *tmp;  /* the temporary beside it, in the same folder (rename must not cross file systems) */
} atomic_file;

/* Creates the temporary (mode 0666 less the umask, as fopen would). */
int atomic_open(atomic_file *a, const char *path, sp_error *err);
/* Checks that every write succeeded (ferror), flushes, fsyncs, closes and
 * renames into place. On any failure the temporary is removed, the old file
 * is untouched, and err names the final path. Always releases a. */
int atomic_commit(atomic_file *a, sp_error *err);
/* Gives up: closes and removes the temporary. Safe on a zeroed or released a. */
void atomic_abort(atomic_file *a);

/* The whole write through a callback that returns 0 or an errno. */
int atomic_write(const char *path, int (*body)(FILE *f, const void *ctx), const void *ctx, sp_error *err);

#endif
