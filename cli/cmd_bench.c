/* cmd_bench.c — `specula bench MODEL`: decode speed of the reference, as a
 * table — median tokens/s over several runs, the weight bytes those tokens
 * read and the bandwidth that implies, for plain decoding and for each
 * speculative method the model supports, with ratios to plain decoding
 * measured in the same run. A benchmark, not a test: it asserts nothing.
 * --json prints the same rows as one JSON object, with the prefill and decode
 * rates of each row apart (what tools/peer/bench_peers.py reads). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "method_cli.h"

/* Method flags bench sets itself. */
static const char *const refused[] = {"--method", "--max-tokens", "--no-eos", NULL};

static void usage(FILE *f) {
    fprintf(f,
            "usage: specula bench [MODEL] [options]\n"
            "Times decoding MODEL (default %s) on the CPU engine (or --backend reference): plain\n"
            "decoding, MTP when the\n"
            "model has an MTP module, draft-model speculation when a draft is given or sits beside\n"
            "the model as MODEL-draft, Medusa when heads are given or sit beside it as\n"
            "MODEL-medusa/medusa_heads.safetensors. Prints the median tokens/s of N runs of N tokens,\n"
            "the weight bytes read per token and the implied bandwidth: the engine reads its weights\n"
            "once per pass; the reference evaluates every position on its own over float32 copies, so\n"
            "it reads them once per position at 4 bytes per parameter. Every row is built from the same\n"
            "method flags as `specula generate` (and `plot`), so its defaults are generate's: MTP\n"
            "drafts argmax at temperature 0 and sampled above; Medusa greedy at temperature 0, exact\n"
            "without replacement above. The last column says what each row ran.\n"
            "  --runs N             runs per row (default 5); run r uses seed S + r (S: --seed, default 1)\n"
            "  --tokens N           tokens per run (default 64)\n"
            "  --prompt-tokens N    prompt length: ids 1, 2, ..., N (modulo the vocabulary; default 4)\n"
            "  --plain              only the plain decoding row\n"
            "  --json               one JSON object instead of the table: per row the median tokens/s, and\n"
            "                       apart the prefill rate (prompt tokens / time to the first token) and the\n"
            "                       decode rate (tokens after the first / the time they took); max RSS\n"
            "  --method NAME        only this method's row, beside plain decoding (spec | mtp | medusa)\n"
            "  --draft DIR, --medusa FILE, --medusa-ignore-base   the companions (default: beside MODEL)\n"
            "  --backend NAME       cpu (default) | reference; --threads N, --dtype bf16|f32 for cpu\n"
            "The method flags that apply (defaults as in generate, but temperature 0 here):\n",
            default_model_dir());
    method_spec_usage(f, (1u << METHOD_SPEC) | (1u << METHOD_MTP) | (1u << METHOD_MEDUSA), refused);
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
    method_spec spec; /* what the row runs */
    double median_tps, tokens_per_pass;
    double median_prefill_tps, median_decode_tps; /* prompt tokens / TTFT; tokens after the first / their time */
    double engine_bytes_per_token;                /* one weight read per pass, at the stored dtype */
    double read_bytes_per_token; /* what this backend reads: the engine once per pass, the reference once per
                                  * position in float32 */
} bench_row;

typedef struct {
    method_spec base;
    model_flags models;
    int runs, tokens, prompt_tokens;
    int only_given, plain_only, json;
    method_kind only;
} bench_args;

static double median(double *x, int n) {
    qsort(x, (size_t)n, sizeof x[0], cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* Runs `runs` generations of one row; returns 0 and fills it, or -1 with a message. */
static int bench_run(const loaded_models *lm, const bench_args *a, bench_row *row) {
    double tps[64], prefill[64], decode[64];
    const int V = models_config(lm)->vocab_size;
    int *prompt = sp_xcalloc((size_t)a->prompt_tokens, sizeof *prompt, "bench prompt");
    for (int i = 0; i < a->prompt_tokens; i++) prompt[i] = (i + 1) % V;
    method_spec s = row->spec;
    s.max_tokens = a->tokens;
    s.stop_at_eos = 0;
    const char *name = method_kind_name(s.kind);
    sp_error err;
    for (int r = 0; r < a->runs; r++) {
        s.seed = a->base.seed + (uint64_t)r;
        decode_output out;
        const double t0 = now_s();
        if (method_generate(&s, &lm->parts, prompt, a->prompt_tokens, &out, &err)) {
            fprintf(stderr, "specula bench: %s: %s\n", name, err.msg);
            free(prompt);
            return -1;
        }
        tps[r] = out.n / (now_s() - t0);
        prefill[r] = out.acc.ttft_s > 0 ? a->prompt_tokens / out.acc.ttft_s : NAN;
        decode[r] = out.n > 1 && out.acc.decode_s > 0 ? (out.n - 1) / out.acc.decode_s : NAN;
        row->tokens_per_pass = accounting_tokens_per_pass(&out.acc);
        row->engine_bytes_per_token = accounting_bytes_per_token(&out.acc);
        if (lm->backend == BACKEND_REFERENCE) { /* every position on its own, over float32 copies */
            const double f32 = 4.0 / lm->parts.target->storage_bytes;
            row->read_bytes_per_token = (out.acc.target_positions * out.acc.target_bytes_per_pass +
                                         out.acc.proposer_steps * out.acc.proposer_bytes_per_step) *
                                        f32 / out.n;
        } else { /* one weight read per pass, as the accounting counts it */
            row->read_bytes_per_token = row->engine_bytes_per_token;
        }
        decode_output_free(&out);
        if (isatty(2)) fprintf(stderr, "\r%-8s run %d/%d: %.1f tokens/s   ", name, r + 1, a->runs, tps[r]);
    }
    if (isatty(2)) fprintf(stderr, "\r%60s\r", "");
    free(prompt);
    row->median_tps = median(tps, a->runs);
    row->median_prefill_tps = median(prefill, a->runs);
    row->median_decode_tps = median(decode, a->runs);
    return 0;
}

/* A bench-only flag or the model directory: 1 consumed, 0 not one, -1 bad (printed). */
static int own_flag(bench_args *a, int argc, char **argv, int *i) {
    const char *f = argv[*i], *v;
    if (!strcmp(f, "--runs")) return (v = arg_value(argc, argv, i)) && !arg_int(f, v, 1, 64, &a->runs) ? 1 : -1;
    if (!strcmp(f, "--tokens"))
        return (v = arg_value(argc, argv, i)) && !arg_int(f, v, 1, 1 << 16, &a->tokens) ? 1 : -1;
    if (!strcmp(f, "--prompt-tokens"))
        return (v = arg_value(argc, argv, i)) && !arg_int(f, v, 1, 1 << 16, &a->prompt_tokens) ? 1 : -1;
    if (!strcmp(f, "--plain")) return a->plain_only = 1;
    if (!strcmp(f, "--json")) return a->json = 1;
    if (f[0] != '-' && !a->models.model_dir) {
        a->models.model_dir = f;
        return 1;
    }
    return 0;
}

static int parse(int argc, char **argv, bench_args *a) {
    memset(a, 0, sizeof *a);
    a->base = method_spec_defaults();
    a->models = model_flags_defaults(BACKEND_CPU); /* the fastest backend present */
    a->base.sampling.temperature = 0.0f;
    a->runs = 5;
    a->tokens = 64;
    a->prompt_tokens = 4;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 1;
        }
        int rc = own_flag(a, argc, argv, &i);
        if (!rc) rc = method_cli_flag(&a->base, &a->models, argc, argv, &i, "bench");
        if (rc < 0) return 2;
        if (!rc) {
            fprintf(stderr, "specula bench: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    static const char *const beam_flags[] = {"--beams", "--length-penalty", "--early-stopping", "--num-return", NULL};
    if (model_flags_backend_check(&a->models, "bench") ||
        method_cli_refuse(&a->base, refused + 1, "bench runs --tokens tokens with EOS off", "bench") ||
        method_cli_refuse(&a->base, beam_flags, "bench has no beam search row", "bench"))
        return 2;
    if (a->plain_only && method_spec_given(&a->base, "--method")) {
        fprintf(stderr, "specula bench: give --plain or --method, not both\n");
        return 2;
    }
    if (method_spec_given(&a->base, "--method")) {
        a->only_given = 1;
        a->only = a->base.kind;
        if (a->only != METHOD_SPEC && a->only != METHOD_MTP && a->only != METHOD_MEDUSA) {
            fprintf(stderr, "specula bench: --method %s: bench compares spec, mtp or medusa with plain decoding\n",
                    method_kind_name(a->only));
            return 2;
        }
    }
    return 0;
}

/* The rows: plain decoding first (the baseline of the ratios), then every
 * method the models allow (or the one asked for). */
static int plan_rows(const bench_args *a, const loaded_models *lm, bench_row *rows, int *n) {
    const method_kind plain = a->base.sampling.temperature == 0 ? METHOD_GREEDY : METHOD_SAMPLE;
    const method_kind kinds[4] = {plain, METHOD_MTP, METHOD_SPEC, METHOD_MEDUSA};
    const int present[4] = {1, lm->parts.mtp != NULL, lm->parts.draft != NULL, lm->parts.heads != NULL};
    *n = 0;
    for (int i = 0; i < 4; i++) {
        if (!present[i] || (i > 0 && (a->plain_only || (a->only_given && kinds[i] != a->only)))) continue;
        sp_error err;
        if (method_spec_for(&a->base, kinds[i], &rows[*n].spec, &err)) {
            fprintf(stderr, "specula bench: %s: %s\n", method_kind_name(kinds[i]), err.msg);
            return -1;
        }
        (*n)++;
    }
    if (a->only_given && *n == 1) {
        fprintf(stderr, "specula bench: --method %s: the model has no %s\n", method_kind_name(a->only),
                a->only == METHOD_MTP    ? "MTP module"
                : a->only == METHOD_SPEC ? "draft model"
                                         : "Medusa heads");
        return -1;
    }
    return 0;
}

static void print_table(const bench_args *a, const char *dir, const bench_row *rows, const int *ok, int n) {
    double plain_tps = ok[0] ? rows[0].median_tps : NAN; /* ratios only against a time measured in this run */
    printf("%s decode, %s: %d runs x %d tokens, temperature %g\n", backend_name(a->models.backend), dir, a->runs,
           a->tokens, a->base.sampling.temperature);
    printf("%-8s %10s %9s %16s %16s %9s %10s  %s\n", "method", "tokens/s", "tok/pass", "engine B/token", "read B/token",
           "GB/s", "vs plain", "what it ran");
    for (int i = 0; i < n; i++) {
        if (!ok[i]) continue;
        char what[160];
        method_spec_label(&rows[i].spec, what, sizeof what);
        printf("%-8s %10.1f %9.3f %16.4g %16.4g %9.3f %9.2fx  %s\n", method_kind_name(rows[i].spec.kind),
               rows[i].median_tps, rows[i].tokens_per_pass, rows[i].engine_bytes_per_token,
               rows[i].read_bytes_per_token, rows[i].median_tps * rows[i].read_bytes_per_token / 1e9,
               rows[i].median_tps / plain_tps, what);
    }
    printf("engine B/token: weights an engine reads per committed token (one read per pass, stored dtype);\n"
           "read B/token: what this backend reads (the reference: every position on its own, float32).\n");
}

/* A JSON string of plain text (paths, labels): quotes, backslashes and control characters escaped. */
static void print_json_text(const char *t) {
    putchar('"');
    for (; *t; t++) {
        if (*t == '"' || *t == '\\')
            printf("\\%c", *t);
        else if ((unsigned char)*t < 0x20)
            printf("\\u%04x", (unsigned)(unsigned char)*t);
        else
            putchar(*t);
    }
    putchar('"');
}

/* The rows as one JSON object; rates that could not be measured are null. */
static void print_json(const bench_args *a, const char *dir, const loaded_models *lm, const bench_row *rows,
                       const int *ok, int n) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const decode_target *t = lm->parts.target;
    const int on_engine = lm->backend == BACKEND_CPU;
    /* what the backend holds per parameter: the reference float32 copies, the engine its matrices' dtype */
    const int held = on_engine ? (a->models.f32 ? 4 : 2) : 4;
    printf("{\"implementation\": \"%s\", \"threads\": %d, \"model\": ", on_engine ? "cpu engine" : "reference",
           on_engine ? a->models.threads : 1);
    print_json_text(dir);
    printf(", \"runs\": %d, \"prompt_tokens\": %d, \"tokens\": %d, \"temperature\": %g, "
           "\"weight_bytes_per_step_stored\": %.0f, \"stored_bytes_per_param\": %d, \"held_bytes_per_param\": %d, "
           "\"max_rss_kb\": %ld, \"rows\": [",
           a->runs, a->prompt_tokens, a->tokens, a->base.sampling.temperature, t->weight_bytes_per_pass,
           t->storage_bytes, held, ru.ru_maxrss);
    for (int i = 0, first = 1; i < n; i++) {
        if (!ok[i]) continue;
        char what[160];
        method_spec_label(&rows[i].spec, what, sizeof what);
        const double rates[3] = {rows[i].median_tps, rows[i].median_prefill_tps, rows[i].median_decode_tps};
        const char *names[3] = {"tokens_per_s", "prefill_tokens_per_s", "decode_tokens_per_s"};
        printf("%s{\"method\": \"%s\", \"what\": ", first ? "" : ", ", method_kind_name(rows[i].spec.kind));
        print_json_text(what);
        for (int k = 0; k < 3; k++)
            printf(isfinite(rates[k]) ? ", \"%s\": %.6g" : ", \"%s\": null", names[k], rates[k]);
        printf(", \"tokens_per_pass\": %.6g, \"engine_bytes_per_token\": %.6g, \"read_bytes_per_token\": %.6g}",
               rows[i].tokens_per_pass, rows[i].engine_bytes_per_token, rows[i].read_bytes_per_token);
        first = 0;
    }
    printf("]}\n");
}

int cmd_bench(int argc, char **argv) {
    bench_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc == 1 ? 0 : rc;
    const char *dir = a.models.model_dir ? a.models.model_dir : default_model_dir();
    loaded_models lm;
    /* --plain runs the target alone: no companion is loaded (nor counted in max RSS) */
    const companion_need companions = a.plain_only ? COMPANION_NO : COMPANION_PRESENT;
    if (models_load(&lm, &a.models, companions, companions, "bench")) return 1;
    bench_row rows[4];
    int n = 0, ok[4] = {0}, status = 0;
    if (plan_rows(&a, &lm, rows, &n)) {
        models_release(&lm);
        return 1;
    }
    for (int i = 0; i < n; i++)
        if (!(ok[i] = bench_run(&lm, &a, &rows[i]) == 0)) status = 1;
    if (a.json)
        print_json(&a, dir, &lm, rows, ok, n);
    else
        print_table(&a, dir, rows, ok, n);
    models_release(&lm);
    return status;
}
