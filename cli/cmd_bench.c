/* cmd_bench.c — `specula bench MODEL`: decode speed of the reference, as a
 * table — median tokens/s over several runs, the weight bytes those tokens
 * read and the bandwidth that implies, for plain decoding and for each
 * speculative method the model supports, with ratios to plain decoding
 * measured in the same run. A benchmark, not a test: it asserts nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "decode.h"
#include "footprint.h"
#include "mtp.h"
#include "speculative.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: specula bench [MODEL] [--draft DIR] [--runs N] [--tokens N] [--k N] [--temperature T]\n"
            "Times the reference decoding MODEL (default %s): plain decoding, MTP when the\n"
            "model has an MTP module, draft-model speculation when a draft is given or sits beside\n"
            "the model as MODEL-draft. Prints the median tokens/s of N runs (default 5) of N tokens\n"
            "(default 64), the weight bytes read per token and the implied bandwidth. The reference\n"
            "holds float32 weights, so its bandwidth counts 4 bytes per parameter.\n",
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

/* Runs `runs` generations; returns 0 and fills row, or -1 with a message. */
static int bench_method(model *target, model *draft, const char *name, int k, int runs, int tokens, float temp,
                        bench_row *row) {
    double tps[64];
    decode_options o = decode_defaults();
    o.max_tokens = tokens;
    o.stop_at_eos = 0;
    o.sampling.temperature = temp;
    int prompt[4] = {1, 2, 3, 4};
    for (int i = 0; i < 4; i++) prompt[i] %= target->cfg.vocab_size;
    sp_error err;
    for (int r = 0; r < runs; r++) {
        proposer p, *pp = NULL;
        o.seed = (uint64_t)r + 1;
        if (draft && spec_proposer_build(&p, draft, target, k, &o.sampling, o.seed, &err)) goto fail;
        if (!draft && k && mtp_proposer_build(&p, target, k, 0, &o.sampling, o.seed, &err)) goto fail;
        if (draft || k) pp = &p;
        decode_output out;
        double t0 = now_s();
        int rc = decode_run(target, pp, name, k, prompt, 4, &o, &out, &err);
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

int cmd_bench(int argc, char **argv) {
    const char *dir = NULL, *draft_dir = NULL;
    int runs = 5, tokens = 64, k = 4;
    float temp = 0.0f;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v;
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(f, "--draft")) {
            if (!(draft_dir = arg_value(argc, argv, &i))) return 2;
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
    sp_error err;
    if (model_load(&target, dir, &err)) {
        fprintf(stderr, "specula bench: %s\n", err.msg);
        return 1;
    }
    char beside[4200];
    snprintf(beside, sizeof beside, "%s-draft", dir);
    int have_draft = 0;
    if (draft_dir) {
        if (model_load(&draft, draft_dir, &err)) {
            fprintf(stderr, "specula bench: %s\n", err.msg);
            model_free(&target);
            return 1;
        }
        have_draft = 1;
    } else {
        have_draft = model_load(&draft, beside, &err) == 0;
    }
    bench_row rows[3];
    int n = 0, status = 0;
    if (bench_method(&target, NULL, "greedy", 0, runs, tokens, temp, &rows[n]) == 0) n++;
    else status = 1;
    if (target.w.has_mtp && bench_method(&target, NULL, "mtp", k, runs, tokens, temp, &rows[n]) == 0) n++;
    if (have_draft && bench_method(&target, &draft, "spec", k, runs, tokens, temp, &rows[n]) == 0) n++;
    printf("reference decode, %s: %d runs x %d tokens, temperature %g, k %d\n", dir, runs, tokens, temp, k);
    printf("%-8s %10s %9s %16s %16s %9s %10s\n", "method", "tokens/s", "tok/pass", "engine B/token",
           "reference B/tok", "ref GB/s", "vs greedy");
    for (int i = 0; i < n; i++)
        printf("%-8s %10.1f %9.3f %16.4g %16.4g %9.3f %9.2fx\n", rows[i].name, rows[i].median_tps,
               rows[i].tokens_per_pass, rows[i].engine_bytes_per_token, rows[i].ref_bytes_per_token,
               rows[i].median_tps * rows[i].ref_bytes_per_token / 1e9, rows[i].median_tps / rows[0].median_tps);
    printf("engine B/token: weights an engine reads per committed token (one read per pass, stored dtype);\n"
           "reference B/tok: what this single-position float32 reference actually reads.\n");
    if (have_draft) model_free(&draft);
    model_free(&target);
    return status;
}
