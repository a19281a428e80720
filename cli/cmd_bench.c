/* cmd_bench.c — `specula bench MODEL`: decode speed of the reference, as a
 * table — median tokens/s over several runs, the weight bytes those tokens
 * read and the bandwidth that implies, for plain decoding and for each
 * speculative method the model supports, with ratios to plain decoding
 * measured in the same run. A benchmark, not a test: it asserts nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "decode.h"
#include "footprint.h"
#include "medusa.h"
#include "mtp.h"
#include "speculative.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: specula bench [MODEL] [--draft DIR] [--medusa FILE] [--runs N] [--tokens N] [--k N]\n"
            "                     [--temperature T]\n"
            "Times the reference decoding MODEL (default %s): plain decoding, MTP when the\n"
            "model has an MTP module, draft-model speculation when a draft is given or sits beside\n"
            "the model as MODEL-draft, Medusa when heads are given or sit beside it as\n"
            "MODEL-medusa/medusa_heads.safetensors (built-in tree; greedy rule at temperature 0,\n"
            "exact without replacement above). Prints the median tokens/s of N runs (default 5) of\n"
            "N tokens (default 64), the weight bytes read per token and the implied bandwidth. The\n"
            "reference holds float32 weights, so its bandwidth counts 4 bytes per parameter. k is\n"
            "the draft length of MTP and draft-model speculation; Medusa's is its tree's depth.\n",
            default_model_dir());
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    const char *name;
    double median_tps, tokens_per_pass;
    double engine_bytes_per_token; /* one weight read per pass, at the stored dtype */
    double ref_bytes_per_token;    /* what the reference reads: one float32 weight read per position */
} bench_row;

/* What one row of the table runs: plain decoding, or one proposer. */
typedef enum { BENCH_PLAIN, BENCH_MTP, BENCH_SPEC, BENCH_MEDUSA } bench_kind;

typedef struct {
    const char *name;
    bench_kind kind;
    int k;
    model *draft;              /* BENCH_SPEC */
    const medusa_heads *heads; /* BENCH_MEDUSA, with its tree */
    const medusa_tree *tree;
} bench_method;

static int build_proposer(const bench_method *m, model *target, decode_options *o, proposer *p, sp_error *err) {
    switch (m->kind) {
    case BENCH_MTP: return mtp_proposer_build(p, target, m->k, 0, &o->sampling, o->seed, err);
    case BENCH_SPEC: return spec_proposer_build(p, m->draft, target, m->k, &o->sampling, o->seed, err);
    case BENCH_MEDUSA: {
        /* generate's default: top-ranked children verified greedily at
         * temperature 0, children drawn without replacement and the exact
         * rule above it */
        int greedy = o->sampling.temperature == 0;
        o->rule = greedy ? RULE_GREEDY : RULE_EXACT;
        return medusa_proposer_build(p, m->heads, target, m->tree,
                                     greedy ? CHILDREN_TOP_RANKS : CHILDREN_NO_REPLACEMENT, &o->sampling, o->seed, err);
    }
    case BENCH_PLAIN: break;
    }
    return 0;
}

/* Runs `runs` generations; returns 0 and fills row, or -1 with a message. */
static int bench_run(model *target, const bench_method *m, int runs, int tokens, float temp, bench_row *row) {
    double tps[64];
    const char *name = m->name;
    decode_options o = decode_defaults();
    o.max_tokens = tokens;
    o.stop_at_eos = 0;
    o.sampling.temperature = temp;
    int prompt[4] = {1, 2, 3, 4};
    for (int i = 0; i < 4; i++) prompt[i] %= target->cfg.vocab_size;
    sp_error err;
    for (int r = 0; r < runs; r++) {
        proposer p, *pp = m->kind == BENCH_PLAIN ? NULL : &p;
        o.seed = (uint64_t)r + 1;
        if (pp && build_proposer(m, target, &o, pp, &err)) goto fail;
        decode_output out;
        double t0 = now_s();
        int rc = decode_run(target, pp, name, pp ? m->k : 0, prompt, 4, &o, &out, &err);
        double dt = now_s() - t0;
        if (pp) pp->release(pp);
        if (rc) goto fail;
        tps[r] = out.n / dt;
        row->tokens_per_pass = accounting_tokens_per_pass(&out.acc);
        row->engine_bytes_per_token = accounting_bytes_per_token(&out.acc);
        /* the reference evaluates every position on its own and holds float32 copies */
        double f32 = 4.0 / target->storage_bytes;
        row->ref_bytes_per_token = (out.acc.target_positions * out.acc.target_bytes_per_pass +
                                    out.acc.proposer_steps * out.acc.proposer_bytes_per_step) *
                                   f32 / out.n;
        decode_output_free(&out);
        if (isatty(2)) fprintf(stderr, "\r%-8s run %d/%d: %.1f tokens/s   ", name, r + 1, runs, tps[r]);
    }
    if (isatty(2)) fprintf(stderr, "\r%60s\r", "");
    qsort(tps, (size_t)runs, sizeof tps[0], cmp_double);
    row->name = name;
    row->median_tps = runs % 2 ? tps[runs / 2] : 0.5 * (tps[runs / 2 - 1] + tps[runs / 2]);
    return 0;
fail:
    fprintf(stderr, "specula bench: %s: %s\n", name, err.msg);
    return -1;
}

/* Loads an optional companion that was named on the command line or sits
 * beside the model: absent beside the model is no error, present but
 * unloadable is. Returns 1 loaded, 0 absent, -1 error (printed). */
static int load_draft(model *draft, const char *given, const char *beside) {
    char config[4300];
    snprintf(config, sizeof config, "%s/config.json", beside);
    if (!given && access(config, F_OK)) return 0;
    sp_error err;
    if (model_load(draft, given ? given : beside, &err)) {
        fprintf(stderr, "specula bench: %s\n", err.msg);
        return -1;
    }
    return 1;
}

static int load_heads(medusa_heads *heads, const char *given, const char *beside, const model *target) {
    if (!given && access(beside, F_OK)) return 0;
    sp_error err;
    if (medusa_load(heads, given ? given : beside, target, 0, &err)) {
        fprintf(stderr, "specula bench: %s\n", err.msg);
        return -1;
    }
    return 1;
}

int cmd_bench(int argc, char **argv) {
    const char *dir = NULL, *draft_dir = NULL, *heads_path = NULL;
    int runs = 5, tokens = 64, k = 4;
    float temp = 0.0f;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v;
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(f, "--draft")) {
            if (!(draft_dir = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(f, "--medusa")) {
            if (!(heads_path = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(f, "--runs")) {
            if (!(v = arg_value(argc, argv, &i)) || arg_int(f, v, 1, 64, &runs)) return 2;
        } else if (!strcmp(f, "--tokens")) {
            if (!(v = arg_value(argc, argv, &i)) || arg_int(f, v, 1, 1 << 16, &tokens)) return 2;
        } else if (!strcmp(f, "--k")) {
            if (!(v = arg_value(argc, argv, &i)) || arg_int(f, v, 1, 32, &k)) return 2;
        } else if (!strcmp(f, "--temperature")) {
            if (!(v = arg_value(argc, argv, &i)) || arg_float(f, v, 0, 100, &temp)) return 2;
        } else if (f[0] == '-' || dir) {
            fprintf(stderr, "specula bench: unexpected argument '%s'\n", f);
            usage(stderr);
            return 2;
        } else {
            dir = f;
        }
    }
    if (!dir) dir = default_model_dir();
    model target, draft;
    medusa_heads heads;
    medusa_tree tree;
    sp_error err;
    if (model_load(&target, dir, &err)) {
        fprintf(stderr, "specula bench: %s\n", err.msg);
        return 1;
    }
    size_t n_dir = strlen(dir);
    while (n_dir > 1 && dir[n_dir - 1] == '/') n_dir--;
    char beside_draft[4200], beside_heads[4300];
    snprintf(beside_draft, sizeof beside_draft, "%.*s-draft", (int)n_dir, dir);
    snprintf(beside_heads, sizeof beside_heads, "%.*s-medusa/medusa_heads.safetensors", (int)n_dir, dir);
    int have_draft = load_draft(&draft, draft_dir, beside_draft);
    int have_heads = have_draft < 0 ? 0 : load_heads(&heads, heads_path, beside_heads, &target);
    if (have_draft < 0 || have_heads < 0) {
        if (have_draft > 0) model_free(&draft);
        model_free(&target);
        return 1;
    }
    if (have_heads) medusa_tree_default(&tree, heads.n_heads);

    bench_method methods[4];
    int n_methods = 0;
    methods[n_methods++] = (bench_method){"greedy", BENCH_PLAIN, 0, NULL, NULL, NULL};
    if (target.w.has_mtp) methods[n_methods++] = (bench_method){"mtp", BENCH_MTP, k, NULL, NULL, NULL};
    if (have_draft) methods[n_methods++] = (bench_method){"spec", BENCH_SPEC, k, &draft, NULL, NULL};
    if (have_heads) methods[n_methods++] = (bench_method){"medusa", BENCH_MEDUSA, tree.max_depth, NULL, &heads, &tree};
    bench_row rows[4];
    int ok[4], status = 0;
    for (int i = 0; i < n_methods; i++)
        if (!(ok[i] = bench_run(&target, &methods[i], runs, tokens, temp, &rows[i]) == 0)) status = 1;
    /* ratios only against a plain-decoding time measured in this run */
    double greedy_tps = ok[0] ? rows[0].median_tps : NAN;
    printf("reference decode, %s: %d runs x %d tokens, temperature %g, k %d\n", dir, runs, tokens, temp, k);
    printf("%-8s %10s %9s %16s %16s %9s %10s\n", "method", "tokens/s", "tok/pass", "engine B/token", "reference B/tok",
           "ref GB/s", "vs greedy");
    for (int i = 0; i < n_methods; i++)
        if (ok[i])
            printf("%-8s %10.1f %9.3f %16.4g %16.4g %9.3f %9.2fx\n", rows[i].name, rows[i].median_tps,
                   rows[i].tokens_per_pass, rows[i].engine_bytes_per_token, rows[i].ref_bytes_per_token,
                   rows[i].median_tps * rows[i].ref_bytes_per_token / 1e9, rows[i].median_tps / greedy_tps);
    printf("engine B/token: weights an engine reads per committed token (one read per pass, stored dtype);\n"
           "reference B/tok: what this single-position float32 reference actually reads.\n");
    if (have_heads) medusa_free(&heads);
    if (have_draft) model_free(&draft);
    model_free(&target);
    return status;
}
