/* tcase_limit.c — harness_tcase: every test limited in the CPU time it uses,
 * not the wall time it takes. Check's own limit is a wall-clock timer, which a
 * test on a loaded machine passes through no fault of its own (at a load of
 * 15 on 2 cores a test gets an eighth of a core), so it is turned off and
 * each test starts a watcher process instead (cpu_watch.h). */
#include "cpu_watch.h"
#include "harness.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define STALL_S 120.0 /* wall seconds without any CPU that mean a hang: no load starves a runnable test that long */

/* Check's fixtures take no argument, so each limit a TCase may have is a rung
 * with a fixture of its own; a limit between two rungs gets the higher. */
#define RUNGS(X)                                                                                                       \
    X(0, 1) X(1, 5) X(2, 10) X(3, 20) X(4, 30) X(5, 60) X(6, 120) X(7, 180) X(8, 240) X(9, 300) X(10, 600) X(11, 1200)

static int test_gone(void *ctx) { return getppid() != *(pid_t *)ctx; }

void harness_watch(double limit_s) {
    const char *fork_mode = getenv("CK_FORK");
    if (fork_mode && !strcmp(fork_mode, "no")) return; /* the test runs in the runner itself: nothing to kill */
    setpgid(0, 0);
    pid_t test = getpid();
    pid_t watcher = fork();
    ck_assert_msg(watcher >= 0, "cannot start the watcher of the test's CPU time");
    if (watcher > 0) return;
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* the test ended: so does its watcher */
    if (getppid() != test) _exit(0);
    double limit = limit_s * cpu_watch_multiplier(), used;
    watch_spec w = {
        .pgid = test, .skip = getpid(), .cpu_limit_s = limit, .stall_s = STALL_S, .done = test_gone, .ctx = &test};
    watch_end end = cpu_watch(&w, &used);
    if (end == WATCH_CPU_SPENT)
        fprintf(stderr, "harness: a test used %.1f s of CPU, past its TCase's limit of %g s: killed\n", used, limit);
    else if (end == WATCH_STALLED)
        fprintf(stderr, "harness: a test used no CPU for %.0f s (after %.1f s): killed as hung\n", STALL_S, used);
    if (end != WATCH_ENDED) kill(-test, SIGKILL);
    _exit(0);
}

#define RUNG_FIXTURE(i, seconds)                                                                                       \
    static void watch_rung_##i(void) { harness_watch(seconds); }
RUNGS(RUNG_FIXTURE)

typedef struct {
    double seconds;
    void (*watch)(void);
} rung;

#define RUNG_ENTRY(i, seconds) {seconds, watch_rung_##i},
static const rung rungs[] = {RUNGS(RUNG_ENTRY)};

TCase *harness_tcase(const char *name, double timeout_s) {
    int n = (int)(sizeof rungs / sizeof rungs[0]), i = 0;
    while (i < n - 1 && rungs[i].seconds < timeout_s) i++;
    if (rungs[i].seconds < timeout_s) {
        fprintf(stderr, "harness_tcase(\"%s\", %g): past the highest limit, %g s of CPU\n", name, timeout_s,
                rungs[i].seconds);
        abort();
    }
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, 0); /* no wall-clock limit: the watcher's CPU limit and stall check replace it */
    tcase_add_checked_fixture(tc, rungs[i].watch, NULL);
    return tc;
}
