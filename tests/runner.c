/* runner.c — runs the Check suites of tests/unit, tests/stat and tests/gpu (listed in build/gen/suites.h), ending
 * with Check's summary and "N passed, N failed, N skipped". Check forks every test: keep OpenMP out of this process.
 *   runner [--group unit|stat|gpu] [--suite NAME] [--case NAME] [--counts FILE] */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int harness_skip_count(void);
void harness_print_skips(FILE *f);

typedef struct {
    const char *group, *name;
    Suite *(*make)(void);
} suite_entry;

#define SUITE_unit(n) SUITE_ANY(unit, n)
#ifdef RUNNER_UNIT_ONLY /* the sanitizer build links the unit suites only */
#define SUITE_stat(n)
#define SUITE_gpu(n)
#else
#define SUITE_stat(n) SUITE_ANY(stat, n)
#define SUITE_gpu(n) SUITE_ANY(gpu, n)
#endif
#define SUITE(g, n) SUITE_##g(n)

#define SUITE_ANY(g, n) Suite *n##_suite(void);
#include "suites.h"
#undef SUITE_ANY

static const suite_entry all_suites[] = {
#define SUITE_ANY(g, n) {#g, #n, n##_suite},
#include "suites.h"
#undef SUITE_ANY
    {NULL, NULL, NULL}};

static void usage(void) {
    printf("usage: runner [--group unit|stat|gpu] [--suite NAME] [--case NAME] [--counts FILE]\n"
           "Runs the specula Check suites; prints Check's summary and N passed, N failed, N skipped.\n"
           "--case NAME runs only the test cases (TCase) of that name in the selected suites.\n"
           "--counts FILE also writes \"passed failed skipped\" to FILE for aggregation.\n");
}

int main(int argc, char **argv) {
    const char *group = NULL, *only = NULL, *tcase = NULL, *counts = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage();
            return 0;
        } else if (!strcmp(argv[i], "--group") && i + 1 < argc) {
            group = argv[++i];
        } else if (!strcmp(argv[i], "--suite") && i + 1 < argc) {
            only = argv[++i];
        } else if (!strcmp(argv[i], "--case") && i + 1 < argc) {
            tcase = argv[++i];
        } else if (!strcmp(argv[i], "--counts") && i + 1 < argc) {
            counts = argv[++i];
        } else {
            fprintf(stderr, "runner: unknown argument '%s'\n", argv[i]);
            usage();
            return 2;
        }
    }
    SRunner *sr = NULL;
    int n_selected = 0;
    for (const suite_entry *e = all_suites; e->name; e++) {
        if (group && strcmp(group, e->group)) continue;
        if (only && strcmp(only, e->name)) continue;
        Suite *s = e->make();
        if (!sr)
            sr = srunner_create(s);
        else
            srunner_add_suite(sr, s);
        n_selected++;
    }
    if (!sr) {
        fprintf(stderr, "runner: no suite matches%s%s%s%s\n", group ? " group " : "", group ? group : "",
                only ? " suite " : "", only ? only : "");
        return 2;
    }
    srunner_run(sr, NULL, tcase, CK_SILENT); /* tcase NULL: every test case */
    int n_run = srunner_ntests_run(sr), n_failed = srunner_ntests_failed(sr);
    if (tcase && n_run == 0) {
        fprintf(stderr, "runner: no test case named '%s' in the selected suites\n", tcase);
        srunner_free(sr);
        return 2;
    }
    TestResult **failures = srunner_failures(sr);
    for (int i = 0; i < n_failed; i++)
        printf("FAIL %s:%d: %s: %s\n", tr_lfile(failures[i]), tr_lno(failures[i]), tr_tcname(failures[i]),
               tr_msg(failures[i]));
    free(failures);
    harness_print_skips(stdout);
    srunner_print(sr, CK_MINIMAL); /* Check's own summary line */
    int n_skipped = harness_skip_count();
    printf("%d passed, %d failed, %d skipped\n", n_run - n_failed, n_failed, n_skipped);
    if (counts) {
        FILE *f = fopen(counts, "w");
        if (f) {
            fprintf(f, "%d %d %d\n", n_run - n_failed, n_failed, n_skipped);
            fclose(f);
        }
    }
    srunner_free(sr);
    return n_failed ? 1 : 0;
}
