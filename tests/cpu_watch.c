/* cpu_watch.c — CPU-time limits and hang detection for a process group, read
 * from /proc (see cpu_watch.h). */
#include "cpu_watch.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define POLL_NS 200000000L     /* 0.2 s: a limit is passed by at most this much CPU per core */
#define FIRST_POLL_NS 5000000L /* 5 ms, doubling up to POLL_NS: a short command is not kept waiting */

/* Reads /proc/PID/stat: its process group and its CPU ticks (own + reaped
 * children). 0 on success; the process may have gone meanwhile. */
static int read_stat(const char *pid, long *pgrp, unsigned long long *ticks) {
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = '\0';
    /* the command name is in parentheses and may hold spaces or ')': the fields start after the last ')' */
    const char *p = strrchr(line, ')');
    if (!p) return -1;
    char state;
    long ppid, group;
    unsigned long long utime, stime, cutime, cstime;
    /* fields 3..17: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime */
    if (sscanf(p + 1, " %c %ld %ld %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu", &state, &ppid, &group, &utime,
               &stime, &cutime, &cstime) != 7)
        return -1;
    *pgrp = group;
    *ticks = utime + stime + cutime + cstime;
    return 0;
}

double cpu_watch_group_seconds(pid_t pgid, pid_t skip) {
    DIR *d = opendir("/proc");
    if (!d) return 0;
    unsigned long long total = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0]) || atol(e->d_name) == (long)skip) continue;
        long group;
        unsigned long long ticks;
        if (read_stat(e->d_name, &group, &ticks) == 0 && group == (long)pgid) total += ticks;
    }
    closedir(d);
    return (double)total / (double)sysconf(_SC_CLK_TCK);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

watch_end cpu_watch(const watch_spec *w, double *used) {
    double last = cpu_watch_group_seconds(w->pgid, w->skip), progress_at = now_s();
    *used = last;
    for (long poll_ns = FIRST_POLL_NS;; poll_ns = poll_ns * 2 < POLL_NS ? poll_ns * 2 : POLL_NS) {
        nanosleep(&(struct timespec){0, poll_ns}, NULL);
        if (w->done(w->ctx)) return WATCH_ENDED;
        double cpu = cpu_watch_group_seconds(w->pgid, w->skip), t = now_s();
        *used = cpu;
        if (w->cpu_limit_s > 0 && cpu > w->cpu_limit_s) return WATCH_CPU_SPENT;
        if (cpu > last) {
            last = cpu;
            progress_at = t;
        } else if (t - progress_at > w->stall_s) {
            return WATCH_STALLED;
        }
    }
}

double cpu_watch_multiplier(void) {
    const char *s = getenv("CK_TIMEOUT_MULTIPLIER");
    char *end;
    double m = s ? strtod(s, &end) : 0;
    return s && end != s && *end == '\0' && m > 0 ? m : 1;
}
