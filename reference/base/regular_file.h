/* regular_file.h — opening a file a user named, for reading: only a regular
 * file is read. A FIFO would block the run forever (nothing writes to it), a
 * device can stream without end, a folder reads as an empty file: each is
 * refused at once, in one sentence. The file is opened without blocking and
 * then inspected, so nothing can be swapped in between a look and the open. */
#ifndef SPECULA_REGULAR_FILE_H
#define SPECULA_REGULAR_FILE_H

#include <stdio.h>
#include <sys/types.h>

#include "error.h"

/* A descriptor for reading path, or -1 with "PATH: cannot open: REASON" (and
 * `hint` after it, when not NULL) or "PATH: is a FIFO, not a regular file". */
int regular_open(const char *path, const char *hint, sp_error *err);

/* The same as a stream ("rb"); NULL on failure. */
FILE *regular_fopen(const char *path, const char *hint, sp_error *err);

/* What a file of this mode is, for messages: "a FIFO", "a symbolic link", … */
const char *regular_file_kind(mode_t mode);

#endif
