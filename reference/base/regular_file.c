/* regular_file.c — see regular_file.h. */
#include "regular_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *regular_file_kind(mode_t mode) {
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISLNK(mode)) return "a symbolic link";
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

int regular_open(const char *path, const char *hint, sp_error *err) {
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return sp_fail(err, "%s: cannot open: %s%s", path, strerror(errno), hint ? hint : "");
    struct stat st;
    if (fstat(fd, &st) != 0) {
        const int e = errno;
        close(fd);
        return sp_fail(err, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        if (S_ISDIR(st.st_mode)) return sp_fail(err, "%s: is a folder, not a file", path);
        return sp_fail(err, "%s: is %s, not a regular file", path, regular_file_kind(st.st_mode));
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK); /* a regular file never blocks: reads as usual */
    return fd;
}

FILE *regular_fopen(const char *path, const char *hint, sp_error *err) {
    const int fd = regular_open(path, hint, err);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        sp_fail(err, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}
