/* test_backend_conformance.c — every op of optimized/backend.h on the CUDA backend (here on the kernels' emulator)
 * against the CPU backend, on the same weights and the same random inputs, printed as one table: op, shape, the
 * normalised error max|y − y_cpu| / max|y_cpu| (acceptance: the share of rounds whose results differ) and its
 * bound, each op with a negative control, a bug planted on the CUDA side that its comparison must see. The ops of a
 * pass (attention, deltanet) run inside hand-made passes over a sequence of each engine (begin_pass, a KV table,
 * DeltaNet slots as engine_forward.c lays them out); accept runs after a pass over its tree, against what the CPU
 * engine runs instead (its probs, then accept_exact on the host). Whole passes: test_engine_cuda.c. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "accept.h"
#include "harness.h"
#include "philox.h"
#include "unit/engine_compare.h"

/* Why the bounds. Products: both backends widen the same bf16 weights exactly and keep float32 activations, so
 * they differ only in the order of the additions, about √k·2⁻²⁴ of a row (≲ 1e-6 here); 1e-4 leaves margin, yet a
 * dropped or doubled term (≈ 1/√k ≥ 3 % of a row) fails. RMSNorm: one sum of squares in another order, the same
 * argument. SwiGLU: each backend's expf, a few ulps (1e-6 relative). The distributions: sums in double on both,
 * but thresholds (top-p) met on float values: 1e-5 of the largest probability. Embedding rows and adds are exact
 * on both: bound 0. */
#define BOUND_PRODUCT 1e-4
#define BOUND_NORM 1e-4
#define BOUND_SWIGLU 1e-5
#define BOUND_PROBS 1e-5
/* Attention: the CUDA backend keeps the KV cache in bf16 (backend.h, kv_bf16), the CPU's in float32: each key and
 * value is rounded by up to 2⁻⁹ ≈ 2e-3 of itself, which moves an output (a weighted mean of values, smaller than
 * the largest value) by up to about that much of the largest value, and each score by up to 2⁻⁹ of Σ|q_i·k_i|/√Dh.
 * Measured on the emulator: 1.7e-3 to 4.3e-3. 1e-2, the bound the whole passes keep for the same reason
 * (test_engine_cuda.c, TOL_CUDA), is 2.3× above the worst row and 6.9× below the control's 6.9e-2 (a node that
 * lost two of its ancestors). DeltaNet: float32 states on both, so only the order of the sums (the convolution's
 * taps, the key and query norms, kᵀS over Dk) and expf's ulps differ, as for the products (measured ≤ 3e-7);
 * a state not carried (the control) is off by O(1). Acceptance: the draws are the same Philox draws at the same
 * sites and the distributions agree to 1e-5 (BOUND_PROBS), so a decision flips only when a uniform falls within
 * 1e-5 of a threshold: the results must be identical (bound 0 rounds differing); a draw at the wrong site (the
 * control) changes most rounds. */
#define BOUND_ATTENTION 1e-2
/* Attention over a q8 or q4 cache on both backends: the same encoder writes both caches (rows byte for byte
 * kv_row_store's, kernels/check/check_kv_quant.cu), from keys and values that differ by float rounding alone, so
 * the caches hold the same codes but where a rounding straddles a code's boundary; the outputs then differ by the
 * order of the sums, as the products do (measured on the emulator: ≤ 4.1e-7 for q8, ≤ 2.7e-7 for q4). 1e-4, the
 * products' bound, holds that with margin and sits far below both the bf16 cache's gap above and the controls'
 * (a node that lost two ancestors: 0.22 and 0.25). */
#define BOUND_ATTENTION_QUANT 1e-4
#define BOUND_DELTANET 1e-4
#define BOUND_ACCEPT 0.0
#define MAX_ROWS 64

typedef struct {
    char op[16], shape[48];
    double err, bound;
    int control; /* a planted bug: its error must be above the bound */
} row;

typedef struct {
    engine cpu, cuda;
    row rows[MAX_ROWS];
    int n_rows;
    uint64_t draws;
} bench;

/* Both engines on dir; kv: the KV cache of both (KV_DEFAULT: each backend's own, float32 and bf16). */
static void engines_open(bench *t, const char *dir, kv_format kv) {
    sp_error err;
    engine_options o = engine_defaults();
    o.kv = kv;
    ck_assert_msg(engine_open(&t->cpu, dir, &o, &err) == 0, "%s", err.msg);
    o.cuda = 1;
    ck_assert_msg(engine_open(&t->cuda, dir, &o, &err) == 0, "%s", err.msg);
}

static void bench_open(bench *t, const char *dir) {
    engines_open(t, dir, KV_DEFAULT);
    t->n_rows = 0;
    t->draws = 0;
}

static void bench_close(bench *t) {
    engine_close(&t->cuda);
    engine_close(&t->cpu);
}

/* n uniforms in [lo, hi), fresh for every call. */
static float *random_floats(bench *t, size_t n, float lo, float hi) {
    float *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) h[i] = lo + (hi - lo) * philox_uniform(91, 7, t->draws++, 0);
    return h;
}

static float *to_backend(engine_backend *b, const float *h, size_t n) {
    float *d = b->alloc(b, n * sizeof *d, "a conformance input");
    b->upload(b, d, h, n * sizeof *d);
    return d;
}

static float *from_backend(engine_backend *b, const float *d, size_t n) {
    float *h = malloc(n * sizeof *h);
    b->download(b, h, d, n * sizeof *h);
    sp_error err;
    ck_assert_msg(b->status(b, &err) == 0, "%s", err.msg);
    return h;
}

/* max|a − b| / max|b| over n, infinite when a holds a NaN or b is all zero while a is not. */
static double normalised_error(const float *a, const float *b, size_t n) {
    double diff = 0.0, scale = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(b[i])) return INFINITY;
        diff = fmax(diff, fabs((double)a[i] - b[i]));
        scale = fmax(scale, fabs((double)b[i]));
    }
    return scale > 0.0 ? diff / scale : diff > 0.0 ? INFINITY : 0.0;
}

static void add_row(bench *t, const char *op, const char *shape, double err, double bound) {
    ck_assert_int_lt(t->n_rows, MAX_ROWS);
    row *r = &t->rows[t->n_rows++];
    snprintf(r->op, sizeof r->op, "%s", op);
    snprintf(r->shape, sizeof r->shape, "%s", shape);
    r->err = err, r->bound = bound, r->control = 0;
}

/* The negative control of an op's rows: the same comparison with a bug planted on the CUDA side. */
static void add_control(bench *t, const char *shape, double err, double bound) {
    add_row(t, "control", shape, err, bound);
    t->rows[t->n_rows - 1].control = 1;
}

/* One op on both backends: run(b, out, in) with its inputs uploaded to each, out of n_out floats compared. */
typedef void (*op_fn)(engine *e, float *out, float *const *in, const void *arg);
static double compare(bench *t, op_fn run, const void *arg, float *const *in_host, const size_t *in_n, int n_in,
                      size_t n_out) {
    float *got[2];
    engine *es[2] = {&t->cpu, &t->cuda};
    for (int s = 0; s < 2; s++) {
        engine_backend *b = &es[s]->be;
        float *in[4], *out = b->alloc(b, n_out * sizeof *out, "a conformance output");
        for (int i = 0; i < n_in; i++) in[i] = to_backend(b, in_host[i], in_n[i]);
        run(es[s], out, in, arg);
        got[s] = from_backend(b, out, n_out);
        for (int i = 0; i < n_in; i++) b->free(b, in[i]);
        b->free(b, out);
    }
    const double err = normalised_error(got[1], got[0], n_out);
    free(got[0]), free(got[1]);
    return err;
}

/* ---- the ops -------------------------------------------------------------------------------------------------- */

typedef struct {
    int layer;
    tensor_role role;
    int m, n, k;
} matmul_arg;

static const eweight *placed(engine *e, int layer, tensor_role role) {
    return &e->bw[engine_weight_index(&e->w, layer, role)];
}

static void run_matmul(engine *e, float *out, float *const *in, const void *arg) {
    const matmul_arg *a = arg;
    e->be.matmul(&e->be, out, placed(e, a->layer, a->role), in[0], a->m, a->n, a->k);
}

/* The MLP's gate and up projections as one group, their outputs back to back in out. */
static void run_matmul_group(engine *e, float *out, float *const *in, const void *arg) {
    const matmul_arg *a = arg;
    const int F = e->cfg.intermediate_size;
    const ematmul_part parts[2] = {{out, placed(e, a->layer, ROLE_GATE_PROJ), F},
                                   {out + (size_t)a->m * F, placed(e, a->layer, ROLE_UP_PROJ), F}};
    e->be.matmul_group(&e->be, parts, 2, in[0], a->m, a->k);
}

static void run_embed(engine *e, float *out, float *const *in, const void *arg) {
    (void)in;
    const int *tokens = arg;
    e->be.embed(&e->be, out, placed(e, -1, ROLE_EMBED), tokens + 1, tokens[0], e->cfg.hidden_size);
}

static void run_rmsnorm(engine *e, float *out, float *const *in, const void *arg) {
    const int rows = *(const int *)arg, D = e->cfg.hidden_size;
    e->be.rmsnorm(&e->be, out, in[0], (const float *)placed(e, 0, ROLE_INPUT_NORM)->data, rows, D, e->cfg.rms_norm_eps);
}

static void run_add(engine *e, float *out, float *const *in, const void *arg) {
    const size_t n = *(const size_t *)arg;
    e->be.copy(&e->be, out, in[0], n * sizeof *out);
    e->be.add(&e->be, out, in[1], n);
}

static void run_swiglu(engine *e, float *out, float *const *in, const void *arg) {
    const size_t n = *(const size_t *)arg;
    e->be.copy(&e->be, out, in[0], n * sizeof *out);
    e->be.swiglu(&e->be, out, in[1], n);
}

typedef struct {
    int m;
    sampler_params sp;
    float *host_out; /* probs writes host memory */
} probs_arg;

static void run_probs(engine *e, float *out, float *const *in, const void *arg) {
    const probs_arg *a = arg;
    const int V = e->cfg.vocab_size;
    e->be.probs(&e->be, a->host_out, in[0], a->m, V, &a->sp);
    e->be.upload(&e->be, out, a->host_out, (size_t)a->m * V * sizeof *out); /* back where compare reads it */
}

/* ---- the table ------------------------------------------------------------------------------------------------ */

static int attention_layer(const engine *e) {
    for (int l = 0; l < e->cfg.num_layers; l++)
        if (e->bw[engine_weight_index(&e->w, l, ROLE_Q_PROJ)].data) return l;
    return -1;
}

static void matmul_rows(bench *t) {
    const model_config *c = &t->cpu.cfg;
    const int D = c->hidden_size, F = c->intermediate_size, la = attention_layer(&t->cpu);
    ck_assert_int_ge(la, 0);
    const matmul_arg shapes[] = {
        {-1, ROLE_LM_HEAD, 1, c->vocab_size, D},
        {-1, ROLE_LM_HEAD, 4, c->vocab_size, D},
        {-1, ROLE_LM_HEAD, 16, c->vocab_size, D},
        {la, ROLE_Q_PROJ, 1, 2 * c->num_heads * c->head_dim, D},
        {la, ROLE_Q_PROJ, 5, 2 * c->num_heads * c->head_dim, D},
        {0, ROLE_DOWN_PROJ, 3, D, F},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const matmul_arg *a = &shapes[i];
        float *x = random_floats(t, (size_t)a->m * a->k, -1.0f, 1.0f);
        const size_t n_x = (size_t)a->m * a->k;
        char shape[48];
        snprintf(shape, sizeof shape, "%s m=%d [%d,%d]",
                 a->role == ROLE_LM_HEAD  ? "lm_head"
                 : a->role == ROLE_Q_PROJ ? "q_proj"
                                          : "down_proj",
                 a->m, a->n, a->k);
        add_row(t, "matmul", shape, compare(t, run_matmul, a, &x, &n_x, 1, (size_t)a->m * a->n), BOUND_PRODUCT);
        if (i == 0) { /* the control: one term dropped on the CUDA side (an input zeroed) must show */
            float *moved = malloc(n_x * sizeof *moved);
            memcpy(moved, x, n_x * sizeof *moved);
            moved[a->k / 2] = 0.0f;
            float *ys[2];
            engine *es[2] = {&t->cpu, &t->cuda};
            float *xs[2] = {x, moved};
            for (int s = 0; s < 2; s++) {
                engine_backend *b = &es[s]->be;
                float *dx = to_backend(b, xs[s], n_x), *dy = b->alloc(b, (size_t)a->n * sizeof *dy, "control");
                run_matmul(es[s], dy, &dx, a);
                ys[s] = from_backend(b, dy, (size_t)a->n);
                b->free(b, dx), b->free(b, dy);
            }
            add_control(t, "matmul with one term dropped", normalised_error(ys[1], ys[0], (size_t)a->n), BOUND_PRODUCT);
            free(ys[0]), free(ys[1]), free(moved);
        }
        free(x);
    }
    for (int m = 1; m <= 4; m += 3) {
        const matmul_arg a = {0, ROLE_GATE_PROJ, m, 2 * F, D};
        float *x = random_floats(t, (size_t)m * D, -1.0f, 1.0f);
        const size_t n_x = (size_t)m * D;
        char shape[48];
        snprintf(shape, sizeof shape, "gate+up m=%d [2x%d,%d]", m, F, D);
        add_row(t, "matmul_group", shape, compare(t, run_matmul_group, &a, &x, &n_x, 1, (size_t)m * 2 * F),
                BOUND_PRODUCT);
        free(x);
    }
}

static void elementwise_rows(bench *t) {
    const model_config *c = &t->cpu.cfg;
    const int D = c->hidden_size, V = c->vocab_size;
    const int tokens[] = {4, 0, V - 1, 7, 7};
    add_row(t, "embed", "4 tokens (0, V-1, twice 7)", compare(t, run_embed, tokens, NULL, NULL, 0, 4 * (size_t)D), 0.0);
    const int rows = 3;
    float *x = random_floats(t, (size_t)rows * D, -3.0f, 3.0f);
    const size_t n_x = (size_t)rows * D;
    char shape[48];
    snprintf(shape, sizeof shape, "%d rows x %d", rows, D);
    add_row(t, "rmsnorm", shape, compare(t, run_rmsnorm, &rows, &x, &n_x, 1, n_x), BOUND_NORM);
    free(x);
    const size_t n = 1003; /* not a multiple of any vector width */
    float *in[2] = {random_floats(t, n, -4.0f, 4.0f), random_floats(t, n, -4.0f, 4.0f)};
    const size_t ns[2] = {n, n};
    add_row(t, "add", "1003", compare(t, run_add, &n, in, ns, 2, n), 0.0);
    add_row(t, "swiglu", "1003", compare(t, run_swiglu, &n, in, ns, 2, n), BOUND_SWIGLU);
    free(in[0]), free(in[1]);
}

static void probs_rows(bench *t) {
    const int V = t->cpu.cfg.vocab_size, m = 3;
    const sampler_params params[] = {{1.0f, 0, 1.0f, 0.0f}, {0.7f, 5, 1.0f, 0.0f}, {0.8f, 0, 0.9f, 0.05f}};
    const char *names[] = {"T=1", "T=0.7 top-k 5", "T=0.8 top-p 0.9 min-p 0.05"};
    for (int i = 0; i < 3; i++) {
        probs_arg a = {m, params[i], malloc((size_t)m * V * sizeof(float))};
        float *logits = random_floats(t, (size_t)m * V, -6.0f, 6.0f);
        const size_t n_l = (size_t)m * V;
        char shape[48];
        snprintf(shape, sizeof shape, "%d rows x V=%d, %s", m, V, names[i]);
        add_row(t, "probs", shape, compare(t, run_probs, &a, &logits, &n_l, 1, n_l), BOUND_PROBS);
        free(logits), free(a.host_out);
    }
}

/* ---- the ops of a pass: attention, DeltaNet, acceptance ------------------------------------------------------- */

/* One op of a pass on sequence `seq` (the same index on both engines: they open sequences in the same order), its
 * m nodes after the sequence's committed positions, as engine_forward_parts lays them out (engine.h, epart): the
 * first n_in_place a chain into the sequence's own DeltaNet slot, the rest a tree with a slot (or, on a backend
 * that replays, a log entry) each. commit: a chain whose positions the sequence keeps (pos += m); else the pass
 * is a verify pass the sequence forgets (its tree given back, its DeltaNet state restored). plant: the negative
 * control's bug, on the CUDA side only. */
typedef struct {
    int seq, m, n_in_place, commit, plant;
    const int *parent, *depth; /* [m] */
    int state_out;             /* DeltaNet: out is the sequence's recurrent state after the op, not the op's output */
} pass_arg;

#define MAX_NODES 96
enum { PLANT_NONE, PLANT_PARENT, PLANT_FRESH_STATE };

typedef struct {
    epass_seq seq;
    int seq_of[MAX_NODES], state_slot[MAX_NODES];
    epass p;
    int saved; /* a verify pass: the slot holding the sequence's DeltaNet state from before it */
} pass_frame;

/* Node i's DeltaNet slot and the one it starts from, as engine_forward.c's node_slot and parent_slot choose them
 * for one sequence: −1 for a node a replaying backend logs instead. */
static int node_slot(const engine *e, const eseq *s, const pass_arg *a, int i) {
    if (i < a->n_in_place) return s->slot;
    return e->be.deltanet_replay ? -1 : s->node_slot[i];
}
static int from_slot(const engine *e, const eseq *s, const pass_arg *a, const int *parent, int i) {
    return i < a->n_in_place || parent[i] < a->n_in_place ? s->slot : node_slot(e, s, a, parent[i]);
}

static void pass_begin(engine *e, const pass_arg *a, const int *parent, pass_frame *f) {
    ck_assert_int_le(a->m, MAX_NODES);
    eseq *s = &e->seqs[a->seq];
    sp_error err;
    f->saved = -1;
    if (!a->commit) {
        ck_assert_msg(engine_seq_begin_tree(e, s, parent, a->depth, a->m, &err) == 0, "%s", err.msg);
        f->saved = engine_slot_take(e);
        engine_slot_copy(e, f->saved, s->slot);
    }
    kv_table_reserve(&e->kv, &s->kv, s->pos, s->pos + a->m);
    f->seq = (epass_seq){&s->kv, s->pos, 0, a->m};
    for (int i = 0; i < a->m; i++) f->seq_of[i] = 0, f->state_slot[i] = node_slot(e, s, a, i);
    f->p = (epass){&e->kv, &f->seq, f->seq_of, parent, a->depth, a->m, 1, f->state_slot};
    e->be.begin_pass(&e->be, &f->p);
}

static void pass_end(engine *e, const pass_arg *a, pass_frame *f) {
    eseq *s = &e->seqs[a->seq];
    if (a->commit) {
        s->pos += a->m;
        return;
    }
    engine_slot_copy(e, s->slot, f->saved);
    engine_slot_release(e, f->saved);
    engine_seq_end_tree(e, s);
}

/* The parents a pass runs with: the tree's, or under PLANT_PARENT on the CUDA side its last node hung from the
 * root, so that it no longer sees its other ancestors (a tree mask one edge wrong). */
static void pass_parents(const engine *e, const pass_arg *a, int *parent) {
    memcpy(parent, a->parent, (size_t)a->m * sizeof *parent);
    if (a->plant == PLANT_PARENT && e->opt.cuda) parent[a->m - 1] = 0;
}

static int layer_of_type(const engine *e, layer_type type) {
    for (int l = 0; l < e->cfg.num_layers; l++)
        if (e->cfg.layer_types[l] == type) return l;
    return -1;
}

/* in: qg [m, H·2·Dh], k and v [m, Hkv·Dh]; out [m, H·Dh]. The first attention layer (its cache layer 0). */
static void run_attention(engine *e, float *out, float *const *in, const void *arg) {
    const pass_arg *a = arg;
    const int layer = layer_of_type(e, LAYER_FULL_ATTENTION);
    int parent[MAX_NODES];
    pass_parents(e, a, parent);
    pass_frame f;
    pass_begin(e, a, parent, &f);
    const attention_args args = {in[0],
                                 in[1],
                                 in[2],
                                 (const float *)placed(e, layer, ROLE_Q_NORM)->data,
                                 (const float *)placed(e, layer, ROLE_K_NORM)->data,
                                 out};
    e->be.attention(&e->be, &f.p, 0, &args);
    pass_end(e, a, &f);
}

/* in: qkv [m, C], z [m, Hv·Dv], a and b [m, Hv]; out [m, Hv·Dv], or with state_out the sequence's recurrent state
 * [Hv, Dk, Dv] after the op. The first DeltaNet layer (li 0). Under PLANT_FRESH_STATE the CUDA side's first node
 * starts from a zeroed state instead of the sequence's (a state not carried). */
static void run_deltanet(engine *e, float *out, float *const *in, const void *arg) {
    const pass_arg *a = arg;
    const model_config *c = &e->cfg;
    const int layer = layer_of_type(e, LAYER_LINEAR_ATTENTION), m = a->m, C = config_conv_dim(c);
    const size_t n_state = (size_t)c->lin_v_heads * c->lin_k_dim * c->lin_v_dim;
    eseq *s = &e->seqs[a->seq];
    pass_frame f;
    pass_begin(e, a, a->parent, &f);
    int fresh = -1;
    if (a->plant == PLANT_FRESH_STATE && e->opt.cuda) {
        fresh = engine_slot_take(e);
        engine_slot_zero(e, fresh);
    }
    float *conv_state[MAX_NODES], *rec_state[MAX_NODES], *log[MAX_NODES];
    const float *conv_from[MAX_NODES], *rec_from[MAX_NODES];
    for (int i = 0; i < m; i++) {
        const int own = node_slot(e, s, a, i), from = i == 0 && fresh >= 0 ? fresh : from_slot(e, s, a, a->parent, i);
        conv_state[i] = own < 0 ? NULL : engine_slot_conv(e, own, 0);
        rec_state[i] = own < 0 ? NULL : engine_slot_recurrent(e, own, 0);
        conv_from[i] = from < 0 ? NULL : engine_slot_conv(e, from, 0);
        rec_from[i] = from < 0 ? NULL : engine_slot_recurrent(e, from, 0);
        log[i] = own < 0 ? engine_seq_log(e, s, i, 0) : NULL;
    }
    float *mixed = e->be.alloc(&e->be, (size_t)m * C * sizeof(float), "conformance conv output");
    float *y = a->state_out ? e->be.alloc(&e->be, (size_t)m * c->lin_v_heads * c->lin_v_dim * sizeof(float), "y") : out;
    const deltanet_args args = {in[0],
                                in[1],
                                in[2],
                                in[3],
                                (const float *)placed(e, layer, ROLE_CONV1D)->data,
                                (const float *)placed(e, layer, ROLE_A_LOG)->data,
                                (const float *)placed(e, layer, ROLE_DT_BIAS)->data,
                                (const float *)placed(e, layer, ROLE_LIN_NORM)->data,
                                mixed,
                                y,
                                conv_state,
                                rec_state,
                                conv_from,
                                rec_from,
                                log,
                                engine_slot_conv(e, 0, 0),
                                engine_slot_recurrent(e, 0, 0),
                                e->slot_floats};
    e->be.deltanet(&e->be, &f.p, &args);
    if (a->state_out) e->be.copy(&e->be, out, engine_slot_recurrent(e, s->slot, 0), n_state * sizeof(float));
    if (y != out) e->be.free(&e->be, y);
    e->be.free(&e->be, mixed);
    if (fresh >= 0) engine_slot_release(e, fresh);
    pass_end(e, a, &f);
}

/* One row of a pass op: fresh inputs in [−1, 1), the same on both engines; a planted op is the control's row. */
static void pass_row(bench *t, const char *op, const char *shape, op_fn run, const pass_arg *a, const size_t *in_n,
                     int n_in, size_t n_out, double bound) {
    float *in[4];
    for (int i = 0; i < n_in; i++) in[i] = random_floats(t, in_n[i], -1.0f, 1.0f);
    const double err = compare(t, run, a, in, in_n, n_in, n_out);
    if (a->plant)
        add_control(t, shape, err, bound);
    else
        add_row(t, op, shape, err, bound);
    for (int i = 0; i < n_in; i++) free(in[i]);
}

static int open_both(bench *t) {
    const int seq = engine_seq_open(&t->cpu);
    ck_assert_int_eq(engine_seq_open(&t->cuda), seq);
    return seq;
}

static int chain_parent[MAX_NODES], chain_depth[MAX_NODES];
/* A tree of 8: two children under the root, branches of depth 3. */
static const int tree_parent[8] = {-1, 0, 0, 1, 1, 2, 3, 5}, tree_depth[8] = {0, 1, 1, 2, 2, 2, 3, 3};

/* Context lengths 0 → 12 → 13 (decode) → 69 (past 64: attention's split kernels and their combine) → 70, with
 * verify chains and trees between that the sequence forgets. */
static void attention_rows(bench *t, const char *op, double bound) {
    const model_config *c = &t->cpu.cfg;
    const int H = c->num_heads, Hkv = c->num_kv_heads, Dh = c->head_dim, seq = open_both(t);
    const struct {
        int m, tree, commit, plant;
        const char *what;
    } steps[] = {
        {12, 0, 1, 0, "prefill m=12, context 0"},     {1, 0, 1, 0, "decode, context 12"},
        {4, 0, 0, 0, "verify chain m=4, context 13"}, {8, 1, 0, 0, "tree of 8, context 13"},
        {56, 0, 1, 0, "prefill m=56, context 13"},    {1, 0, 1, 0, "decode, context 69"},
        {8, 1, 0, 0, "tree of 8, context 70"},        {4, 0, 0, PLANT_PARENT, "chain m=4, last node off its path"}};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        const int m = steps[i].m;
        const pass_arg a = {seq,
                            m,
                            steps[i].commit ? m : 1,
                            steps[i].commit,
                            steps[i].plant,
                            steps[i].tree ? tree_parent : chain_parent,
                            steps[i].tree ? tree_depth : chain_depth,
                            0};
        const size_t in_n[3] = {(size_t)m * H * 2 * Dh, (size_t)m * Hkv * Dh, (size_t)m * Hkv * Dh};
        pass_row(t, op, steps[i].what, run_attention, &a, in_n, 3, (size_t)m * H * Dh, bound);
    }
}

/* A committed chain from the zero state, decode steps (the output, then the state they leave), a verify chain and
 * a tree whose nodes start from their parents' states. */
static void deltanet_rows(bench *t) {
    const model_config *c = &t->cpu.cfg;
    const int C = config_conv_dim(c), Hv = c->lin_v_heads, Dv = c->lin_v_dim, seq = open_both(t);
    const struct {
        int m, tree, commit, plant, state_out;
        const char *what;
    } steps[] = {{6, 0, 1, 0, 0, "chain m=6, from the zero state"},
                 {1, 0, 1, 0, 0, "decode, after 6"},
                 {1, 0, 1, 0, 1, "decode, after 7: its state"},
                 {4, 0, 0, 0, 0, "verify chain m=4, after 8"},
                 {8, 1, 0, 0, 0, "tree of 8, after 8"},
                 {4, 0, 0, PLANT_FRESH_STATE, 0, "chain m=4 from a zeroed state"}};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        const int m = steps[i].m;
        const pass_arg a = {seq,
                            m,
                            steps[i].commit ? m : 1,
                            steps[i].commit,
                            steps[i].plant,
                            steps[i].tree ? tree_parent : chain_parent,
                            steps[i].tree ? tree_depth : chain_depth,
                            steps[i].state_out};
        const size_t in_n[4] = {(size_t)m * C, (size_t)m * Hv * Dv, (size_t)m * Hv, (size_t)m * Hv};
        const size_t n_out = a.state_out ? (size_t)Hv * c->lin_k_dim * Dv : (size_t)m * Hv * Dv;
        pass_row(t, "deltanet", steps[i].what, run_deltanet, &a, in_n, 4, n_out, BOUND_DELTANET);
    }
}

/* A token from distribution q[V] by the uniform u. */
static int draw_from(const float *q, int V, float u) {
    double acc = 0.0;
    for (int v = 0; v < V; v++)
        if (u < (acc += q[v])) return v;
    return V - 1;
}

/* A tree of the shape's parents, its q rows softmaxes of random logits, each draft drawn from its parent's row (a
 * sibling of a tree without replacement redrawn until new). */
static void random_tree(bench *t, token_tree *tree, const int *parent, int n, children_kind kind) {
    const int V = tree->V;
    tree_reset(tree, (int)(philox_uniform(91, 8, t->draws++, 0) * V), kind);
    for (int i = 1; i < n; i++) ck_assert_int_eq(tree_add(tree, parent[i], 0), i);
    for (int i = 0; i < n; i++) {
        float *q = tree_q(tree, i), *l = random_floats(t, (size_t)V, -3.0f, 3.0f);
        double sum = 0.0;
        for (int v = 0; v < V; v++) sum += q[v] = expf(l[v]);
        for (int v = 0; v < V; v++) q[v] = (float)(q[v] / sum);
        free(l);
    }
    for (int i = 1; i < n; i++) {
        int fresh = 0;
        while (!fresh) {
            tree->token[i] = draw_from(tree_q(tree, parent[i]), V, philox_uniform(91, 9, t->draws++, 0));
            fresh = 1;
            for (int j = 1; j < i && kind == CHILDREN_NO_REPLACEMENT; j++)
                fresh &= parent[j] != parent[i] || tree->token[j] != tree->token[i];
        }
    }
}

/* The CPU's acceptance as the engine runs it (no accept op: the CPU backend's probs, then accept_exact on the
 * host) as the CUDA backend's result array: {accepted, next token, bonus, the path's nodes below the root}. */
static void accept_cpu(bench *t, int *result, const token_tree *tree, const float *logits, const sampler_params *sp,
                       accept_site site) {
    engine_backend *b = &t->cpu.be;
    const int n = tree->n, V = tree->V;
    float *d = to_backend(b, logits, (size_t)n * V), *p = malloc((size_t)n * V * sizeof *p);
    float *scratch = malloc((size_t)2 * V * sizeof *scratch);
    b->probs(b, p, d, n, V, sp);
    accept_result r;
    sp_error err;
    ck_assert_msg(accept_exact(tree, p, site, scratch, &r, &err) == 0, "%s", err.msg);
    result[0] = r.n_accepted, result[1] = r.next_token, result[2] = r.bonus;
    for (int i = 1; i <= r.n_accepted; i++) result[2 + i] = r.path[i];
    b->free(b, d), free(p), free(scratch);
}

/* The CUDA backend's accept op after a pass over the tree (its parents are the pass's: begin_pass). */
static void accept_cuda(bench *t, int *result, int seq, const token_tree *tree, const float *logits,
                        const sampler_params *sp, accept_site site) {
    engine *e = &t->cuda;
    engine_backend *b = &e->be;
    const int n = tree->n, V = tree->V;
    const pass_arg a = {seq, n, 1, 0, 0, tree->parent, tree->depth, 0};
    pass_frame f;
    pass_begin(e, &a, tree->parent, &f);
    float *dl = to_backend(b, logits, (size_t)n * V), *dq = to_backend(b, tree->q, (size_t)n * V);
    int *dt = b->alloc(b, (size_t)n * sizeof *dt, "conformance tokens");
    b->upload(b, dt, tree->token, (size_t)n * sizeof *dt);
    b->accept(b, result, dl, dq, dt, n, V, tree->kind == CHILDREN_NO_REPLACEMENT, sp, site.seed, site.round,
              site.base_position);
    sp_error err;
    ck_assert_msg(b->status(b, &err) == 0, "%s", err.msg);
    b->free(b, dl), b->free(b, dq), b->free(b, dt);
    pass_end(e, &a, &f);
}

/* The result arrays of ACCEPT_ROUNDS rounds on each shape, the same trees, logits and rng sites on both sides:
 * the share of rounds whose results differ. The control draws at the wrong rng site on the CUDA side (seed + 1). */
#define ACCEPT_ROUNDS 24
static void accept_rows(bench *t) {
    const int V = t->cpu.cfg.vocab_size, seq = open_both(t);
    const int chain[4] = {-1, 0, 1, 2}, wide[4] = {-1, 0, 0, 0};
    const struct {
        const int *parent;
        int n;
        children_kind kind;
        sampler_params sp;
        int plant;
        const char *what;
    } shapes[] = {{chain, 4, CHILDREN_IID, {1.0f, 0, 1.0f, 0.0f}, 0, "chain k=3, T=1"},
                  {chain, 4, CHILDREN_IID, {0.7f, 0, 0.9f, 0.0f}, 0, "chain k=3, T=0.7 top-p 0.9"},
                  {tree_parent, 8, CHILDREN_IID, {1.0f, 0, 1.0f, 0.0f}, 0, "tree of 8, i.i.d., T=1"},
                  {wide, 4, CHILDREN_NO_REPLACEMENT, {1.0f, 0, 1.0f, 0.0f}, 0, "3 children w/o replacement"},
                  {tree_parent, 8, CHILDREN_IID, {1.0f, 0, 1.0f, 0.0f}, 1, "tree of 8 drawn at seed + 1"}};
    token_tree tree;
    tree_build(&tree, V, 8);
    int accepted = 0, rejected = 0; /* rounds that accepted a draft, that rejected one: both kinds are compared */
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int differ = 0;
        for (int r = 0; r < ACCEPT_ROUNDS; r++) {
            random_tree(t, &tree, shapes[s].parent, shapes[s].n, shapes[s].kind);
            float *logits = random_floats(t, (size_t)shapes[s].n * V, -3.0f, 3.0f);
            const accept_site site = {1000 + r, (uint64_t)r, 7};
            accept_site planted = site;
            planted.seed += shapes[s].plant;
            int want[3 + 8], got[3 + 8];
            accept_cpu(t, want, &tree, logits, &shapes[s].sp, site);
            accept_cuda(t, got, seq, &tree, logits, &shapes[s].sp, planted);
            accepted += want[0] > 0, rejected += want[2] == 0;
            differ += memcmp(want, got, (size_t)(3 + (want[0] > 0 ? want[0] : 0)) * sizeof(int)) != 0;
            free(logits);
        }
        char shape[48];
        snprintf(shape, sizeof shape, "%s, %d rounds", shapes[s].what, ACCEPT_ROUNDS);
        const double err = (double)differ / ACCEPT_ROUNDS;
        if (shapes[s].plant)
            add_control(t, shape, err, BOUND_ACCEPT);
        else
            add_row(t, "accept", shape, err, BOUND_ACCEPT);
    }
    tree_free(&tree);
    ck_assert_msg(accepted > 0 && rejected > 0, "acceptance rounds: %d accepted a draft, %d ended in a rejection",
                  accepted, rejected);
}

START_TEST(test_ops_match_the_cpu_backend) {
    char dir[512];
    /* micro-tied: the CUDA kernels take its head_dim (32); its weights bf16, as the CUDA backend computes */
    write_checkpoint(dir, sizeof dir, "micro-tied", 0, 31, DTYPE_BF16);
    bench t;
    bench_open(&t, dir);
    matmul_rows(&t);
    elementwise_rows(&t);
    probs_rows(&t);
    for (int i = 0; i < MAX_NODES; i++) chain_parent[i] = i - 1, chain_depth[i] = i;
    attention_rows(&t, "attention", BOUND_ATTENTION);
    deltanet_rows(&t);
    accept_rows(&t);
    /* the same attention rows with a q8, then a q4 cache on both backends */
    const struct {
        kv_format kv;
        const char *op;
    } quant[] = {{KV_Q8, "attention q8"}, {KV_Q4, "attention q4"}};
    for (int i = 0; i < 2; i++) {
        bench_close(&t);
        engines_open(&t, dir, quant[i].kv);
        attention_rows(&t, quant[i].op, BOUND_ATTENTION_QUANT);
    }
    printf("backend conformance: the CUDA backend on %s against the CPU backend (%s)\n", t.cuda.be.device,
           t.cpu.be.device);
    printf("%-13s %-44s %10s %10s  %s\n", "op", "shape", "error", "bound", "");
    int failed = 0;
    for (int i = 0; i < t.n_rows; i++) {
        const row *r = &t.rows[i];
        const int control = r->control, ok = control ? r->err > r->bound : r->err <= r->bound;
        printf("%-13s %-44s %10.3g %10.3g  %s\n", r->op, r->shape, r->err, r->bound,
               ok        ? (control ? "seen" : "ok")
               : control ? "NOT SEEN"
                         : "FAIL");
        failed += !ok;
    }
    bench_close(&t);
    harness_rmtree(dir);
    ck_assert_msg(failed == 0, "%d row(s) of the conformance table failed (printed above)", failed);
}
END_TEST

Suite *backend_conformance_suite(void) {
    Suite *s = suite_create("backend_conformance");
    TCase *tc = harness_tcase("ops", 120);
    tcase_add_test(tc, test_ops_match_the_cpu_backend);
    suite_add_tcase(s, tc);
    return s;
}
