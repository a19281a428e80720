/* bench_batch.c — `specula bench MODEL --batch B,...`: what one verify pass over B sequences buys on the engine,
 * against B passes of one sequence each. A benchmark: it asserts nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "bench_batch.h"
#include "commands.h"

#define MAX_BATCHES 8
#define MAX_RUNS 64

typedef struct {
    const char *dir, *draft_dir;
    int n_batches, batches[MAX_BATCHES];
    int runs, rounds, k, threads, prompt_tokens, tokens;
    int cuda; /* --backend cuda */
    float temperature;
} batch_args;

static void usage(FILE *f) {
    fprintf(f,
            "usage: specula bench [MODEL] --batch B,... [options]\n"
            "Times B sequences decoded together on the engine (bf16): per round one verify pass over every\n"
            "sequence's nodes, against one pass per sequence. First bare rounds: plain greedy decoding (one node a\n"
            "sequence) and a chain of k + 1 nodes a sequence committed whole (a spec/MTP round at full acceptance,\n"
            "with no proposer: its verify and commit only). Then the methods through the decoding layer's batched\n"
            "round loop, each sequence its own proposer: plain decoding, MTP with k drafts when MODEL has the\n"
            "module, and a draft model with k drafts when one is given or lies beside MODEL (MODEL-draft), with\n"
            "their speed-up over plain decoding at the same B. Prints tokens/s summed over the sequences, medians.\n"
            "  --batch B,...        batch sizes, e.g. 1,2,4,8,16 (each at most %d, at most %d sizes)\n"
            "  --runs N             runs per figure, median reported (default 5)\n"
            "  --rounds N           bare rounds per run (default 32)\n"
            "  --tokens N           tokens each sequence decodes in the method rows (default 32)\n"
            "  --temperature T      the method rows' temperature (default 0: greedy; above: sampled, MTP's\n"
            "                       drafts sampled, the exact rule)\n"
            "  --draft DIR          the draft model of the spec rows (default: MODEL-draft when it exists)\n"
            "  -k N                 drafts per chain and per spec/MTP round (default 3: chains of 4 nodes)\n"
            "  --backend cpu|cuda   the engine's backend (default cpu; cuda: the GPU's, or the kernels' emulator\n"
            "                       in a build for it, the draft model on it too)\n"
            "  --threads N          the CPU products' threads (default 1)\n"
            "  --prompt-tokens N    each sequence's prompt length (default 4)\n",
            ENGINE_MAX_BATCH, MAX_BATCHES);
}

static int parse_batches(const char *v, batch_args *a) {
    a->n_batches = 0;
    for (const char *p = v; *p;) {
        char *end;
        const long n = strtol(p, &end, 10);
        if (end == p || n < 1 || n > ENGINE_MAX_BATCH || a->n_batches == MAX_BATCHES || (*end && *end != ',')) {
            fprintf(stderr, "specula bench: --batch expects up to %d sizes in [1, %d] like 1,2,4,8, got '%s'\n",
                    MAX_BATCHES, ENGINE_MAX_BATCH, v);
            return -1;
        }
        a->batches[a->n_batches++] = (int)n;
        p = *end ? end + 1 : end;
    }
    return a->n_batches ? 0 : -1;
}

/* --backend's value: *cuda 1 for cuda, 0 for cpu; −1 with a message for anything else. */
static int parse_backend(const char *v, int *cuda) {
    if (strcmp(v, "cpu") && strcmp(v, "cuda")) {
        fprintf(stderr, "specula bench --batch: --backend expects cpu or cuda, got '%s'\n", v);
        return -1;
    }
    *cuda = !strcmp(v, "cuda");
    return 0;
}

/* 0, 1 for --help, or 2 on a bad flag. */
static int parse(int argc, char **argv, batch_args *a) {
    memset(a, 0, sizeof *a);
    a->n_batches = 4, a->batches[0] = 1, a->batches[1] = 2, a->batches[2] = 4, a->batches[3] = 8;
    a->runs = 5, a->rounds = 32, a->k = 3, a->threads = 1, a->prompt_tokens = 4, a->tokens = 32;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = NULL;
        int bad = 0;
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(f, "--batch")) {
            bad = !(v = arg_value(argc, argv, &i)) || parse_batches(v, a);
        } else if (!strcmp(f, "--runs")) {
            bad = !(v = arg_value(argc, argv, &i)) || arg_int(f, v, 1, MAX_RUNS, &a->runs);
        } else if (!strcmp(f, "--rounds")) {
            bad = !(v = arg_value(argc, argv, &i)) || arg_int(f, v, 1, 4096, &a->rounds);
        } else if (!strcmp(f, "--tokens")) {
            bad = !(v = arg_value(argc, argv, &i)) || arg_int(f, v, 1, 4096, &a->tokens);
        } else if (!strcmp(f, "--temperature")) {
            bad = !(v = arg_value(argc, argv, &i)) || arg_float(f, v, 0, 100, &a->temperature);
        } else if (!strcmp(f, "--draft")) {
            bad = !(a->draft_dir = arg_value(argc, argv, &i));
        } else if (!strcmp(f, "-k")) {
            bad = !(v = arg_value(argc, argv, &i)) || arg_int(f, v, 1, ENGINE_MAX_TREE_NODES - 1, &a->k);
        } else if (!strcmp(f, "--backend")) {
            bad = !(v = arg_value(argc, argv, &i)) || parse_backend(v, &a->cuda);
        } else if (!strcmp(f, "--threads")) {
            bad = !(v = arg_value(argc, argv, &i)) || arg_int(f, v, 1, 1024, &a->threads);
        } else if (!strcmp(f, "--prompt-tokens")) {
            bad = !(v = arg_value(argc, argv, &i)) || arg_int(f, v, 1, 4096, &a->prompt_tokens);
        } else if (f[0] != '-' && !a->dir) {
            a->dir = f;
        } else {
            fprintf(stderr, "specula bench --batch: unexpected argument '%s' (`specula bench --batch 1 --help`)\n", f);
            bad = 1;
        }
        if (bad) return 2;
    }
    return 0;
}

/* One run's sequences, trees and rows. */
typedef struct {
    decode_target *t;
    int B, nodes; /* sequences; nodes a sequence verifies per round (1 or k + 1) */
    int seqs[ENGINE_MAX_BATCH], next[ENGINE_MAX_BATCH]; /* each sequence's pending token */
    token_tree trees[ENGINE_MAX_BATCH];
    target_job jobs[ENGINE_MAX_BATCH];
    float *rows; /* [B, nodes, V] */
} batch_run;

/* B sequences, sequence j prefilled with ids j + 1, j + 2, ... (modulo V) but its last, which is pending. */
static int run_open(batch_run *r, decode_target *t, int B, int nodes, int prompt_tokens, sp_error *err) {
    const int V = t->cfg->vocab_size;
    memset(r, 0, sizeof *r);
    r->t = t, r->B = B, r->nodes = nodes;
    for (int j = 0; j < B; j++) r->seqs[j] = -1; /* none open yet: run_close closes only what opened */
    r->rows = calloc((size_t)B * nodes * V, sizeof(float));
    int *prompt = calloc((size_t)prompt_tokens, sizeof(int));
    int rc = r->rows && prompt ? 0 : sp_fail(err, "out of memory for %d sequences' rows", B);
    for (int j = 0; j < B && !rc; j++) {
        for (int i = 0; i < prompt_tokens; i++) prompt[i] = (j + 1 + i) % V;
        tree_build(&r->trees[j], V, nodes);
        if ((r->seqs[j] = t->seq_open(t, err)) < 0 ||
            (prompt_tokens > 1 && t->prefill(t, r->seqs[j], prompt, prompt_tokens - 1, NULL, NULL, err)))
            rc = -1;
        r->next[j] = prompt[prompt_tokens - 1];
    }
    free(prompt);
    return rc;
}

static void run_close(batch_run *r) {
    for (int j = 0; j < r->B; j++) {
        if (r->seqs[j] >= 0) r->t->seq_close(r->t, r->seqs[j]);
        tree_free(&r->trees[j]);
    }
    free(r->rows);
}

/* One round: every sequence's chain (its pending token, then its successors in the vocabulary) verified — in one
 * pass, or one pass each — and committed whole; the next pending token is the argmax of the last node's row. */
static int run_round(batch_run *r, int one_pass, sp_error *err) {
    decode_target *t = r->t;
    const int V = t->cfg->vocab_size, n = r->nodes;
    for (int j = 0; j < r->B; j++) {
        tree_reset(&r->trees[j], r->next[j], CHILDREN_IID);
        for (int i = 1; i < n; i++) tree_add(&r->trees[j], i - 1, (r->next[j] + i) % V);
        r->jobs[j] = (target_job){r->seqs[j], &r->trees[j], r->rows + (size_t)j * n * V, NULL};
    }
    if (one_pass && t->verify(t, r->jobs, r->B, NULL, err)) return -1;
    for (int j = 0; j < r->B; j++) {
        if (!one_pass && t->verify(t, &r->jobs[j], 1, NULL, err)) return -1;
        if (t->commit(t, r->seqs[j], n - 1, err)) return -1;
        r->next[j] = sampler_argmax(r->rows + ((size_t)j * n + n - 1) * V, V);
    }
    return 0;
}

/* Tokens per second summed over B sequences: `rounds` rounds of `nodes` nodes each, one pass or B a round. */
static int timed_run(decode_target *t, const batch_args *a, int B, int nodes, int one_pass, double *tps,
                     sp_error *err) {
    batch_run r;
    int rc = run_open(&r, t, B, nodes, a->prompt_tokens, err);
    const double t0 = bench_now_s();
    for (int i = 0; i < a->rounds && !rc; i++) rc = run_round(&r, one_pass, err);
    *tps = (double)B * nodes * a->rounds / (bench_now_s() - t0);
    run_close(&r);
    return rc;
}

/* Medians of the runs, the two ways alternating, after one warm-up run of each (not kept: the first touches of
 * the weights and the first allocations): tps[0] one pass a round, tps[1] B passes. */
static int measure(decode_target *t, const batch_args *a, int B, int nodes, double tps[2], sp_error *err) {
    double x[2][MAX_RUNS], warm;
    if (timed_run(t, a, B, nodes, 1, &warm, err) || timed_run(t, a, B, nodes, 0, &warm, err)) return -1;
    for (int run = 0; run < a->runs; run++)
        for (int w = 0; w < 2; w++) {
            const int one_pass = (w + run) % 2 == 0; /* which way goes first alternates too */
            if (timed_run(t, a, B, nodes, one_pass, &x[one_pass ? 0 : 1][run], err)) return -1;
        }
    tps[0] = bench_median(x[0], a->runs);
    tps[1] = bench_median(x[1], a->runs);
    return 0;
}

#define N_ROW_METHODS 3 /* plain, MTP, draft model */

/* The method rows' specs at the run's temperature; have[m]: 0 where the model is missing. */
static int row_specs(const batch_args *a, const engine *e, const decode_target *draft, method_spec specs[N_ROW_METHODS],
                     int have[N_ROW_METHODS], sp_error *err) {
    static const char *const methods[N_ROW_METHODS] = {NULL, "mtp", "spec"};
    for (int m = 0; m < N_ROW_METHODS; m++) {
        char flags[128];
        if (m == 0)
            snprintf(flags, sizeof flags, "--method %s --temperature %g", a->temperature == 0 ? "greedy" : "sample",
                     a->temperature);
        else
            snprintf(flags, sizeof flags, "--method %s --k %d --temperature %g", methods[m], a->k, a->temperature);
        have[m] = m == 0 || (m == 1 && e->cfg.mtp_num_layers > 0) || (m == 2 && draft);
        specs[m] = method_spec_defaults();
        if (have[m] && method_spec_parse(&specs[m], flags, err)) return -1;
    }
    return 0;
}

/* The method table: each method through decode_batch_run at each B, one pass against B, and its speed-up over
 * plain decoding's one-pass rate at the same B. MTP runs when the checkpoint has the module, the draft model when
 * one is given or lies beside MODEL. */
static int method_table(engine *e, decode_target *t, decode_target *draft, const batch_args *a) {
    sp_error err;
    method_spec specs[N_ROW_METHODS];
    int have[N_ROW_METHODS];
    if (row_specs(a, e, draft, specs, have, &err)) {
        fprintf(stderr, "specula bench: %s\n", err.msg);
        return EXIT_BAD_INPUT;
    }
    const batch_bench bb = {e, t, draft, a->tokens, a->prompt_tokens, a->runs, 0};
    printf("\nMethods through the batched round loop (decode_batch.h; each sequence its own proposer, %d tokens a\n"
           "sequence, T = %g, k = %d%s%s):\n",
           a->tokens, a->temperature, a->k, have[1] ? "" : "; no MTP module", have[2] ? "" : "; no draft model");
    printf("%4s %-7s | %12s %12s %7s | %11s | %s\n", "B", "method", "1 pass", "B passes", "ratio", "tokens/pass",
           "speed-up over plain (1 pass)");
    for (int i = 0; i < a->n_batches; i++) {
        const int B = a->batches[i];
        double plain = 0;
        for (int m = 0; m < N_ROW_METHODS; m++) {
            if (!have[m]) continue;
            batch_figure f;
            if (bench_batch_measure(&bb, &specs[m], B, &f, &err)) {
                fprintf(stderr, "specula bench: %s\n", err.msg);
                return EXIT_RUN_FAILED;
            }
            if (m == 0) plain = f.tps_one_pass;
            printf("%4d %-7s | %12.1f %12.1f %6.2fx | %11.2f | %.2fx\n", B, method_name(&specs[m]),
                   f.tps_one_pass, f.tps_each_pass, f.tps_one_pass / f.tps_each_pass, f.per_pass,
                   f.tps_one_pass / plain);
        }
    }
    return 0;
}

/* The draft model of the spec rows: --draft, or MODEL-draft when it exists. 1 opened, 0 none, -1 error. */
static int open_draft(const batch_args *a, const char *dir, const engine_options *o, engine *ed) {
    char beside[4096], config[4200];
    model_beside(dir, "-draft", beside, sizeof beside);
    snprintf(config, sizeof config, "%s/config.json", beside);
    if (!a->draft_dir && access(config, F_OK)) return 0;
    sp_error err;
    if (engine_open(ed, a->draft_dir ? a->draft_dir : beside, o, &err)) {
        fprintf(stderr, "specula bench: the draft model: %s\n", err.msg);
        return -1;
    }
    return 1;
}

/* Two tables, each timed two ways on the same prompts: one verify pass a round over all B sequences' nodes
 * (engine_target.c's batched verify), and B passes of one sequence each. The first times bare rounds: plain
 * greedy decoding, and a chain of k + 1 nodes committed whole, i.e. a spec or MTP round at full acceptance with
 * placeholder drafts and no proposer. The second runs the methods (method_table). Figures are tokens/s summed
 * over the sequences, medians of --runs runs. With --backend cuda it runs on a GPU, or slowly on the kernels'
 * emulator in a build for it. */
int bench_batch(int argc, char **argv) {
    batch_args a;
    const int prc = parse(argc, argv, &a);
    if (prc) return prc == 1 ? 0 : prc;
    const char *dir = a.dir ? a.dir : default_model_dir();
    engine_options o = engine_defaults();
    o.threads = a.threads;
    o.cuda = a.cuda;
    engine e, ed;
    sp_error err;
    if (engine_open(&e, dir, &o, &err)) {
        fprintf(stderr, "specula bench: %s\n", err.msg);
        return EXIT_BAD_INPUT;
    }
    /* a bare round commits at most k + 1 positions a sequence, a method row at most --tokens */
    const long longest = (long)a.rounds * (a.k + 1) > a.tokens ? (long)a.rounds * (a.k + 1) : a.tokens;
    const int have_draft =
        context_check(&e.cfg, "--prompt-tokens", a.prompt_tokens, "--rounds × (k + 1) or --tokens:", longest, "bench")
            ? -1
            : open_draft(&a, dir, &o, &ed);
    if (have_draft < 0) {
        engine_close(&e);
        return EXIT_BAD_INPUT;
    }
    decode_target t, dt;
    engine_target_build(&t, &e);
    if (have_draft) engine_target_build(&dt, &ed);
    if (a.cuda)
        printf("specula bench --batch: the CUDA engine (bf16) on %s, %s; %d rounds a run, median of %d runs\n",
               e.be.device, dir, a.rounds, a.runs);
    else
        printf("specula bench --batch: the CPU engine (bf16, %d thread%s) on %s; %d rounds a run, median of %d runs\n",
               a.threads, a.threads > 1 ? "s" : "", dir, a.rounds, a.runs);
    printf("tokens/s summed over the B sequences; 'one pass': every round one verify pass over all B sequences,\n"
           "'B passes': one pass per sequence. Chain rounds: k + 1 = %d nodes a sequence, committed whole (full\n"
           "acceptance, no proposer).\n\n",
           a.k + 1);
    printf("%4s | %12s %12s %7s | %12s %12s %7s | %s\n", "B", "plain 1 pass", "B passes", "ratio", "chain 1 pass",
           "B passes", "ratio", "tokens/pass (plain, chain)");
    int rc = 0;
    for (int i = 0; i < a.n_batches && !rc; i++) {
        const int B = a.batches[i];
        double plain[2], chain[2];
        if (measure(&t, &a, B, 1, plain, &err) || measure(&t, &a, B, a.k + 1, chain, &err)) {
            fprintf(stderr, "specula bench: %s\n", err.msg);
            rc = EXIT_RUN_FAILED;
            break;
        }
        printf("%4d | %12.1f %12.1f %6.2fx | %12.1f %12.1f %6.2fx | %d, %d\n", B, plain[0], plain[1],
               plain[0] / plain[1], chain[0], chain[1], chain[0] / chain[1], B, B * (a.k + 1));
    }
    if (!rc) rc = method_table(&e, &t, have_draft ? &dt : NULL, &a);
    if (have_draft) dt.release(&dt), engine_close(&ed);
    t.release(&t);
    engine_close(&e);
    return rc;
}
