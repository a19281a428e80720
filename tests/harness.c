/* harness.c — helpers shared by the test suites (see harness.h). */
#include "harness.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SKIPS 256

typedef struct {
    char suite[64], test[96], reason[256];
} skip_entry;

static skip_entry skips[MAX_SKIPS];
static int n_skips;

void harness_skip(const char *suite, const char *test, const char *reason) {
    if (n_skips == MAX_SKIPS) return;
    skip_entry *e = &skips[n_skips++];
    snprintf(e->suite, sizeof e->suite, "%s", suite);
    snprintf(e->test, sizeof e->test, "%s", test);
    snprintf(e->reason, sizeof e->reason, "%s", reason);
}

/* Used by the runner. */
int harness_skip_count(void);
void harness_print_skips(FILE *f);

int harness_skip_count(void) { return n_skips; }

void harness_print_skips(FILE *f) {
    for (int i = 0; i < n_skips; i++) fprintf(f, "SKIP %s/%s: %s\n", skips[i].suite, skips[i].test, skips[i].reason);
}

void harness_tmpdir(char *out, size_t size) {
    const char *base = getenv("TMPDIR");
    snprintf(out, size, "%s/specula-test-XXXXXX", base && *base ? base : "/tmp");
    ck_assert_msg(mkdtemp(out) != NULL, "mkdtemp(%s) failed", out);
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

void harness_rmtree(const char *path) { nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

const char *harness_shared_data(const char *name) {
    static char path[4096];
    /* tests run from the repository root; ../shared sits beside the checkout */
    snprintf(path, sizeof path, "../shared/data/%s", name);
    return access(path, R_OK) == 0 ? path : NULL;
}

void harness_write_file(const char *path, const void *data, size_t size) {
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot create %s", path);
    ck_assert_uint_eq(fwrite(data, 1, size, f), size);
    ck_assert_int_eq(fclose(f), 0);
}

int harness_prompts(int full) {
    const char *light = getenv("SPECULA_TEST_LIGHT");
    if (!light || strcmp(light, "1")) return full;
    return full / 4 < 5 ? (full < 5 ? full : 5) : full / 4;
}
