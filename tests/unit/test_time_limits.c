/* test_time_limits.c — the suite's own time limits (tests/tcase_limit.c,
 * tests/cpu_watch.c): a test that waits for a core longer than its limit
 * passes, one that computes past its limit is killed, and a hang is found
 * though it uses no CPU. A spinning process pinned to the test's core makes
 * the waiting happen on any machine. */
#include <check.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpu_watch.h"
#include "harness.h"

#define LIMIT_S 1.0 /* the "waits" TCase's limit: the smallest rung */

static double clock_s(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void burn_cpu(double seconds) {
    double end = clock_s(CLOCK_PROCESS_CPUTIME_ID) + seconds;
    while (clock_s(CLOCK_PROCESS_CPUTIME_ID) < end) {
    }
}

/* A child in a process group of its own (outside the test's count) that
 * spins on `cpu` until killed, or until the test ends. */
static pid_t start_spinner(int cpu) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        sched_setaffinity(0, sizeof one, &one);
        for (;;) {
        }
    }
    return pid;
}

static void stop(pid_t pid) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* On one core beside a spinning process, a test at the lowest priority (nice
 * 19: weight 15 against 1024) gets about 1.4 % of it, so a little CPU takes
 * 1.5 limits of wall; the TCase's limit counts CPU and lets it finish. With
 * Check's wall-clock limit this test was killed. */
START_TEST(test_waiting_for_a_core_is_not_counted) {
    double m = cpu_watch_multiplier(), share = 15.0 / (15.0 + 1024.0), burn = 1.5 * LIMIT_S * m * share;
    int cpu = sched_getcpu();
    ck_assert_int_ge(cpu, 0);
    pid_t spin = start_spinner(cpu);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0);
    ck_assert_int_eq(setpriority(PRIO_PROCESS, 0, 19), 0);
    double t0 = clock_s(CLOCK_MONOTONIC);
    burn_cpu(burn);
    double wall = clock_s(CLOCK_MONOTONIC) - t0;
    /* killed, not reaped: a reaped child's CPU joins the test's own (cutime), and the spinner's whole run would
     * then count against the test's limit */
    kill(spin, SIGKILL);
    ck_assert_msg(wall > LIMIT_S * m,
                  "%.2f s of wall for %.3f s of CPU: the core was not shared, the test shows nothing", wall, burn);
}
END_TEST

/* The fixture's watcher, in a child standing in for a test that spins past
 * its limit of 0.3 s: the whole group is killed soon after, with one line
 * that says why. */
START_TEST(test_spinning_past_the_limit_is_killed) {
    int err[2];
    ck_assert_int_eq(pipe(err), 0);
    pid_t test = fork();
    ck_assert_int_ge(test, 0);
    if (test == 0) {
        dup2(err[1], 2); /* the watcher inherits it */
        close(err[0]);
        harness_watch(0.3 / cpu_watch_multiplier());
        for (;;) {
        }
    }
    close(err[1]);
    int status;
    ck_assert_int_eq(waitpid(test, &status, 0), test);
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    char said[256] = "";
    ssize_t n = read(err[0], said, sizeof said - 1);
    close(err[0]);
    said[n > 0 ? n : 0] = '\0';
    ck_assert_msg(strstr(said, "s of CPU, past its TCase's limit of 0.3 s: killed") != NULL, "the watcher said: %s",
                  said);
}
END_TEST

static int never(void *ctx) {
    (void)ctx;
    return 0;
}

/* A process that waits forever uses no CPU: its CPU limit never comes, the
 * stall check finds it. */
START_TEST(test_a_hang_is_found) {
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        setpgid(0, 0);
        pause();
        _exit(0);
    }
    setpgid(child, child);
    watch_spec w = {.pgid = child, .skip = getpid(), .cpu_limit_s = 100, .stall_s = 0.5, .done = never};
    double used;
    ck_assert_int_eq(cpu_watch(&w, &used), WATCH_STALLED);
    ck_assert_double_lt(used, 0.1);
    stop(child);
}
END_TEST

/* A group's CPU includes the children its members have reaped: work done in
 * a short-lived subprocess is not lost from the count. */
START_TEST(test_reaped_children_count) {
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        setpgid(0, 0);
        pid_t worker = fork();
        if (worker == 0) {
            burn_cpu(0.3);
            _exit(0);
        }
        waitpid(worker, NULL, 0);
        pause();
        _exit(0);
    }
    setpgid(child, child);
    double used = 0, counted = 0.29; /* 0.3 s, less a clock tick */
    for (int i = 0; i < 100 && used < counted; i++) {
        usleep(50000);
        used = cpu_watch_group_seconds(child, getpid());
    }
    stop(child);
    ck_assert_double_ge(used, counted);
}
END_TEST

/* 1 while process pid is alive (not gone, not a zombie waiting to be reaped). */
static int alive(pid_t pid) {
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = '\0';
    const char *p = strrchr(line, ')');
    return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* Under `within`, a descendant that moved to a process group of its own (Check's forked tests do) is still the
 * watched work: its CPU counts while it runs — else a runner waiting on a long test looks hung — and the kill
 * reaches it. */
START_TEST(test_a_descendant_in_its_own_group_counts) {
    int fd[2], burnt[2]; /* the worker's pid up; a byte once it has burnt its CPU (no wall-clock wait: load-proof) */
    ck_assert_int_eq(pipe(fd), 0);
    ck_assert_int_eq(pipe(burnt), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        setpgid(0, 0);
        pid_t worker = fork();
        if (worker == 0) {
            setpgid(0, 0); /* out of the watched group */
            burn_cpu(0.3);
            if (write(burnt[1], "x", 1) != 1) _exit(1);
            pause();
            _exit(0);
        }
        if (write(fd[1], &worker, sizeof worker) != (ssize_t)sizeof worker) _exit(1);
        pause();
        _exit(0);
    }
    setpgid(child, child);
    pid_t worker = -1;
    ck_assert_int_eq(read(fd[0], &worker, sizeof worker), (ssize_t)sizeof worker);
    close(fd[0]), close(fd[1]);
    char byte;
    ck_assert_int_eq(read(burnt[0], &byte, 1), 1);
    close(burnt[0]), close(burnt[1]);
    const double counted = 0.29, used = cpu_watch_tree_seconds(child, getpid()); /* 0.3 s, less a clock tick */
    ck_assert_msg(used >= counted, "a descendant's %.2f s of CPU not counted (%.2f)", counted, used);
    /* the group alone leaves it out: what a spinning neighbour of a test needs */
    ck_assert_double_lt(cpu_watch_group_seconds(child, getpid()), 0.1);
    ck_assert(alive(worker));
    cpu_watch_kill_tree(child, getpid());
    waitpid(child, NULL, 0);
    for (int i = 0; i < 6000 && alive(worker); i++) usleep(10000); /* a minute at most, gone at once when idle */
    ck_assert_msg(!alive(worker), "the descendant in its own group outlived the kill");
}
END_TEST

Suite *time_limits_suite(void) {
    Suite *s = suite_create("time_limits");
    TCase *waits = harness_tcase("waits", LIMIT_S);
    tcase_add_test(waits, test_waiting_for_a_core_is_not_counted);
    suite_add_tcase(s, waits);
    TCase *tc = harness_tcase("watcher", 10);
    tcase_add_test(tc, test_spinning_past_the_limit_is_killed);
    tcase_add_test(tc, test_a_hang_is_found);
    tcase_add_test(tc, test_reaped_children_count);
    tcase_add_test(tc, test_a_descendant_in_its_own_group_counts);
    suite_add_tcase(s, tc);
    return s;
}
