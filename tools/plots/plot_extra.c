/* plot_extra.c — a researcher's own points for plot (a) (`specula plot --extra FILE`): one per line, LABEL ALPHA
 * TOKENS_PER_PASS (α in [0, 1], tokens per pass >= 1), '#' starting a comment; read whole and checked, so a bad line
 * is refused with its number before anything is measured. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plots.h"

int plots_extra_read(const char *path, plot_extra *out, sp_error *err) {
    memset(out, 0, sizeof *out);
    struct stat st;
    if (stat(path, &st)) return sp_fail(err, "--extra %s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return sp_fail(err, "--extra %s: not a regular file", path);
    FILE *f = fopen(path, "r");
    if (!f) return sp_fail(err, "--extra %s: %s", path, strerror(errno));
    char line[512];
    int lineno = 0, rc = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char label[PLOT_EXTRA_LABEL], rest[8];
        double alpha, tpp;
        const int got = sscanf(line, "%63s %lf %lf %7s", label, &alpha, &tpp, rest);
        if (got <= 0) continue; /* blank or a comment */
        if (got != 3 || !(alpha >= 0 && alpha <= 1) || !(tpp >= 1 && tpp < 1e6))
            rc = sp_fail(err,
                         "--extra %s:%d: expected LABEL ALPHA TOKENS_PER_PASS with ALPHA in [0, 1] and "
                         "TOKENS_PER_PASS >= 1",
                         path, lineno);
        else if (out->n == PLOT_EXTRA_MAX)
            rc = sp_fail(err, "--extra %s: more than %d points", path, PLOT_EXTRA_MAX);
        else {
            snprintf(out->label[out->n], PLOT_EXTRA_LABEL, "%s", label);
            out->alpha[out->n] = alpha;
            out->tokens_per_pass[out->n] = tpp;
            out->n++;
        }
    }
    if (!rc && ferror(f)) rc = sp_fail(err, "--extra %s: a read failed", path);
    fclose(f);
    if (!rc && out->n == 0) rc = sp_fail(err, "--extra %s: no points", path);
    return rc;
}
