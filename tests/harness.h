/* harness.h — what every test file shares: suite/case construction with an
 * CPU-time limit, skips that are reported (never silently dropped), and
 * small helpers for temporary directories and generated micro models. */
#ifndef SPECULA_TEST_HARNESS_H
#define SPECULA_TEST_HARNESS_H

#include <check.h>

/* A test case whose tests may each use timeout_s seconds of CPU (times
 * CK_TIMEOUT_MULTIPLIER: tests/run.sh sets 3 for the sanitizer run), however
 * long they wait for a core, and are stopped as hung after two minutes
 * without any CPU (tcase_limit.c). The measured times and the limits are in
 * docs/reliability.md, "Time limits". */
TCase *harness_tcase(const char *name, double timeout_s);

/* What harness_tcase's fixture does in the forked test, before its body:
 * makes the test a process group and starts a watcher child that counts the
 * CPU of the group (the test and whatever it starts) and kills the group when
 * it passes limit_s (times the multiplier) or stalls. Public for its test. */
void harness_watch(double limit_s);

/* How many of a canary's `full` prompts to run: all of them, or, in the
 * sanitizer run (tests/run.sh sets SPECULA_TEST_LIGHT=1), a quarter (at
 * least 5): the same code paths — prompt lengths 1 to 5, every method and
 * rule — under the sanitizers, in a quarter of the time. */
int harness_prompts(int full);

/* Records that `test` of `suite` was not run, and why. Call it while
 * building the suite instead of adding the test; the runner prints the
 * reason and counts the test as skipped. */
void harness_skip(const char *suite, const char *test, const char *reason);

/* A fresh directory under $TMPDIR (or /tmp) whose path is written to
 * out[size]; removed with harness_rmtree. Fails the test on error. */
void harness_tmpdir(char *out, size_t size);
void harness_rmtree(const char *path);

/* The path of ../shared/data/NAME relative to the repository root, or NULL
 * when that file does not exist (tests that need it are skipped). */
const char *harness_shared_data(const char *name);

/* Writes the whole of text to path; fails the test on error. */
void harness_write_file(const char *path, const void *data, size_t size);

#endif
