/* cpu_watch.h — time limits that count the CPU a test was given, not the wall
 * time it waited for it: on a machine shared with other work a test may wait
 * many times its own length for a core and must not fail for that. A hang
 * uses no CPU at all, so it is caught as a stall instead. Linux (/proc). */
#ifndef SPECULA_TEST_CPU_WATCH_H
#define SPECULA_TEST_CPU_WATCH_H

#include <sys/types.h>

/* CPU seconds (user + system) of process group pgid: every live member's
 * own time and the time of the children it has reaped (so nothing is counted
 * twice), leaving out the process `skip` (the watcher itself). A descendant
 * that moved to a group of its own is not counted (a test's spinning
 * neighbour, tests/unit/test_time_limits.c). */
double cpu_watch_group_seconds(pid_t pgid, pid_t skip);

/* The same with every descendant of a member counted too, whatever its group:
 * a whole program under `within`, e.g. a Check runner whose forked tests each
 * take a group of their own while the runner waits for them. */
double cpu_watch_tree_seconds(pid_t pgid, pid_t skip);

/* SIGKILL to the group pgid and to every descendant of its members (not to
 * `skip`). */
void cpu_watch_kill_tree(pid_t pgid, pid_t skip);

typedef enum {
    WATCH_ENDED,     /* done() said the watched work has ended */
    WATCH_CPU_SPENT, /* the group used more than its CPU limit */
    WATCH_STALLED,   /* the group used no CPU for stall_s seconds of wall time */
} watch_end;

typedef struct {
    pid_t pgid, skip;       /* the group watched, and a process left out of its count */
    double cpu_limit_s;     /* CPU seconds the group may use; <= 0: no limit */
    double stall_s;         /* wall seconds without any CPU that count as a hang */
    int (*done)(void *ctx); /* polled between looks: nonzero when the work has ended */
    void *ctx;
    int tree; /* 1: count descendants outside the group too (cpu_watch_tree_seconds) */
} watch_spec;

/* Polls the group (every 5 ms at first, then every 0.2 s) until done() or a limit is passed; *used
 * gets the CPU seconds counted last. Kills nothing: the caller decides. */
watch_end cpu_watch(const watch_spec *w, double *used);

/* The sanitizers' multiplier of every limit: Check's CK_TIMEOUT_MULTIPLIER
 * when it is a positive number, else 1 (tests/run.sh sets 3 for ASan). */
double cpu_watch_multiplier(void);

#endif
