/* test_atomic_file.c — reference/base/atomic_file.c: a committed write replaces the file whole, and every way a
 * write can fail (the body's error, a stream error, a folder taking the name, an abort, a missing folder) leaves the
 * old file byte for byte, with no temporary beside it and no descriptor open; and only a regular file or a new name
 * is ever replaced. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "atomic_file.h"
#include "harness.h"

#define OLD "the previous, good contents\n"

static char dir[4096], path[4200];

static void setup_dir(void) {
    harness_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/out.dat", dir);
    harness_write_file(path, OLD, strlen(OLD));
}

static char *slurp(const char *p, size_t *n) {
    FILE *f = fopen(p, "rb");
    ck_assert_msg(f != NULL, "cannot read %s", p);
    static char buf[1 << 16];
    *n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return buf;
}

static void assert_old_intact(void) {
    size_t n;
    const char *got = slurp(path, &n);
    ck_assert_uint_eq(n, strlen(OLD));
    ck_assert(memcmp(got, OLD, n) == 0);
}

static int count_entries(const char *d) {
    DIR *h = opendir(d);
    ck_assert(h != NULL);
    int n = 0;
    for (struct dirent *e; (e = readdir(h)) != NULL;) n += e->d_name[0] != '.';
    closedir(h);
    return n;
}

/* Open descriptors of this process (the test runs in its own child). */
static int count_fds(void) { return count_entries("/proc/self/fd"); }

static int write_new(FILE *f, const void *ctx) { return fputs(ctx, f) == EOF ? EIO : 0; }
static int fail_midway(FILE *f, const void *ctx) {
    fputs("half of a new fi", f);
    return ENOSPC;
}

START_TEST(test_commit_replaces_whole) {
    setup_dir();
    sp_error err;
    ck_assert_int_eq(atomic_write(path, write_new, "new\n", &err), 0);
    size_t n;
    const char *got = slurp(path, &n);
    ck_assert_uint_eq(n, 4);
    ck_assert(memcmp(got, "new\n", 4) == 0);
    ck_assert_int_eq(count_entries(dir), 1); /* no temporary left */
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_body_error_keeps_old) {
    setup_dir();
    sp_error err;
    const int fds = count_fds();
    ck_assert_int_eq(atomic_write(path, fail_midway, NULL, &err), -1);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "left as it was"), "message: %s", err.msg);
    assert_old_intact();
    ck_assert_int_eq(count_entries(dir), 1);
    ck_assert_int_eq(count_fds(), fds);
    harness_rmtree(dir);
}
END_TEST

/* A real stream error: writes past RLIMIT_FSIZE fail with EFBIG (SIGXFSZ
 * ignored), as a full disk would fail them. Both the write that fails at
 * once and the one that fails only when the buffer is flushed. */
START_TEST(test_stream_error_keeps_old) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 1024; /* the soft limit only, so it can be lifted again */
    for (int big = 0; big < 2; big++) {
        setup_dir();
        sp_error err;
        const int fds = count_fds();
        atomic_file a;
        ck_assert_int_eq(atomic_open(&a, path, &err), 0);
        static char data[1 << 15];
        memset(data, 'x', sizeof data);
        /* no ck_assert while the limit holds: Check's own result file obeys it too */
        const int limited = setrlimit(RLIMIT_FSIZE, &lim);
        fwrite(data, 1, big ? sizeof data : 2000, a.f); /* 2000 bytes stay in the buffer until the flush */
        const int rc = atomic_commit(&a, &err);
        setrlimit(RLIMIT_FSIZE, &old);
        ck_assert_int_eq(limited, 0);
        ck_assert_int_eq(rc, -1);
        ck_assert_msg(strstr(err.msg, path) != NULL, "message: %s", err.msg);
        ck_assert(a.f == NULL && a.tmp == NULL);
        assert_old_intact();
        ck_assert_int_eq(count_entries(dir), 1);
        ck_assert_int_eq(count_fds(), fds);
        harness_rmtree(dir);
    }
}
END_TEST

/* A folder that takes the name while the file is being written: the commit refuses to put the file there (the
 * rename would fail on a non-empty folder, and replace an empty one), removes the temporary, leaves the folder. */
START_TEST(test_a_folder_taking_the_name_keeps_it) {
    setup_dir();
    char sub[4300], inner[4400];
    snprintf(sub, sizeof sub, "%s/folder", dir);
    sp_error err;
    atomic_file a;
    ck_assert_int_eq(atomic_open(&a, sub, &err), 0);
    fputs("new\n", a.f);
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    snprintf(inner, sizeof inner, "%s/keep", sub);
    harness_write_file(inner, "k", 1);
    ck_assert_int_eq(atomic_commit(&a, &err), -1);
    ck_assert_msg(strstr(err.msg, "is a folder"), "message: %s", err.msg);
    ck_assert_int_eq(count_entries(dir), 2);
    ck_assert_int_eq(count_entries(sub), 1);
    assert_old_intact();
    harness_rmtree(dir);
}
END_TEST

/* Only a regular file or a new name is replaced: a FIFO, a symbolic link (its target left stale) and a device node
 * (as root, /dev/null itself) are refused before anything is written, and nothing is left beside them. */
START_TEST(test_only_a_regular_file_is_replaced) {
    setup_dir();
    char fifo[4300], link[4300];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(link, sizeof link, "%s/link", dir);
    ck_assert_int_eq(mkfifo(fifo, 0644), 0);
    ck_assert_int_eq(symlink(path, link), 0);
    const char *names[] = {fifo, link, "/dev/null"},
               *kinds[] = {"is a FIFO", "is a symbolic link", "is a character device"};
    for (int i = 0; i < 3; i++) {
        sp_error err;
        atomic_file a;
        ck_assert_int_eq(atomic_open(&a, names[i], &err), -1);
        ck_assert_msg(strstr(err.msg, kinds[i]) && strstr(err.msg, names[i]), "message: %s", err.msg);
    }
    struct stat st;
    ck_assert_int_eq(lstat(link, &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    ck_assert_int_eq(stat("/dev/null", &st), 0);
    ck_assert(S_ISCHR(st.st_mode));
    ck_assert_int_eq(count_entries(dir), 3); /* the file, the FIFO, the link: no temporary */
    assert_old_intact();
    harness_rmtree(dir);
}
END_TEST

/* A name of 254 bytes, one short of the longest a folder takes: its temporary is cut to fit. */
START_TEST(test_a_long_name_is_written) {
    setup_dir();
    char name[300], full[4400];
    memset(name, 'n', 254);
    name[254] = '\0';
    snprintf(full, sizeof full, "%s/%s", dir, name);
    sp_error err;
    ck_assert_msg(atomic_write(full, write_new, "new\n", &err) == 0, "%s", err.msg);
    ck_assert_int_eq(count_entries(dir), 2);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_abort_and_missing_folder) {
    setup_dir();
    sp_error err;
    atomic_file a;
    const int fds = count_fds();
    ck_assert_int_eq(atomic_open(&a, path, &err), 0);
    fputs("never seen", a.f);
    atomic_abort(&a);
    atomic_abort(&a); /* released: a second abort does nothing */
    assert_old_intact();
    ck_assert_int_eq(count_entries(dir), 1);
    ck_assert_int_eq(count_fds(), fds);
    char missing[4300];
    snprintf(missing, sizeof missing, "%s/no/such/out.dat", dir);
    ck_assert_int_eq(atomic_open(&a, missing, &err), -1);
    ck_assert_msg(strstr(err.msg, missing) != NULL, "message: %s", err.msg);
    harness_rmtree(dir);
}
END_TEST

Suite *atomic_file_suite(void) {
    Suite *s = suite_create("atomic_file");
    TCase *tc = harness_tcase("core", 10);
    tcase_add_test(tc, test_commit_replaces_whole);
    tcase_add_test(tc, test_body_error_keeps_old);
    tcase_add_test(tc, test_stream_error_keeps_old);
    tcase_add_test(tc, test_a_folder_taking_the_name_keeps_it);
    tcase_add_test(tc, test_only_a_regular_file_is_replaced);
    tcase_add_test(tc, test_a_long_name_is_written);
    tcase_add_test(tc, test_abort_and_missing_folder);
    suite_add_tcase(s, tc);
    return s;
}
