/* cpu_watch.c — CPU-time limits and hang detection for a process group, read
 * from /proc (see cpu_watch.h). */
#include "cpu_watch.h"

#include <ctype.h>
#include <signal.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define POLL_NS 200000000L     /* 0.2 s: a limit is passed by at most this much CPU per core */
#define FIRST_POLL_NS 5000000L /* 5 ms, doubling up to POLL_NS: a short command is not kept waiting */

/* Reads /proc/PID/stat: its parent, its process group and its CPU ticks (own
 * + reaped children). 0 on success; the process may have gone meanwhile. */
static int read_stat(const char *pid, long *parent, long *pgrp, unsigned long long *ticks) {
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
    *parent = ppid;
    *pgrp = group;
    *ticks = utime + stime + cutime + cstime;
    return 0;
}

/* One live process as /proc showed it. */
typedef struct {
    long pid, parent, group;
    unsigned long long ticks;
    int member;
} proc_entry;

/* Every live process but `skip`, with member set for the group pgid and, with tree, for every descendant of a
 * member too (a process that left the group, as Check's forked tests do with setpgid). *n entries in a malloc'd
 * array; NULL when /proc cannot be read. */
static proc_entry *group_tree(pid_t pgid, pid_t skip, int tree, size_t *n) {
    *n = 0;
    DIR *d = opendir("/proc");
    if (!d) return NULL;
    size_t cap = 256;
    proc_entry *p = malloc(cap * sizeof *p);
    struct dirent *e;
    while (p && (e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0]) || atol(e->d_name) == (long)skip) continue;
        proc_entry x = {.pid = atol(e->d_name)};
        if (read_stat(e->d_name, &x.parent, &x.group, &x.ticks)) continue;
        x.member = x.group == (long)pgid;
        if (*n == cap) {
            proc_entry *grown = realloc(p, 2 * cap * sizeof *p);
            if (!grown) break;
            p = grown, cap *= 2;
        }
        p[(*n)++] = x;
    }
    closedir(d);
    for (int changed = tree; p && changed;) { /* members' children, until no process is added */
        changed = 0;
        for (size_t i = 0; i < *n; i++)
            for (size_t j = 0; j < *n && !p[i].member; j++)
                if (p[j].member && p[j].pid == p[i].parent) p[i].member = changed = 1;
    }
    return p;
}

static double seconds(pid_t pgid, pid_t skip, int tree) {
    size_t n;
    proc_entry *p = group_tree(pgid, skip, tree, &n);
    unsigned long long total = 0;
    for (size_t i = 0; i < n; i++)
        if (p[i].member) total += p[i].ticks;
    free(p);
    return (double)total / (double)sysconf(_SC_CLK_TCK);
}

double cpu_watch_group_seconds(pid_t pgid, pid_t skip) { return seconds(pgid, skip, 0); }
double cpu_watch_tree_seconds(pid_t pgid, pid_t skip) { return seconds(pgid, skip, 1); }

void cpu_watch_kill_tree(pid_t pgid, pid_t skip) {
    size_t n;
    proc_entry *p = group_tree(pgid, skip, 1, &n);
    kill(-pgid, SIGKILL);
    for (size_t i = 0; i < n; i++)
        if (p[i].member && p[i].group != (long)pgid) kill((pid_t)p[i].pid, SIGKILL);
    free(p);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

watch_end cpu_watch(const watch_spec *w, double *used) {
    double (*count)(pid_t, pid_t) = w->tree ? cpu_watch_tree_seconds : cpu_watch_group_seconds;
    double last = count(w->pgid, w->skip), progress_at = now_s();
    *used = last;
    for (long poll_ns = FIRST_POLL_NS;; poll_ns = poll_ns * 2 < POLL_NS ? poll_ns * 2 : POLL_NS) {
        nanosleep(&(struct timespec){0, poll_ns}, NULL);
        if (w->done(w->ctx)) return WATCH_ENDED;
        double cpu = count(w->pgid, w->skip), t = now_s();
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
