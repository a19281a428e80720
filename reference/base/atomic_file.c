/* atomic_file.c — write to a temporary, fsync, rename (see atomic_file.h).
 * The temporary is created with O_EXCL so two writers of the same name
 * never share one; the folder is fsynced after the rename so the new name
 * itself survives a crash. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "regular_file.h"

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(sp_xcalloc(n, 1, "file name"), s, n);
}

static void release(atomic_file *a) {
    free(a->path);
    free(a->tmp);
    a->f = NULL;
    a->path = a->tmp = NULL;
}

/* Only a regular file, or a name not taken yet, is replaced: a rename over a device node, a FIFO or a symbolic
 * link would put a plain file where it was (as root, over /dev/null itself) and leave a link's target stale. */
static int check_target(const char *path, sp_error *err) {
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : sp_fail(err, "%s: cannot look at it: %s", path, strerror(errno));
    if (S_ISREG(st.st_mode)) return 0;
    return sp_fail(err, "%s: is %s; an output may only be a regular file or a new name", path,
                   regular_file_kind(st.st_mode));
}

/* NAME.tmp.PID.N beside NAME, NAME cut first when the whole would pass the longest name a folder takes. */
static void temporary_name(char *tmp, size_t size, const char *path, unsigned counter) {
    char suffix[48];
    snprintf(suffix, sizeof suffix, ".tmp.%ld.%u", (long)getpid(), counter);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t keep = strlen(base);
    if (keep + strlen(suffix) > NAME_MAX) keep = NAME_MAX - strlen(suffix);
    snprintf(tmp, size, "%.*s%.*s%s", (int)(base - path), path, (int)keep, base, suffix);
}

int atomic_open(atomic_file *a, const char *path, sp_error *err) {
    static unsigned counter; /* tells apart the temporaries of one process */
    a->f = NULL;
    a->path = a->tmp = NULL;
    if (!path || !*path) return sp_fail(err, "no output file name given");
    if (check_target(path, err)) return -1;
    const size_t n = strlen(path) + 64;
    char *tmp = sp_xcalloc(n, 1, "file name");
    int fd = -1;
    for (int tries = 0; tries < 100 && fd < 0; tries++) {
        temporary_name(tmp, n, path, counter++);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return sp_fail(err, "%s: cannot create a temporary file beside it: %s", path, strerror(e));
    }
    a->f = fdopen(fd, "wb");
    if (!a->f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        return sp_fail(err, "%s: %s", path, strerror(e));
    }
    a->tmp = tmp;
    a->path = dup_str(path);
    return 0;
}

void atomic_abort(atomic_file *a) {
    if (a->f) fclose(a->f);
    if (a->tmp) unlink(a->tmp);
    release(a);
}

/* fsync of the folder that holds path, so the rename is on the disk too.
 * Best effort: some file systems refuse fsync on a directory. */
static void sync_folder(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir = dup_str(slash ? path : ".");
    if (slash) dir[slash == path ? 1 : slash - path] = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}

int atomic_commit(atomic_file *a, sp_error *err) {
    if (!a->f) return sp_fail(err, "%s: the file was not open", a->path ? a->path : "(unnamed)");
    int e = 0;
    if (ferror(a->f)) e = errno ? errno : EIO;
    if (!e && fflush(a->f) != 0) e = errno ? errno : EIO;
    if (!e && fsync(fileno(a->f)) != 0) e = errno;
    int closed = fclose(a->f);
    a->f = NULL;
    if (!e && closed != 0) e = errno ? errno : EIO;
    if (!e && check_target(a->path, err)) { /* something other than a file took the name meanwhile */
        unlink(a->tmp);
        release(a);
        return -1;
    }
    if (!e && rename(a->tmp, a->path) != 0) {
        e = errno;
        unlink(a->tmp);
        sp_fail(err, "%s: cannot rename the finished file into place (the old one is left as it was): %s", a->path,
                strerror(e));
        release(a);
        return -1;
    }
    if (e) {
        unlink(a->tmp);
        sp_fail(err, "%s: write failed (the old file is left as it was): %s", a->path, strerror(e));
        release(a);
        return -1;
    }
    sync_folder(a->path);
    release(a);
    return 0;
}

int atomic_write(const char *path, int (*body)(FILE *f, const void *ctx), const void *ctx, sp_error *err) {
    atomic_file a;
    if (atomic_open(&a, path, err)) return -1;
    errno = 0;
    int e = body(a.f, ctx);
    if (e) {
        atomic_abort(&a);
        return sp_fail(err, "%s: write failed (the old file is left as it was): %s", path, strerror(e));
    }
    return atomic_commit(&a, err);
}
