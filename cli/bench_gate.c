/* bench_gate.c — the gate beside bench's speed figures (issue 35: correctness before speed): each row's
 * configuration looked up in the gate's verdict cache, or judged first with --gate (gate_run.c). A row whose
 * configuration has not passed has its speed withheld in the table. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "commands.h"
#include "gate.h"

/* Row i's verdict from the cache, under the key its configuration has. */
static void lookup(const gate_args *ga, const gate_canaries *c, bench_row *row) {
    char key[65], line[256];
    gate_config_key(ga, c, key, NULL, 0);
    if (!gate_cache_lookup(key, line, sizeof line))
        snprintf(row->gate, sizeof row->gate, "none");
    else
        snprintf(row->gate, sizeof row->gate, "%s", !strncmp(line, "passed ", 7) ? "passed" : "FAILED");
}

int bench_gate_rows(int run, const model_flags *models, loaded_models *lm, bench_row *rows, int n) {
    for (int i = 0; i < n; i++) snprintf(rows[i].gate, sizeof rows[i].gate, "none");
    gate_canaries c;
    sp_error err;
    const char *path = gate_canaries_for(models->model_dir);
    if (gate_canaries_read(&c, path, 1, &err)) { /* no canaries, no verdict: every speed withheld */
        if (run) {
            fprintf(stderr, "specula bench: --gate: %s\n", err.msg);
            return EXIT_BAD_INPUT;
        }
        return 0;
    }
    loaded_models ref;
    int rc = 0;
    if (run) {
        model_flags rf = model_flags_defaults(BACKEND_REFERENCE);
        rf.model_dir = models->model_dir;
        if (models_load(&ref, &rf, COMPANION_NO, COMPANION_NO, "bench")) {
            gate_canaries_free(&c);
            return EXIT_BAD_INPUT;
        }
    }
    for (int i = 0; i < n && !rc; i++) {
        gate_args ga;
        if (gate_args_for(&ga, &rows[i].spec, models, &err)) {
            if (!run) continue; /* no configuration the gate can run: no verdict */
            fprintf(stderr, "specula bench: --gate: %s\n", err.msg);
            rc = EXIT_BAD_INPUT;
            break;
        }
        ga.canaries_path = path;
        if (!run) {
            lookup(&ga, &c, &rows[i]);
            continue;
        }
        if ((rc = gate_canaries_fit(&ga, &c, models_config(lm), "bench"))) break;
        char label[256];
        method_spec_label(&ga.spec, label, sizeof label);
        fprintf(stderr, "specula bench: gate of %s\n", label);
        gate_table t = {.n = 0};
        if (gate_evaluate(&ga, &c, lm, &ref, &t, &err)) {
            fprintf(stderr, "specula bench: --gate: %s\n", err.msg);
            rc = EXIT_RUN_FAILED;
            break;
        }
        const int failed = gate_table_failed(&t);
        printf("gate of %s at T %.3g: %s (%d of %d rows failed)\n", label, (double)ga.spec.sampling.temperature,
               failed ? "FAILED" : "passed", failed, t.n);
        for (int j = 0; j < t.n; j++)
            if (t.rows[j].verdict == GATE_FAIL)
                printf("  FAIL %s: %s | %s\n", t.rows[j].check, t.rows[j].measured, t.rows[j].against);
        char key[65], text[8192];
        gate_config_key(&ga, &c, key, text, sizeof text);
        if (gate_cache_store(key, failed, t.n, text, &err))
            fprintf(stderr, "specula bench: note: the verdict was not recorded: %s\n", err.msg);
        snprintf(rows[i].gate, sizeof rows[i].gate, "%s", failed ? "FAILED" : "passed");
    }
    if (run) models_release(&ref);
    gate_canaries_free(&c);
    return rc;
}
