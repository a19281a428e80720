/* within.c — runs a command under a limit of CPU time, for the shell parts of
 * make test: a step may wait for a core as long as the machine's load makes
 * it, but may not compute longer than its limit, nor sit without using any
 * CPU (a hang) for --stall seconds.
 *   within CPU_SECONDS [--stall SECONDS] COMMAND [ARG...]
 * The exit status is the command's; 124 when a limit stopped it (as
 * timeout(1) does), with one line on stderr saying which; 125 for a usage
 * error, 126/127 when the command cannot be run. CK_TIMEOUT_MULTIPLIER
 * multiplies the CPU limit (the sanitizer runs). */
#include "cpu_watch.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEFAULT_STALL_S 120.0 /* no CPU at all for two minutes: no load stops a runnable process that long */

typedef struct {
    pid_t child;
    int status, reaped;
} child_state;

static int child_done(void *ctx) {
    child_state *c = ctx;
    if (!c->reaped && waitpid(c->child, &c->status, WNOHANG) == c->child) c->reaped = 1;
    return c->reaped;
}

static int positive(const char *s, double *out) {
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    return end != s && *end == '\0' && errno == 0 && *out > 0;
}

static int usage(const char *why) {
    fprintf(stderr, "within: %s\nusage: within CPU_SECONDS [--stall SECONDS] COMMAND [ARG...]\n", why);
    return 125;
}

int main(int argc, char **argv) {
    double limit, stall = DEFAULT_STALL_S;
    int i = 1;
    if (argc < 3 || !positive(argv[i++], &limit)) return usage("CPU_SECONDS must be a positive number");
    if (!strcmp(argv[i], "--stall")) {
        if (i + 2 >= argc || !positive(argv[i + 1], &stall))
            return usage("--stall needs a positive number and a command");
        i += 2;
    }
    limit *= cpu_watch_multiplier();
    child_state c = {.child = fork()};
    if (c.child < 0) {
        perror("within: fork");
        return 126;
    }
    if (c.child == 0) {
        setpgid(0, 0); /* its own group: the count and the kill take in everything it starts */
        execvp(argv[i], argv + i);
        fprintf(stderr, "within: %s: %s\n", argv[i], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    setpgid(c.child, c.child); /* also here, so the group exists before the first look */
    watch_spec w = {
        .pgid = c.child, .skip = getpid(), .cpu_limit_s = limit, .stall_s = stall, .done = child_done, .ctx = &c, .tree = 1};
    double used;
    watch_end end = cpu_watch(&w, &used);
    if (end == WATCH_ENDED) return WIFEXITED(c.status) ? WEXITSTATUS(c.status) : 128 + WTERMSIG(c.status);
    cpu_watch_kill_tree(c.child, getpid());
    waitpid(c.child, NULL, 0);
    if (end == WATCH_CPU_SPENT)
        fprintf(stderr, "within: %s used %.1f s of CPU, past its limit of %.0f s: stopped\n", argv[i], used, limit);
    else
        fprintf(stderr, "within: %s used no CPU for %.0f s (after %.1f s of CPU): stopped as hung\n", argv[i], stall,
                used);
    return 124;
}
