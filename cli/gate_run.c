/* gate_run.c — a whole gate over loaded models (gate.h), shared by `specula gate` and `specula bench --gate`: the
 * rows in order, the configuration's key, and the verdict cache that bench reads beside its speed figures. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "atomic_file.h"
#include "commands.h"
#include "gate.h"
#include "registry.h"

#ifndef SPECULA_GATE_DIR
#define SPECULA_GATE_DIR "tests/gate"
#endif

const char *gate_default_canaries(void) { return SPECULA_GATE_DIR "/canaries.txt"; }

const char *gate_canaries_for(const char *model_dir) {
    static char path[4200];
    if (!model_dir) return gate_default_canaries();
    snprintf(path, sizeof path, "%s/gate-canaries.txt", model_dir);
    return access(path, F_OK) == 0 ? path : gate_default_canaries();
}

int gate_args_for(gate_args *a, const method_spec *s, const model_flags *models, sp_error *err) {
    memset(a, 0, sizeof *a);
    a->models = *models;
    a->n = 300;
    a->L = 8;
    a->budget = (gate_budget){0.02, 64, 0.5};
    a->plant = PLANT_NONE;
    a->quiet = 1;
    a->spec = *s;
    if (!(a->spec.sampling.temperature > 0)) a->spec.sampling.temperature = 1;
    if (a->spec.method == &greedy_method) a->spec.method = &sample_method;
    if (a->spec.rule == RULE_GREEDY) a->spec.rule = RULE_DEFAULT; /* a temperature-0 row: the method's own above 0 */
    a->greedy = *s;
    a->greedy.sampling.temperature = 0;
    if (a->greedy.method == &sample_method) a->greedy.method = &greedy_method;
    if (method_spec_finish(&a->spec, 0, err) || method_spec_finish(&a->greedy, 0, err)) return -1;
    a->control_temperature = 3 * a->spec.sampling.temperature;
    a->exact = models->backend == BACKEND_REFERENCE ||
               (models->backend == BACKEND_CPU && models->f32 && (models->kv == KV_DEFAULT || models->kv == KV_F32));
    return 0;
}

int gate_canaries_fit(const gate_args *a, const gate_canaries *c, const model_config *cfg, const char *cmd) {
    int rc = 0;
    for (int k = 0; k < c->n_cases && !rc; k++) {
        const gate_case *g = &c->cases[k];
        int *ctx, n_ctx;
        gate_context(g, g->n_turns - 1, &ctx, &n_ctx);
        for (int i = 0; i < n_ctx && !rc; i++)
            if (ctx[i] >= cfg->vocab_size) {
                fprintf(stderr, "specula %s: %s: case %s: token %d is outside the model's vocabulary (%d)\n", cmd,
                        a->canaries_path, g->name, ctx[i], cfg->vocab_size);
                rc = EXIT_BAD_INPUT;
            }
        if (!rc) rc = context_check(cfg, NULL, n_ctx, "tokens", g->turns[g->n_turns - 1].n_expect, cmd);
        free(ctx);
    }
    return rc;
}

int gate_table_failed(const gate_table *t) {
    int failed = 0;
    for (int i = 0; i < t->n; i++) failed += t->rows[i].verdict == GATE_FAIL;
    return failed;
}

int gate_evaluate(const gate_args *a, const gate_canaries *c, loaded_models *lm, loaded_models *ref, gate_table *t,
                  sp_error *err) {
    const int intact = c->recorded[0] && !strcmp(c->sha256, c->recorded);
    gate_row *r = gate_table_add(t, "canaries");
    r->verdict = intact ? GATE_PASS : GATE_FAIL;
    snprintf(r->measured, GATE_ROW_TEXT, "sha256 %.12s...", c->sha256);
    if (!c->recorded[0])
        snprintf(r->against, GATE_ROW_TEXT, "no .sha256 beside the file: not used");
    else if (intact)
        snprintf(r->against, GATE_ROW_TEXT, "the sha256 recorded beside it");
    else
        snprintf(r->against, GATE_ROW_TEXT, "recorded %.12s...: the file changed, not used", c->recorded);
    if (!a->quiet) fprintf(stderr, "specula gate: the canaries\n");
    if (intact && (gate_check_exact(a, c, &lm->parts, t, err) ||
                   gate_check_tv(a, c, lm->parts.target, ref->parts.target, t, err)))
        return -1;
    if (!method_has(&a->spec, METHOD_PROPOSES)) {
        const char *rows[] = {"distribution", "acceptance"};
        for (int i = 0; i < 2; i++) {
            r = gate_table_add(t, rows[i]);
            r->verdict = GATE_NOT_RUN;
            snprintf(r->measured, GATE_ROW_TEXT, "not run");
            snprintf(r->against, GATE_ROW_TEXT, "--method %s does not speculate", method_name(&a->spec));
        }
        return 0;
    }
    /* the arms draw after the first prompt of the first case: the canaries' own opening; the law is the
     * reference's for an exact configuration, the configuration's own for a lossy one (the TV row judges that) */
    const gate_turn *first = &c->cases[0].turns[0];
    decode_target *law = a->exact ? ref->parts.target : lm->parts.target;
    return gate_check_distribution(a, &lm->parts, law, first->prompt, first->n_prompt, t, err);
}

/* ---- the key and the cache ---------------------------------------------------------------------------------- */

void gate_config_key(const gate_args *a, const gate_canaries *c, char key[65], char *text, size_t size) {
    char buf[8192], label[256], model_path[PATH_MAX] = "", exe[64] = "?";
    struct stat st;
    if (stat("/proc/self/exe", &st) == 0) /* a rebuilt binary may judge otherwise: its size and time */
        snprintf(exe, sizeof exe, "%lld:%lld", (long long)st.st_size, (long long)st.st_mtime);
    const char *dir = a->models.model_dir ? a->models.model_dir : default_model_dir();
    if (!realpath(dir, model_path)) snprintf(model_path, sizeof model_path, "%s", dir);
    method_spec_label(&a->spec, label, sizeof label);
    const sampler_params *sp = &a->spec.sampling;
    const kv_format kv = a->models.kv != KV_DEFAULT          ? a->models.kv
                         : a->models.backend == BACKEND_CUDA ? KV_BF16
                                                             : KV_F32; /* the backend's own, named */
    snprintf(buf, sizeof buf,
             "backend %s, dtype %s, KV cache %s, model %s, draft %s, heads %s, method %s, T %.6g, top-k %d, "
             "top-p %.6g, min-p %.6g, canaries %.64s, n %d, L %d, budget TV %.6g tokens %d margin %.6g, binary %s",
             backend_name(a->models.backend), a->models.f32 || a->models.backend == BACKEND_REFERENCE ? "f32" : "bf16",
             a->models.backend == BACKEND_REFERENCE ? "f32" : kv_format_name(kv), model_path,
             a->models.draft_dir ? a->models.draft_dir : "beside",
             a->models.heads_path ? a->models.heads_path : "beside", label, (double)sp->temperature, sp->top_k,
             (double)sp->top_p, (double)sp->min_p, c->sha256, a->n, a->L, a->budget.tv, a->budget.tokens,
             a->budget.margin, exe);
    sp_error err;
    if (gate_sha256_hex((const unsigned char *)buf, strlen(buf), key, &err)) snprintf(key, 65, "%064d", 0);
    if (text) snprintf(text, size, "%s", buf);
}

/* The cache folder, made when make is set. 0, or −1 when there is none. */
static int cache_dir(char *buf, size_t size, int make) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(buf, size, "%s/specula", xdg);
    else if (home && *home)
        snprintf(buf, size, "%s/.cache/specula", home);
    else
        return -1;
    if (make) {
        char parent[4096];
        snprintf(parent, sizeof parent, "%.*s", (int)(strrchr(buf, '/') - buf), buf);
        mkdir(parent, 0777);
        mkdir(buf, 0777);
    }
    strncat(buf, "/gate", size - strlen(buf) - 1);
    if (make && mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
    return 0;
}

int gate_cache_store(const char *key, int failed, int rows, const char *text, sp_error *err) {
    char dir[4096], path[4200];
    if (cache_dir(dir, sizeof dir, 1)) return sp_fail(err, "no cache folder (neither XDG_CACHE_HOME nor HOME)");
    snprintf(path, sizeof path, "%s/%s", dir, key);
    char date[32];
    const time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    atomic_file f;
    if (atomic_open(&f, path, err)) return -1;
    fprintf(f.f, "%s %s %d/%d %s\n", failed ? "FAILED" : "passed", date, failed, rows, text);
    return atomic_commit(&f, err);
}

int gate_cache_lookup(const char *key, char *line, size_t size) {
    char dir[4096], path[4200];
    if (cache_dir(dir, sizeof dir, 0)) return 0;
    snprintf(path, sizeof path, "%s/%s", dir, key);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    const int ok = fgets(line, (int)size, f) != NULL;
    fclose(f);
    if (!ok) return 0;
    line[strcspn(line, "\n")] = 0;
    return !strncmp(line, "passed ", 7) || !strncmp(line, "FAILED ", 7);
}
