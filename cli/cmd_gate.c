/* cmd_gate.c — `specula gate`: correctness before speed. For one engine configuration (backend, dtype, KV cache,
 * method, k) it runs the frozen canaries and the distribution checks, prints one verdict row per check, and exits
 * 0 only when every row passes (gate.h; docs/gate.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "gate.h"
#include "generate_args.h"
#include "registry.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: specula gate [options]\n"
            "Correctness before speed: runs one engine configuration (the model flags and the method flags\n"
            "below, as `specula generate` takes them; default --method mtp --k 3) through a frozen canary\n"
            "set and the distribution checks, and prints a verdict table, one row per check:\n"
            "  canaries        the canary file's sha256 against the one recorded beside it\n"
            "  exact: CASE     the method's greedy tokens against the reference's frozen ones (short,\n"
            "                  long-context and multi-turn prompts); the first divergence with the\n"
            "                  reference's logit margin (top-1 minus top-2) there\n"
            "  reference reproduces, TV per position\n"
            "                  the next-token law at --temperature, teacher-forced over the canaries, against\n"
            "                  the reference's: float rounding only for an exact configuration (--backend\n"
            "                  reference, or cpu with --dtype f32 and an f32 KV cache), the budget for a lossy\n"
            "                  one (bf16 weights, --kv-cache bf16|q8|q4, cuda)\n"
            "  distribution    `specula audit`'s arms at --temperature: speculation on against off (G-test per\n"
            "                  position, the TV bound it certifies) and against the law (randomised PIT), each\n"
            "                  beside a control at another temperature that must be rejected\n"
            "  acceptance      the on arm's proposed and accepted drafts, alpha-hat, per position; near 1 at\n"
            "                  T > 0 (alpha-hat >= 0.99: a verifier that accepts everything) fails\n"
            "(a method that does not speculate, --method sample, runs the canaries and TV rows only). The verdict is\n"
            "recorded under the configuration's key in $XDG_CACHE_HOME/specula/gate (else ~/.cache/specula/gate),\n"
            "where `specula bench` reads it.\n"
            "Exit status: 0 every row passed, 1 a row failed (or the run did), 2 bad input. docs/gate.md.\n"
            "  --canaries FILE      the canary set (default MODEL/gate-canaries.txt where the model has one, else\n"
            "                       %s)\n"
            "  --write-canaries     write the reference's greedy tokens and margins into the canary file for its\n"
            "                       prompts and token counts, and its sha256 beside it; runs the reference\n"
            "                       backend on --model only, then exits. With --model and no --canaries: the\n"
            "                       prompts of the set it would use, written to MODEL/gate-canaries.txt (never\n"
            "                       another model's tokens into the repository's set)\n"
            "  -n, --samples N      samples per distribution arm (default 300)\n"
            "  --length L           tokens per sample (default 8)\n"
            "  --control-temperature T\n"
            "                       the control arm's temperature (default 3 x --temperature)\n"
            "  --tv-budget X        a lossy configuration: largest TV per position (default 0.02)\n"
            "  --budget-tokens N    ... and no greedy divergence before token N of a turn (default 64)\n"
            "  --budget-margin E    ... where the reference's margin exceeds E logits (default 0.5)\n"
            "  --plant BUG          the gate's self-test: plant BUG (verify/planted.h: residual-unnormalised,\n"
            "                       ratio-inverted, ...) in the on arm's acceptance rule; the distribution rows\n"
            "                       must fail\n"
            "  --quiet              no progress on stderr\n"
            "The model:\n",
            gate_default_canaries());
    model_flags_usage(f);
    fprintf(f, "The method (--temperature, default 1, is the sampled rows'; the exact rows run it at 0):\n");
    static const char *const except[] = {"--max-tokens", "--no-eos", NULL};
    method_spec_usage(f, 0, METHOD_BEAM_SEARCH | METHOD_GREEDY_ONLY, except);
}

static int parse(int argc, char **argv, gate_args *a) {
    memset(a, 0, sizeof *a);
    method_spec raw = method_spec_defaults();
    a->models = model_flags_defaults(backend_cuda_on_device() ? BACKEND_CUDA : BACKEND_CPU);
    a->n = 300;
    a->L = 8;
    a->budget = (gate_budget){0.02, 64, 0.5};
    a->plant = PLANT_NONE;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = NULL;
        float x;
#define VALUE()                                                                                                        \
    if (!(v = arg_value(argc, argv, &i))) return 2
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(f, "--canaries")) {
            VALUE();
            a->canaries_path = v;
        } else if (!strcmp(f, "--write-canaries")) {
            a->write_canaries = 1;
        } else if (!strcmp(f, "-n") || !strcmp(f, "--samples")) {
            VALUE();
            if (arg_int(f, v, 50, 1 << 20, &a->n)) return 2;
        } else if (!strcmp(f, "--length")) {
            VALUE();
            if (arg_int(f, v, 1, 256, &a->L)) return 2;
        } else if (!strcmp(f, "--control-temperature")) {
            VALUE();
            if (arg_float(f, v, 1e-3, 100, &x)) return 2;
            a->control_temperature = x;
        } else if (!strcmp(f, "--tv-budget")) {
            VALUE();
            if (arg_float(f, v, 0, 1, &x)) return 2;
            a->budget.tv = x;
        } else if (!strcmp(f, "--budget-tokens")) {
            VALUE();
            if (arg_int(f, v, 0, 1 << 20, &a->budget.tokens)) return 2;
        } else if (!strcmp(f, "--budget-margin")) {
            VALUE();
            if (arg_float(f, v, 0, 1e6, &x)) return 2;
            a->budget.margin = x;
        } else if (!strcmp(f, "--plant")) {
            VALUE();
            int b = planted_parse(v);
            if (b <= PLANT_NONE) {
                fprintf(stderr,
                        "specula gate: --plant: '%s' is not a planted bug of verify/planted.h (e.g. "
                        "residual-unnormalised)\n",
                        v);
                return 2;
            }
            a->plant = (planted_bug)b;
        } else if (!strcmp(f, "--quiet")) {
            a->quiet = 1;
        } else {
            int r = method_cli_flag(&raw, &a->models, argc, argv, &i, "gate");
            if (r < 0) return 2;
            if (r == 0) {
                fprintf(stderr, "specula gate: unknown option '%s'; `specula gate --help` lists them\n", f);
                return 2;
            }
        }
#undef VALUE
    }
    static const char *const refused[] = {"--max-tokens", "--no-eos", NULL};
    if (method_cli_refuse(&raw, refused, "the canaries set the lengths and never stop at EOS", "gate")) return 2;
    if (!method_spec_given(&raw, "--method")) { /* the case study's configuration: MTP, three drafts */
        raw.method = &mtp_method;
        if (!method_spec_given(&raw, "--k")) raw.k = 3;
    }
    if (method_has(&raw, METHOD_BEAM_SEARCH) || method_has(&raw, METHOD_GREEDY_ONLY)) {
        fprintf(stderr, "specula gate: --method %s decodes at temperature 0 only; the gate samples too\n",
                method_name(&raw));
        return 2;
    }
    sp_error err;
    a->spec = raw;
    if (method_spec_finish(&a->spec, 1, &err)) {
        fprintf(stderr, "specula gate: %s\n", err.msg);
        return 2;
    }
    if (!(a->spec.sampling.temperature > 0)) {
        fprintf(stderr, "specula gate: --temperature must be above 0: it is the sampled rows'; the exact rows run "
                        "the method at 0 themselves\n");
        return 2;
    }
    a->greedy = raw;
    a->greedy.sampling.temperature = 0;
    if (a->greedy.method == &sample_method) a->greedy.method = &greedy_method; /* plain decoding, at 0 */
    if (method_spec_finish(&a->greedy, 0, &err)) {
        fprintf(stderr, "specula gate: at temperature 0: %s\n", err.msg);
        return 2;
    }
    if (a->control_temperature == 0) a->control_temperature = 3 * a->spec.sampling.temperature;
    if (a->control_temperature == a->spec.sampling.temperature) {
        fprintf(stderr, "specula gate: --control-temperature must differ from --temperature\n");
        return 2;
    }
    if (a->plant != PLANT_NONE && !method_has(&a->spec, METHOD_PROPOSES)) {
        fprintf(stderr, "specula gate: --plant plants its bug in a speculative method's rule; --method %s has none\n",
                method_name(&a->spec));
        return 2;
    }
    if (a->plant != PLANT_NONE && !accept_rule_exact(a->spec.rule)) {
        fprintf(stderr, "specula gate: --plant plants its bug in the exact rule; this method runs another rule\n");
        return 2;
    }
    a->exact = a->models.backend == BACKEND_REFERENCE || (a->models.backend == BACKEND_CPU && a->models.f32 &&
                                                          (a->models.kv == KV_DEFAULT || a->models.kv == KV_F32));
    if (!a->canaries_path) a->canaries_path = gate_canaries_for(a->models.model_dir);
    return model_flags_check(&a->models, &a->spec, "gate");
}

/* --write-canaries: the reference's greedy tokens and margins for every turn, written with their sha256. */
static int write_canaries(const gate_args *a) {
    gate_canaries c;
    sp_error err;
    if (gate_canaries_read(&c, a->canaries_path, 0, &err)) {
        fprintf(stderr, "specula gate: %s\n", err.msg);
        return EXIT_BAD_INPUT;
    }
    model_flags mf = model_flags_defaults(BACKEND_REFERENCE);
    mf.model_dir = a->models.model_dir;
    loaded_models lm;
    if (models_load(&lm, &mf, COMPANION_NO, COMPANION_NO, "gate")) {
        gate_canaries_free(&c);
        return EXIT_BAD_INPUT;
    }
    int rc = 0;
    for (int k = 0; k < c.n_cases && !rc; k++)
        for (int u = 0; u < c.cases[k].n_turns && !rc; u++) {
            gate_turn *t = &c.cases[k].turns[u];
            free(t->expect);
            free(t->margin);
            t->expect = sp_xcalloc((size_t)t->n_expect, sizeof *t->expect, "canary tokens");
            t->margin = sp_xcalloc((size_t)t->n_expect, sizeof *t->margin, "canary margins");
            int *ctx, n_ctx;
            gate_context(&c.cases[k], u, &ctx, &n_ctx); /* the turns before u are written already */
            rc = context_check(models_config(&lm), NULL, n_ctx, "tokens", t->n_expect, "gate");
            if (!rc &&
                gate_walk(lm.parts.target, ctx, n_ctx, t->n_expect, NULL, NULL, t->expect, t->margin, NULL, &err)) {
                fprintf(stderr, "specula gate: %s\n", err.msg);
                rc = EXIT_RUN_FAILED;
            }
            free(ctx);
        }
    const char *dir = a->models.model_dir ? a->models.model_dir : default_model_dir();
    /* Another model's expected tokens never go into the repository's set: with --model and no --canaries, its
     * prompts are read from there and the model's own set is written beside it (gate_canaries_for finds it). */
    char own[4200];
    const char *out = a->canaries_path;
    if (a->models.model_dir && a->canaries_path == gate_default_canaries()) {
        snprintf(own, sizeof own, "%s/gate-canaries.txt", a->models.model_dir);
        out = own;
    }
    if (!rc && gate_canaries_write(&c, out, dir, &err)) {
        fprintf(stderr, "specula gate: %s\n", err.msg);
        rc = EXIT_RUN_FAILED;
    }
    if (!rc)
        printf("wrote %s: %d cases, sha256 %s (and %s.sha256)\n", out, c.n_cases, c.sha256,
               out);
    gate_canaries_free(&c);
    models_release(&lm);
    return rc;
}

static void print_table(const gate_args *a, const gate_canaries *c, const gate_table *t) {
    char label[256];
    method_spec_label(&a->spec, label, sizeof label);
    const char *kv = a->models.backend == BACKEND_REFERENCE ? "-" : kv_format_name(a->models.kv);
    printf("specula gate: backend %s, dtype %s, KV cache %s, method %s, T %.3g (%s configuration)\n",
           backend_name(a->models.backend),
           a->models.backend == BACKEND_REFERENCE ? "f32 (reference)"
           : a->models.f32                        ? "f32"
                                                  : "bf16",
           a->models.kv == KV_DEFAULT && a->models.backend != BACKEND_REFERENCE
               ? (a->models.backend == BACKEND_CUDA ? "bf16" : "f32")
               : kv,
           label, (double)a->spec.sampling.temperature, a->exact ? "an exact" : "a lossy");
    if (a->plant != PLANT_NONE)
        printf("planted: %s in the on arm's rule (the gate's self-test)\n", planted_name(a->plant));
    printf("canary set %s: %d cases, sha256 %s\n", a->canaries_path, c ? c->n_cases : 0, c ? c->sha256 : "-");
    printf("%-26s %-7s %s\n", "check", "verdict", "measured | judged by");
    int failed = 0;
    for (int i = 0; i < t->n; i++) {
        const gate_row *r = &t->rows[i];
        const char *v = r->verdict == GATE_PASS ? "PASS" : r->verdict == GATE_FAIL ? "FAIL" : "-";
        printf("%-26s %-7s %s | %s\n", r->check, v, r->measured, r->against);
        failed += r->verdict == GATE_FAIL;
    }
    printf("gate: %s (%d of %d rows failed)\n", failed ? "FAILED" : "passed", failed, t->n);
}

int cmd_gate(int argc, char **argv) {
    gate_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc == 1 ? 0 : rc;
    if (a.write_canaries) return write_canaries(&a);
    gate_canaries c;
    sp_error err;
    if (gate_canaries_read(&c, a.canaries_path, 1, &err)) {
        fprintf(stderr, "specula gate: %s\n", err.msg);
        return EXIT_BAD_INPUT;
    }
    loaded_models lm, ref;
    if (models_load(&lm, &a.models, method_has(&a.spec, METHOD_DRAFT_MODEL) ? COMPANION_NEEDED : COMPANION_NO,
                    method_has(&a.spec, METHOD_HEADS) ? COMPANION_NEEDED : COMPANION_NO, "gate")) {
        gate_canaries_free(&c);
        return EXIT_BAD_INPUT;
    }
    model_flags rf = model_flags_defaults(BACKEND_REFERENCE);
    rf.model_dir = a.models.model_dir;
    if (models_load(&ref, &rf, COMPANION_NO, COMPANION_NO, "gate")) {
        models_release(&lm);
        gate_canaries_free(&c);
        return EXIT_BAD_INPUT;
    }
    rc = gate_canaries_fit(&a, &c, models_config(&lm), "gate");
    gate_table t = {.n = 0};
    if (!rc && gate_evaluate(&a, &c, &lm, &ref, &t, &err)) {
        fprintf(stderr, "specula gate: %s\n", err.msg);
        rc = EXIT_RUN_FAILED;
    }
    if (!rc) {
        print_table(&a, &c, &t);
        rc = gate_table_failed(&t) ? EXIT_RUN_FAILED : 0;
        /* the verdict, for bench to show beside this configuration's speed (no plant: a self-test is no verdict) */
        char key[65], text[8192];
        gate_config_key(&a, &c, key, text, sizeof text);
        if (a.plant == PLANT_NONE) {
            if (gate_cache_store(key, gate_table_failed(&t), t.n, text, &err))
                fprintf(stderr, "specula gate: note: the verdict was not recorded: %s\n", err.msg);
            else
                printf("verdict recorded for bench: configuration %.16s\n", key);
        }
    }
    models_release(&ref);
    models_release(&lm);
    gate_canaries_free(&c);
    return rc;
}
