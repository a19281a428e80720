/* bench_synthetic.c — `specula bench --synthetic DIR`: the engine's passes on random weights of the shapes
 * DIR/config.json gives, made on the device, so that a model whose weights are not here (models/qwen3.8-27b) can
 * be timed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "bench.h"
#include "commands.h"
#include "engine_mtp.h"
#include "engine_target.h"

#define MAX_CONTEXTS 4
#define TREE_NODES 64 /* the largest tree the CUDA backend verifies in one pass */
#define N_CHAINS 4
static const int chain_sizes[N_CHAINS] = {2, 4, 8, 16};
/* The course's MTP-3 case (lessons/06-native-mtp.md): the chance that draft i is accepted once drafts before it
 * were. */
static const double course_acceptance[3] = {0.90, 0.72, 0.48};

typedef struct {
    const char *dir;
    model_flags models;
    int runs;
    int n_contexts, contexts[MAX_CONTEXTS];
    int copy_mib;
    uint64_t seed;
} synth_args;

static void usage(FILE *f) {
    fprintf(f, "usage: specula bench --synthetic DIR [options]\n"
               "Times the engine's passes on random bf16 weights of the shapes DIR/config.json gives, made on the\n"
               "device (nothing is read but the config): the decode step at each context (a synthetic one: cached\n"
               "positions without a prefill), as a CUDA graph and launched op by op, verify passes of chains of 2, 4, "
               "8, 16 nodes and of a 64-node tree\n"
               "(1 + 7 + 28 + 28 by level) at the first context, the MTP module's step, and the device's copy\n"
               "bandwidth in the same run. Prints medians, the decode step's share of the copy bandwidth and\n"
               "MTP-3's predicted speed at the course's acceptance (0.90 / 0.72 / 0.48).\n"
               "  --backend cuda       the CUDA engine (the only one that makes synthetic weights)\n"
               "  --cuda-graphs on|off the passes captured into CUDA graphs (on, default) or launched op by op\n"
               "  --cuda-debug         graphs off, every launch waited for, the first kernel that fails named\n"
               "  --contexts A,B,...   cached positions (default 1024,32768; at most 4)\n"
               "  --runs N             passes per figure, median reported (default 10)\n"
               "  --copy-mib N         size of the copy that measures the bandwidth (default 1024)\n"
               "  --seed N             of the random weights (default 1)\n");
}

static int parse_contexts(const char *v, synth_args *a) {
    a->n_contexts = 0;
    for (const char *p = v; *p;) {
        char *end;
        long n = strtol(p, &end, 10);
        if (end == p || n < 1 || n > 1 << 20 || a->n_contexts == MAX_CONTEXTS || (*end && *end != ',')) {
            fprintf(stderr, "specula bench: --contexts expects up to %d positive counts like 1024,32768, got '%s'\n",
                    MAX_CONTEXTS, v);
            return -1;
        }
        a->contexts[a->n_contexts++] = (int)n;
        p = *end ? end + 1 : end;
    }
    return a->n_contexts ? 0 : -1;
}

static int parse(int argc, char **argv, synth_args *a) {
    memset(a, 0, sizeof *a);
    a->models = model_flags_defaults(BACKEND_CUDA);
    a->runs = 10;
    a->n_contexts = 2, a->contexts[0] = 1024, a->contexts[1] = 32768;
    a->copy_mib = 1024;
    a->seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v;
        int rc = 0;
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(f, "--synthetic")) {
            rc = (a->dir = arg_value(argc, argv, &i)) ? 1 : -1;
        } else if (!strcmp(f, "--runs")) {
            rc = (v = arg_value(argc, argv, &i)) && !arg_int(f, v, 1, 1000, &a->runs) ? 1 : -1;
        } else if (!strcmp(f, "--copy-mib")) {
            rc = (v = arg_value(argc, argv, &i)) && !arg_int(f, v, 1, 1 << 16, &a->copy_mib) ? 1 : -1;
        } else if (!strcmp(f, "--seed")) {
            rc = (v = arg_value(argc, argv, &i)) && !arg_u64(f, v, &a->seed) ? 1 : -1;
        } else if (!strcmp(f, "--contexts")) {
            rc = (v = arg_value(argc, argv, &i)) && !parse_contexts(v, a) ? 1 : -1;
        } else {
            rc = backend_flags_read(&a->models, argc, argv, &i);
        }
        if (rc < 0) return 2;
        if (!rc) {
            fprintf(stderr, "specula bench --synthetic: unexpected argument '%s' (--help for the options)\n", f);
            return 2;
        }
    }
    if (a->models.backend != BACKEND_CUDA) {
        fprintf(stderr, "specula bench --synthetic: synthetic weights are made on the device: --backend cuda\n");
        return 2;
    }
    return model_flags_backend_check(&a->models, "bench");
}

/* The median seconds of `runs` calls of pass(e, s, ctx, arg), each from a sequence at position ctx. */
typedef int (*pass_fn)(engine *e, eseq *s, int ctx, const void *arg, sp_error *err);

static double time_pass(engine *e, eseq *s, int ctx, int runs, pass_fn pass, const void *arg, sp_error *err) {
    double t[1000];
    /* not timed: the first pass sizes the buffers and loads the kernels (launched op by op), the second makes
     * its CUDA graphs (later ones update them) */
    for (int warm = 0; warm < 2; warm++)
        if (pass(e, s, ctx, arg, err)) return NAN;
    for (int r = 0; r < runs; r++) {
        const double t0 = bench_now_s();
        if (pass(e, s, ctx, arg, err)) return NAN;
        t[r] = bench_now_s() - t0;
    }
    return bench_median(t, runs);
}

/* A verify pass over a tree of n nodes (parent, depth), its root consumed at ctx, then the tree dropped: what a
 * round's pass costs when sampling happens where the logits are. The context is synthetic: the sequence's KV
 * blocks are reserved and its position set, so a pass attends to `ctx` cached positions (zeros) without a
 * prefill. */
typedef struct {
    const int *parent, *depth;
    int n;
} pass_tree;

static int tree_pass(engine *e, eseq *s, int ctx, const void *arg, sp_error *err) {
    const pass_tree *t = arg;
    int tokens[TREE_NODES];
    for (int i = 0; i < t->n; i++) tokens[i] = (i * 7919 + 13) % e->cfg.vocab_size;
    s->pos = ctx;
    if (engine_seq_begin_tree(e, s, t->parent, t->depth, t->n, err) ||
        engine_forward_in_place(e, s, tokens, s->parent, s->depth, t->n, 1, err) || e->be.status(&e->be, err))
        return -1; /* status: the pass launched, then waited for */
    s->pos = ctx;  /* the root back out: every run at the same context */
    engine_seq_end_tree(e, s);
    return 0;
}

/* One step of the MTP module from its first position (its own cache empty), on a hidden state of zeros. */
typedef struct {
    stepper *mtp;
    const float *hidden; /* [D] */
} mtp_input;

static int mtp_pass(engine *e, eseq *s, int ctx, const void *arg, sp_error *err) {
    (void)e, (void)s, (void)ctx;
    const mtp_input *in = arg;
    const int token = 1;
    in->mtp->reset(in->mtp);
    return in->mtp->step(in->mtp, &token, in->hidden, 1, NULL, NULL, err);
}

/* time_pass with the passes launched op by op, then the graphs back on. */
static double time_eager(engine *e, eseq *s, int ctx, int runs, const pass_tree *t, sp_error *err) {
    const int mode = backend_cuda_graphs(&e->be, CUDA_GRAPHS_OFF);
    const double eager = time_pass(e, s, ctx, runs, tree_pass, t, err);
    backend_cuda_graphs(&e->be, mode);
    return eager;
}

/* A chain of n nodes, and the 64-node tree: 1 root, 7 children, 4 under each of those, 4 under the first 7 of
 * the third level. */
static void chain(int n, int *parent, int *depth) {
    for (int i = 0; i < n; i++) parent[i] = i - 1, depth[i] = i;
}
static void tree64(int *parent, int *depth) {
    int n = 1;
    parent[0] = -1, depth[0] = 0;
    for (int i = 0; i < 7; i++) parent[n] = 0, depth[n++] = 1;
    for (int i = 1; i <= 7; i++)
        for (int j = 0; j < 4; j++) parent[n] = i, depth[n++] = 2;
    for (int i = 8; i < 15; i++)
        for (int j = 0; j < 4; j++) parent[n] = i, depth[n++] = 3;
}

/* Device-to-device copy bandwidth: bytes read plus written per second, median of runs. */
static double copy_bandwidth(engine *e, int mib, int runs) {
    engine_backend *b = &e->be;
    const size_t bytes = (size_t)mib << 20;
    void *src = b->alloc(b, bytes, "the copy benchmark"), *dst = b->alloc(b, bytes, "the copy benchmark");
    sp_error err;
    double t[1000];
    b->copy(b, dst, src, bytes);
    b->status(b, &err);
    for (int r = 0; r < runs; r++) {
        const double t0 = bench_now_s();
        b->copy(b, dst, src, bytes);
        b->status(b, &err);
        t[r] = bench_now_s() - t0;
    }
    b->free(b, src);
    b->free(b, dst);
    return 2.0 * (double)bytes / bench_median(t, runs);
}

/* Bytes a pass at context ctx must read at least: the weights once, every cached key and value once. */
static double pass_bytes(const engine *e, int ctx) {
    const model_config *c = &e->cfg;
    return e->weight_bytes_per_pass + 2.0 * e->La * c->num_kv_heads * c->head_dim * 2.0 * ctx;
}

/* Each figure is the median of --runs passes: the decode step at each context (as a CUDA graph, as the engine
 * runs it, and op by op), verify passes of chains and of a 64-node tree, and the MTP module's step, beside the
 * device's copy bandwidth measured in the same run. MTP-3's speed at the course's acceptance is labelled as a
 * prediction. */
int bench_synthetic(int argc, char **argv) {
    synth_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc == 1 ? 0 : rc;
    if (!a.dir) {
        fprintf(stderr, "specula bench --synthetic: give the model directory whose config.json to build\n");
        return 2;
    }
    engine e;
    sp_error err;
    engine_options o = engine_defaults();
    o.cuda = 1;
    o.cuda_eager = a.models.cuda_eager;
    o.kv = a.models.kv;
    o.cuda_debug = a.models.cuda_debug;
    fprintf(stderr, "specula bench: making random weights for %s on the device...\n", a.dir);
    const double t_open = bench_now_s();
    if (engine_open_synthetic(&e, a.dir, &o, a.seed, &err)) {
        fprintf(stderr, "specula bench --synthetic: %s\n", err.msg); /* the config, or no device to run it on */
        return EXIT_BAD_INPUT;
    }
    const model_config *c = &e.cfg;
    for (int i = 0; i < a.n_contexts; i++)
        if (a.contexts[i] + TREE_NODES > c->max_position_embeddings) {
            fprintf(stderr,
                    "specula bench --synthetic: --contexts %d: with a %d-node tree after it, past the %d positions "
                    "%s holds\n",
                    a.contexts[i], TREE_NODES, c->max_position_embeddings, a.dir);
            engine_close(&e);
            return 2;
        }
    printf("synthetic %s on %s (cuda engine): %d layers, D %d, vocab %d, %.4g GB of weights read per pass; "
           "%d runs per figure, median\n",
           a.dir, e.be.device, c->num_layers, c->hidden_size, c->vocab_size, e.weight_bytes_per_pass / 1e9, a.runs);
    /* the device's start, every allocation and the random fill: the time a session pays before the first pass */
    printf("engine opened with random weights in %.2f s\n", bench_now_s() - t_open);
    const double copy_bw = copy_bandwidth(&e, a.copy_mib, a.runs);
    printf("device copy bandwidth (read + write, %d MiB): %.4g GB/s\n\n", a.copy_mib, copy_bw / 1e9);
    printf("%-28s %10s %10s %10s %12s\n", "pass", "ms", "vs decode", "GB/s", "of copy BW");
    const int seq = engine_seq_open(&e);
    eseq *s = engine_seq(&e, seq, &err);
    int parent[TREE_NODES], depth[TREE_NODES];
    double decode_1st = NAN, verify4 = NAN, mtp_ms = NAN;
    for (int ci = 0; ci < a.n_contexts && s; ci++) {
        const int ctx = a.contexts[ci];
        kv_table_reserve(&e.kv, &s->kv, 0, ctx + TREE_NODES); /* the synthetic context's blocks */
        chain(1, parent, depth);
        pass_tree one = {parent, depth, 1};
        const double decode = time_pass(&e, s, ctx, a.runs, tree_pass, &one, &err);
        if (ci == 0) decode_1st = decode;
        char label[64];
        snprintf(label, sizeof label, "decode step, ctx %d", ctx);
        printf("%-28s %10.3f %10s %10.4g %11.1f%%\n", label, decode * 1e3, "1.00x", pass_bytes(&e, ctx) / decode / 1e9,
               100.0 * pass_bytes(&e, ctx) / decode / copy_bw);
        /* the same step launched op by op: what capturing it into a CUDA graph gains or costs */
        const double eager = a.models.cuda_eager ? NAN : time_eager(&e, s, ctx, a.runs, &one, &err);
        if (!a.models.cuda_eager)
            printf("%-28s %10.3f %9.2fx %10.4g %11.1f%%\n", "  the same, no CUDA graph", eager * 1e3, eager / decode,
                   pass_bytes(&e, ctx) / eager / 1e9, 100.0 * pass_bytes(&e, ctx) / eager / copy_bw);
        if (ci > 0) continue;
        for (int k = 0; k < N_CHAINS; k++) { /* verify passes at the first context */
            chain(chain_sizes[k], parent, depth);
            pass_tree t = {parent, depth, chain_sizes[k]};
            const double v = time_pass(&e, s, ctx, a.runs, tree_pass, &t, &err);
            if (chain_sizes[k] == 4) verify4 = v;
            snprintf(label, sizeof label, "verify chain m = %d", chain_sizes[k]);
            printf("%-28s %10.3f %9.2fx %10.4g %11.1f%%\n", label, v * 1e3, v / decode, pass_bytes(&e, ctx) / v / 1e9,
                   100.0 * pass_bytes(&e, ctx) / v / copy_bw);
        }
        tree64(parent, depth);
        pass_tree t = {parent, depth, 64};
        const double v = time_pass(&e, s, ctx, a.runs, tree_pass, &t, &err);
        printf("%-28s %10.3f %9.2fx %10.4g %11.1f%%\n", "verify tree, 64 nodes", v * 1e3, v / decode,
               pass_bytes(&e, ctx) / v / 1e9, 100.0 * pass_bytes(&e, ctx) / v / copy_bw);
        stepper mtp;
        if (e.w.ck.with_mtp && engine_mtp_stepper_build(&mtp, &e, &err) == 0) {
            float *hidden = sp_xcalloc((size_t)c->hidden_size, sizeof(float), "MTP input");
            const mtp_input in = {&mtp, hidden};
            mtp_ms = time_pass(&e, s, ctx, a.runs, mtp_pass, &in, &err);
            free(hidden);
            printf("%-28s %10.3f %9.2fx %10s %12s\n", "MTP step (its own ctx 1)", mtp_ms * 1e3, mtp_ms / decode, "-",
                   "-");
            mtp.release(&mtp);
        }
    }
    int status = 0;
    if (!s || !isfinite(decode_1st)) {
        fprintf(stderr, "specula bench --synthetic: %s\n", err.msg);
        status = 1;
    } else {
        printf("\nplain decoding at ctx %d: %.1f tokens/s (measured)\n", a.contexts[0], 1.0 / decode_1st);
        if (isfinite(verify4) && isfinite(mtp_ms)) {
            /* a round: one pass over the last token and 3 drafts, then 3 MTP steps for the next drafts */
            double e_tokens = 1, run = 1;
            for (int i = 0; i < 3; i++) run *= course_acceptance[i], e_tokens += run;
            const double round = verify4 + 3 * mtp_ms;
            printf("MTP-3 at acceptance 0.90/0.72/0.48: %.2f tokens per round, %.1f tokens/s = %.2fx plain "
                   "(predicted from the passes above, not measured)\n",
                   e_tokens, e_tokens / round, e_tokens / round * decode_1st);
        }
        /* what the graphs did: an update refused every pass would show as instantiations close to the launches */
        const cuda_graph_stats g = backend_cuda_graph_stats(&e.be);
        if (g.passes)
            printf("CUDA graphs: %ld passes captured in %ld segments; %ld graphs instantiated, %ld updated\n", g.passes,
                   g.segments, g.instantiated, g.updated);
    }
    engine_seq_close(&e, seq);
    engine_close(&e);
    return status;
}
