/* audit_exec.c — an audit arm from an external program (audit_exec.h):
 * the command line built from the arm's settings, the program's stdout read
 * as a sample file, its exit status checked. */
#include "audit_exec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

int audit_exec_draw(const char *cmd, const char *arm, int n, const sampler_params *sp, uint64_t seed_base,
                    const int *prompt, int n_prompt, int V, audit_samples *out, sp_error *err) {
    /* every value is a number or a fixed word, so nothing needs quoting */
    size_t size = strlen(cmd) + 256 + (size_t)n_prompt * 12;
    char *line = malloc(size);
    if (!line) return sp_fail(err, "out of memory");
    int len = snprintf(line, size,
                       "%s --arm %s --n %d --length %d --temperature %.7g --top-k %d --top-p %.7g --min-p %.7g "
                       "--seed %llu --prompt-ids ",
                       cmd, arm, n, out->L, (double)sp->temperature, sp->top_k, (double)sp->top_p, (double)sp->min_p,
                       (unsigned long long)seed_base);
    for (int i = 0; i < n_prompt; i++) len += snprintf(line + len, size - (size_t)len, "%s%d", i ? "," : "", prompt[i]);
    fflush(NULL);
    FILE *p = popen(line, "r");
    if (!p) {
        free(line);
        return sp_fail(err, "cannot run the engine command: %s", strerror(errno));
    }
    char what[64];
    snprintf(what, sizeof what, "the engine's output (arm %s)", arm);
    int rc = audit_samples_read(out, p, what, V, n, err);
    /* drain what is left so the program is not killed by a broken pipe
     * while we wait for it */
    char buf[4096];
    while (fread(buf, 1, sizeof buf, p) > 0) {
    }
    int status = pclose(p);
    if (!rc && (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0))
        rc = sp_fail(err, "the engine command failed (arm %s, %s %d): %s", arm,
                     status != -1 && WIFEXITED(status) ? "exit status" : "signal or wait status",
                     status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : status, line);
    if (!rc && out->n < n)
        rc = sp_fail(err, "the engine command printed %d samples for arm %s, %d were asked for", out->n, arm, n);
    free(line);
    return rc;
}
