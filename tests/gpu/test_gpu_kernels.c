/* test_gpu_kernels.c — the kernel validations on a real CUDA device: each family of build/cuda/gpucheck
 * (--validate-only) is one test. CUDA never starts in this process (Check forks the runner): the probe and the
 * checks are child processes. */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#ifndef GPUCHECK_BIN
#define GPUCHECK_BIN "build/cuda/gpucheck"
#endif
#define GPUCHECK_NO_DEVICE 4 /* gpucheck's exit status for "no CUDA device" (GC_EXIT_NO_DEVICE) */

static const char *const families[] = {"matvec",   "norm",     "rope_kv", "attention",
                                       "kv_quant", "deltanet", "sample",  "graph"};
#define N_FAMILIES (int)(sizeof families / sizeof families[0])

/* Runs cmd, keeps the last part of its output in tail; returns its exit
 * status, 128 + N when a signal N ended it (as a shell reports it), −1 when
 * it did not run. */
static int run_capture(const char *cmd, char *tail, size_t size) {
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t used = 0;
    char line[512];
    tail[0] = '\0';
    while (fgets(line, sizeof line, p)) {
        size_t n = strlen(line);
        if (used + n >= size) { /* keep the newest lines: drop the oldest half */
            size_t keep = used / 2;
            memmove(tail, tail + used - keep, keep);
            used = keep;
            tail[used] = '\0';
        }
        if (n < size) {
            memcpy(tail + used, line, n + 1);
            used += n;
        }
    }
    int st = pclose(p);
    if (st == -1) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

START_TEST(test_family) {
    char cmd[512], tail[1800];
    snprintf(cmd, sizeof cmd, "%s --validate-only --only %s 2>&1", GPUCHECK_BIN, families[_i]);
    int rc = run_capture(cmd, tail, sizeof tail);
    ck_assert_msg(rc == 0, "%s exited with %d; last output:\n%s", cmd, rc, tail);
}
END_TEST

/* Why the probe counts as a failure (it crashed, or exited neither "device"
 * nor "no device"), for the test that reports it. */
static char probe_failure[768];

START_TEST(test_probe) { ck_abort_msg("%s", probe_failure); }
END_TEST

/* Without a device (the probe's own exit status for that, or no nvcc at build time) the tests are reported as
 * skipped with the CUDA runtime's reason; a probe that crashes or exits any other way is a failed test, never a
 * skip. */
Suite *gpu_kernels_suite(void) {
    Suite *s = suite_create("gpu_kernels");
    char reason[256], out[512];
    if (access(GPUCHECK_BIN, X_OK) != 0) {
        harness_skip("gpu_kernels", "families",
                     "no CUDA kernels built (" GPUCHECK_BIN " is missing: nvcc was not found at build time)");
        return s;
    }
    int rc = run_capture(GPUCHECK_BIN " --probe 2>&1", out, sizeof out);
    if (rc == GPUCHECK_NO_DEVICE) {
        out[strcspn(out, "\n")] = '\0';
        snprintf(reason, sizeof reason, "%.200s", out[0] ? out : "no CUDA device: the probe printed nothing");
        harness_skip("gpu_kernels", "families", reason);
        return s;
    }
    if (rc != 0) { /* a crash (signal), a CUDA error, a library that would not load: a failure */
        snprintf(probe_failure, sizeof probe_failure,
                 GPUCHECK_BIN " --probe exited with %d (0: a device, %d: no device; above 128: killed by signal "
                              "%d); its output:\n%.500s",
                 rc, GPUCHECK_NO_DEVICE, rc > 128 ? rc - 128 : 0, out);
        TCase *tc = harness_tcase("probe", 60);
        tcase_add_test(tc, test_probe);
        suite_add_tcase(s, tc);
        return s;
    }
    TCase *tc = harness_tcase("families", 600);
    tcase_add_loop_test(tc, test_family, 0, N_FAMILIES);
    suite_add_tcase(s, tc);
    return s;
}
