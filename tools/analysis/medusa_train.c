/* medusa_train.c — self-distillation of Medusa heads (see medusa_train.h):
 * the examples from the target's own continuations, the loss and its
 * hand-written gradient, Adam, and the held-out figures. Float32 weights,
 * double where sums are long; single thread, so runs are reproducible. */
#include "medusa_train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops.h"
#include "philox.h"
#include "sampler.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- the examples ------------------------------------------------------------------ */

void medusa_dataset_free(medusa_dataset *ds) {
    free(ds->hidden);
    free(ds->labels);
    memset(ds, 0, sizeof *ds);
}

int medusa_dataset_generate(decode_target *target, const int *corpus, int n_corpus, int n_heads,
                            const medusa_data_opts *o, medusa_dataset *ds, FILE *progress, sp_error *err) {
    const int V = target->cfg->vocab_size, D = target->cfg->hidden_size, P = o->prompt_len, G = o->gen_len;
    memset(ds, 0, sizeof *ds);
    if (n_heads < 1 || n_heads > MEDUSA_MAX_HEADS)
        return sp_fail(err, "%d heads: expected 1 to %d", n_heads, MEDUSA_MAX_HEADS);
    if (P < 1 || G <= n_heads)
        return sp_fail(err,
                       "prompt length %d and continuation length %d: need a prompt of at least 1 token and a "
                       "continuation longer than the %d heads",
                       P, G, n_heads);
    if (o->n_sequences < 1) return sp_fail(err, "%d sequences: at least 1 is needed", o->n_sequences);
    if (n_corpus < P) return sp_fail(err, "the corpus has %d tokens, fewer than one prompt of %d", n_corpus, P);
    if (!(o->temperature >= 0)) return sp_fail(err, "temperature %g: expected ≥ 0", o->temperature);
    for (int i = 0; i < n_corpus; i++)
        if (corpus[i] < 0 || corpus[i] >= V)
            return sp_fail(err, "corpus token %d at index %d is outside the target's vocabulary [0, %d)", corpus[i], i,
                           V);
    const int per_seq = G - n_heads;
    ds->n = o->n_sequences * per_seq, ds->D = D, ds->n_heads = n_heads;
    ds->hidden = sp_xcalloc((size_t)ds->n * D, sizeof(float), "training hidden states");
    ds->labels = sp_xcalloc((size_t)ds->n * n_heads, sizeof(int), "training labels");
    int *x = sp_xcalloc((size_t)(P + G), sizeof(int), "sequence");
    float *logits = sp_xcalloc((size_t)V, sizeof(float), "logits");
    float *hs = sp_xcalloc((size_t)G * D, sizeof(float), "sequence hidden states"); /* positions P−1 … P+G−2 */
    sampler_params sp = sampler_defaults();
    sp.temperature = o->temperature;
    const double t0 = now_s();
    int rc = 0;
    for (int s = 0; s < o->n_sequences && !rc; s++) {
        uint32_t w[4];
        philox_words(o->seed, o->stream, (uint64_t)s, w);
        const uint64_t span = (uint64_t)(n_corpus - P) + 1;
        const int offset = (int)((((uint64_t)w[1] << 32) | w[0]) % span); /* bias < span / 2^64: negligible */
        memcpy(x, corpus + offset, (size_t)P * sizeof(int));
        const int seq = target->seq_open(target, err);
        if (seq < 0 || target->prefill(target, seq, x, P - 1, NULL, NULL, err)) {
            rc = -1;
            if (seq >= 0) target->seq_close(target, seq);
            break;
        }
        for (int t = P - 1; t + 1 < P + G; t++) { /* from here on the next token is the target's own */
            if ((rc = target->prefill(target, seq, &x[t], 1, logits, hs + (size_t)(t - P + 1) * D, err))) break;
            if (o->temperature == 0) {
                x[t + 1] = sampler_argmax(logits, V);
            } else {
                sampler_probs(&sp, logits, logits, V);
                rng_site site = {o->seed, RNG_SAMPLE, (o->stream << 56) | ((uint64_t)s << 24) | (uint64_t)t};
                x[t + 1] = sampler_sample(logits, V, site);
            }
        }
        target->seq_close(target, seq);
        if (rc) break;
        for (int j = 0; j < per_seq; j++) { /* position t = P − 1 + j */
            const size_t e = (size_t)s * per_seq + j;
            memcpy(ds->hidden + e * D, hs + (size_t)j * D, (size_t)D * sizeof(float));
            for (int i = 0; i < n_heads; i++) ds->labels[e * n_heads + i] = x[P - 1 + j + 2 + i];
        }
        if (progress && ((s + 1) % 50 == 0 || s + 1 == o->n_sequences))
            fprintf(progress, "  %d/%d sequences, %.1f s\n", s + 1, o->n_sequences, now_s() - t0), fflush(progress);
    }
    free(x);
    free(logits);
    free(hs);
    if (rc) medusa_dataset_free(ds);
    return rc;
}

/* ---- loss and gradient ------------------------------------------------------------- */

void medusa_work_build(medusa_work *w, const medusa_heads *h) {
    w->D = h->D, w->V = h->V, w->n_layers = h->n_layers;
    w->x = sp_xcalloc((size_t)(h->n_layers + 1) * h->D, sizeof(float), "ResBlock inputs");
    w->z = sp_xcalloc((size_t)h->n_layers * h->D, sizeof(float), "ResBlock pre-activations");
    w->logits = sp_xcalloc((size_t)h->V, sizeof(float), "head logits");
    w->dr = sp_xcalloc((size_t)h->D, sizeof(float), "gradient of r");
    w->dz = sp_xcalloc((size_t)h->D, sizeof(float), "gradient of z");
}

void medusa_work_free(medusa_work *w) {
    free(w->x);
    free(w->z);
    free(w->logits);
    free(w->dr);
    free(w->dz);
    memset(w, 0, sizeof *w);
}

/* d silu(z) / dz = σ(z) · (1 + z · (1 − σ(z))) */
static float silu_grad(float z) {
    float s = op_sigmoid(z);
    return s * (1.0f + z * (1.0f - s));
}

double medusa_head_loss(const medusa_heads *h, int i, const float *hidden, int label, float scale, medusa_heads *grad,
                        medusa_work *w) {
    const int D = h->D, V = h->V, L = h->n_layers;
    /* forward, keeping what the backward needs: x_j, z_j, r = x_L */
    memcpy(w->x, hidden, (size_t)D * sizeof(float));
    for (int j = 0; j < L; j++) {
        const medusa_resblock *b = &h->blocks[i * L + j];
        const float *xj = w->x + (size_t)j * D;
        float *zj = w->z + (size_t)j * D, *next = w->x + (size_t)(j + 1) * D;
        op_matvec(zj, b->w, xj, D, D);
        for (int d = 0; d < D; d++) {
            zj[d] += b->b[d];
            next[d] = xj[d] + op_silu(zj[d]);
        }
    }
    const float *r = w->x + (size_t)L * D;
    op_matvec(w->logits, h->proj[i], r, V, D);
    /* CE = log Σ exp(logits) − logits[label], the sum in double */
    double mx = w->logits[0];
    for (int v = 1; v < V; v++)
        if (w->logits[v] > mx) mx = w->logits[v];
    double sum = 0;
    for (int v = 0; v < V; v++) sum += exp((double)w->logits[v] - mx);
    const double lse = mx + log(sum), loss = lse - w->logits[label];
    if (!grad) return loss;

    /* ∂CE/∂logits = softmax − onehot(label), scaled; in place of the logits */
    float *dl = w->logits;
    for (int v = 0; v < V; v++) dl[v] = scale * (float)(exp((double)dl[v] - lse) - (v == label));
    /* logits = P r:  ∂/∂P = dl ⊗ r (own projection only),  ∂/∂r = Pᵀ dl.
     * (restrict: the rows never overlap, which lets the compiler vectorise) */
    float *restrict dr = w->dr, *restrict dz = w->dz;
    float *gP = h->own_proj ? (float *)grad->proj[i] : NULL;
    memset(dr, 0, (size_t)D * sizeof(float));
    for (int v = 0; v < V; v++) {
        const float g = dl[v];
        const float *restrict row = h->proj[i] + (size_t)v * D;
        for (int d = 0; d < D; d++) dr[d] += g * row[d];
        if (gP) {
            float *restrict grow = gP + (size_t)v * D;
            for (int d = 0; d < D; d++) grow[d] += g * r[d];
        }
    }
    /* back through the ResBlocks, last first: x_{j+1} = x_j + silu(z_j), z_j = W x_j + b */
    for (int j = L - 1; j >= 0; j--) {
        const medusa_resblock *b = &h->blocks[i * L + j];
        medusa_resblock *gb = &grad->blocks[i * L + j];
        const float *restrict xj = w->x + (size_t)j * D, *zj = w->z + (size_t)j * D;
        for (int d = 0; d < D; d++) dz[d] = dr[d] * silu_grad(zj[d]);
        for (int d = 0; d < D; d++) {
            gb->b[d] += dz[d];
            float *restrict gw = gb->w + (size_t)d * D;
            for (int e = 0; e < D; e++) gw[e] += dz[d] * xj[e];
        }
        if (j > 0) /* ∂/∂x_j = ∂/∂x_{j+1} (the residual) + Wᵀ dz */
            for (int d = 0; d < D; d++) {
                const float *restrict wrow = b->w + (size_t)d * D;
                for (int e = 0; e < D; e++) dr[e] += wrow[e] * dz[d];
            }
    }
    return loss;
}

double medusa_example_loss(const medusa_heads *h, const float *hidden, const int *labels, const float *weights,
                           float scale, medusa_heads *grad, medusa_work *w) {
    double total = 0;
    for (int i = 0; i < h->n_heads; i++)
        total += weights[i] * medusa_head_loss(h, i, hidden, labels[i], scale * weights[i], grad, w);
    return total;
}

/* ---- training ----------------------------------------------------------------------- */

medusa_train_opts medusa_train_defaults(void) {
    medusa_train_opts o;
    memset(&o, 0, sizeof o);
    o.steps = 2000;
    o.batch = 32;
    o.lr = 1e-3f;
    o.warmup = 100;
    o.beta1 = 0.9f, o.beta2 = 0.999f, o.adam_eps = 1e-8f;
    o.decay = 0.8f;
    o.seed = 1;
    o.log_every = 100;
    return o;
}

void medusa_train_init(medusa_heads *h, const float *lm_head) {
    size_t blocks = (size_t)h->n_heads * h->n_layers * ((size_t)h->D * h->D + h->D);
    memset(h->arena, 0, blocks * sizeof(float)); /* the blocks come first in the arena (medusa_build) */
    if (h->own_proj)
        for (int i = 0; i < h->n_heads; i++) memcpy((float *)h->proj[i], lm_head, (size_t)h->V * h->D * sizeof(float));
}

/* A uniform index in [0, n) for draw `k` of the order of epoch e. */
static size_t draw_index(uint64_t seed, uint64_t epoch, uint64_t k, size_t n) {
    uint32_t w[4];
    philox_words(seed, 0x5ca1ab1eull + epoch, k, w);
    return (size_t)((((uint64_t)w[1] << 32) | w[0]) % n);
}

/* A fresh order of the examples for each epoch (Fisher–Yates). */
static void shuffle(int *perm, size_t n, uint64_t seed, uint64_t epoch) {
    for (size_t i = 0; i < n; i++) perm[i] = (int)i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = draw_index(seed, epoch, i, i + 1);
        int t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
}

/* Linear warm-up to lr, then a cosine down to lr/10 at the last step. */
static float learning_rate(const medusa_train_opts *o, int step) {
    if (step < o->warmup) return o->lr * (float)(step + 1) / (float)o->warmup;
    double span = o->steps - o->warmup > 1 ? o->steps - o->warmup - 1 : 1;
    double c = 0.5 * (1 + cos(M_PI * (step - o->warmup) / span));
    return (float)(o->lr * (0.1 + 0.9 * c));
}

static int argmax_of(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

int medusa_train(medusa_heads *h, const medusa_dataset *train, const medusa_train_opts *o, FILE *log, sp_error *err) {
    if (train->n < 1) return sp_fail(err, "no training examples");
    if (train->D != h->D) return sp_fail(err, "examples of width %d for heads of width %d", train->D, h->D);
    if (train->n_heads < h->n_heads)
        return sp_fail(err, "examples carry labels for %d heads, the heads are %d", train->n_heads, h->n_heads);
    if (o->steps < 1 || o->batch < 1 || !(o->lr > 0) || o->warmup < 0)
        return sp_fail(err, "training needs steps ≥ 1, batch ≥ 1, lr > 0 and warmup ≥ 0");
    const int H = h->n_heads, HL = train->n_heads;
    medusa_heads grad, m, v; /* the gradient and Adam's moments, laid out like the weights */
    sp_error e2;
    medusa_build(&grad, H, h->n_layers, h->D, h->V, h->own_proj, &e2);
    medusa_build(&m, H, h->n_layers, h->D, h->V, h->own_proj, &e2);
    medusa_build(&v, H, h->n_layers, h->D, h->V, h->own_proj, &e2);
    medusa_work w;
    medusa_work_build(&w, h);
    float weights[MEDUSA_MAX_HEADS];
    for (int i = 0; i < H; i++) weights[i] = powf(o->decay, (float)i);
    int *perm = sp_xcalloc((size_t)train->n, sizeof(int), "example order");
    uint64_t epoch = 0;
    size_t cursor = 0;
    shuffle(perm, (size_t)train->n, o->seed, epoch);
    double head_loss[MEDUSA_MAX_HEADS] = {0}, head_hits[MEDUSA_MAX_HEADS] = {0}, total = 0;
    long seen = 0;
    const double t0 = now_s();
    const size_t n_params = h->arena_floats;
    for (int step = 0; step < o->steps; step++) {
        memset(grad.arena, 0, n_params * sizeof(float));
        for (int b = 0; b < o->batch; b++) {
            if (cursor == (size_t)train->n) shuffle(perm, (size_t)train->n, o->seed, ++epoch), cursor = 0;
            const size_t ex = (size_t)perm[cursor++];
            const float *hid = train->hidden + ex * h->D;
            const int *lab = train->labels + ex * HL;
            for (int i = 0; i < H; i++) {
                double l = medusa_head_loss(h, i, hid, lab[i], weights[i] / (float)o->batch, &grad, &w);
                head_loss[i] += l;
                total += weights[i] * l;
            }
            seen++;
        }
        /* Adam with bias correction */
        const float lr = learning_rate(o, step);
        const double c1 = 1 - pow(o->beta1, step + 1), c2 = 1 - pow(o->beta2, step + 1);
        for (size_t k = 0; k < n_params; k++) {
            const float g = grad.arena[k];
            m.arena[k] = o->beta1 * m.arena[k] + (1 - o->beta1) * g;
            v.arena[k] = o->beta2 * v.arena[k] + (1 - o->beta2) * g * g;
            const double mh = m.arena[k] / c1, vh = v.arena[k] / c2;
            h->arena[k] -= (float)(lr * mh / (sqrt(vh) + o->adam_eps));
        }
        if (log && o->log_every > 0 && ((step + 1) % o->log_every == 0 || step + 1 == o->steps)) {
            /* top-1 on the last batch, with the updated heads: a cheap sign of progress */
            for (int b = 0; b < o->batch && b < train->n; b++) {
                const size_t ex = (size_t)perm[(cursor + (size_t)train->n - 1 - (size_t)b) % (size_t)train->n];
                for (int i = 0; i < H; i++) {
                    medusa_head_loss(h, i, train->hidden + ex * h->D, train->labels[ex * HL + i], 0, NULL, &w);
                    head_hits[i] += argmax_of(w.logits, h->V) == train->labels[ex * HL + i];
                }
            }
            const int nb = o->batch < train->n ? o->batch : train->n;
            fprintf(log, "step %5d/%d  lr %.2e  loss %.4f  CE per head", step + 1, o->steps, lr, total / seen);
            for (int i = 0; i < H; i++) fprintf(log, " %.3f", head_loss[i] / seen);
            fprintf(log, "  batch top-1");
            for (int i = 0; i < H; i++) fprintf(log, " %.2f", head_hits[i] / nb);
            fprintf(log, "  epoch %llu  %.0f examples/s\n", (unsigned long long)epoch,
                    (double)(step + 1) * o->batch / (now_s() - t0));
            fflush(log);
            memset(head_loss, 0, sizeof head_loss);
            memset(head_hits, 0, sizeof head_hits);
            total = 0;
            seen = 0;
        }
    }
    free(perm);
    medusa_work_free(&w);
    medusa_free(&grad);
    medusa_free(&m);
    medusa_free(&v);
    return 0;
}

/* ---- held-out evaluation ------------------------------------------------------------- */

/* The rank of `label` among x[V]: the number of entries ranked before it
 * (larger, or equal with a lower index — the tie rule of the proposer). */
static int rank_of(const float *x, int V, int label) {
    int r = 0;
    for (int v = 0; v < V; v++) r += x[v] > x[label] || (x[v] == x[label] && v < label);
    return r;
}

int medusa_evaluate(const medusa_heads *h, const medusa_dataset *ds, medusa_eval *e, sp_error *err) {
    memset(e, 0, sizeof *e);
    if (ds->n < 1) return sp_fail(err, "no held-out examples");
    if (ds->D != h->D || ds->n_heads < h->n_heads)
        return sp_fail(err, "held-out examples (D %d, %d labels) do not fit the heads (D %d, %d heads)", ds->D,
                       ds->n_heads, h->D, h->n_heads);
    const int H = h->n_heads, R = MEDUSA_EVAL_RANKS;
    e->n_heads = H, e->n = ds->n;
    e->ranks = sp_xcalloc((size_t)ds->n * H, sizeof(int), "held-out ranks");
    medusa_work w;
    medusa_work_build(&w, h);
    for (int x = 0; x < ds->n; x++)
        for (int i = 0; i < H; i++) {
            const int label = ds->labels[(size_t)x * ds->n_heads + i];
            e->loss[i] += medusa_head_loss(h, i, ds->hidden + (size_t)x * h->D, label, 0, NULL, &w);
            int r = rank_of(w.logits, h->V, label);
            if (r < R) e->rank_freq[i][r] += 1;
            e->ranks[(size_t)x * H + i] = r < R ? r : R;
        }
    for (int i = 0; i < H; i++) {
        e->loss[i] /= ds->n;
        for (int r = 0; r < R; r++) {
            e->rank_freq[i][r] /= ds->n;
            e->topk[i] += e->rank_freq[i][r];
        }
        e->top1[i] = e->rank_freq[i][0];
    }
    medusa_work_free(&w);
    return 0;
}

void medusa_eval_free(medusa_eval *e) {
    free(e->ranks);
    memset(e, 0, sizeof *e);
}

double medusa_eval_tree_gain(const medusa_eval *e, const medusa_tree *t) {
    long hits = 0;
    int path[MEDUSA_MAX_HEADS];
    for (int k = 0; k < t->n; k++) {
        if (t->depth[k] > e->n_heads) continue;
        medusa_tree_path(t, k, path);
        for (int x = 0; x < e->n; x++) {
            const int *r = e->ranks + (size_t)x * e->n_heads;
            int d = 0;
            while (d < t->depth[k] && r[d] == path[d]) d++;
            hits += d == t->depth[k];
        }
    }
    return (double)hits / e->n;
}

/* Candidate paths for the suggestion: every prefix of every example's ranks. */
typedef struct {
    int depth, count;
    int r[MEDUSA_MAX_HEADS];
} counted_path;

/* Any total order that puts equal paths side by side. */
static int cmp_ranks(const void *pa, const void *pb) {
    const counted_path *a = pa, *b = pb;
    if (a->depth != b->depth) return a->depth - b->depth;
    return memcmp(a->r, b->r, sizeof a->r);
}

static int cmp_count(const void *pa, const void *pb) {
    const counted_path *a = pa, *b = pb;
    if (a->count != b->count) return a->count > b->count ? -1 : 1;
    if (a->depth != b->depth) return a->depth - b->depth; /* on a tie the prefix comes first */
    for (int d = 0; d < a->depth; d++)
        if (a->r[d] != b->r[d]) return a->r[d] < b->r[d] ? -1 : 1;
    return 0;
}

void medusa_eval_suggest_tree(const medusa_eval *e, int n_nodes, medusa_tree *t) {
    const int H = e->n_heads;
    counted_path *c = sp_xcalloc((size_t)e->n * H + 1, sizeof *c, "candidate paths");
    size_t n = 0;
    for (int x = 0; x < e->n; x++) {
        const int *r = e->ranks + (size_t)x * H;
        for (int d = 1; d <= H && r[d - 1] < MEDUSA_EVAL_RANKS; d++) {
            counted_path p = {d, 1, {0}};
            memcpy(p.r, r, (size_t)d * sizeof(int));
            c[n++] = p;
        }
    }
    qsort(c, n, sizeof *c, cmp_ranks);
    size_t u = 0; /* merge equal paths */
    for (size_t i = 0; i < n; i++) {
        if (u && cmp_ranks(&c[u - 1], &c[i]) == 0)
            c[u - 1].count++;
        else
            c[u++] = c[i];
    }
    qsort(c, u, sizeof *c, cmp_count);
    if (n_nodes > MEDUSA_MAX_NODES) n_nodes = MEDUSA_MAX_NODES;
    int k = (int)u < n_nodes ? (int)u : n_nodes;
    int *depths = sp_xcalloc((size_t)k + 1, sizeof(int), "suggested depths");
    int *ranks = sp_xcalloc(((size_t)k + 1) * MEDUSA_MAX_HEADS, sizeof(int), "suggested ranks");
    for (int i = 0; i < k; i++) {
        depths[i] = c[i].depth;
        memcpy(ranks + (size_t)i * MEDUSA_MAX_HEADS, c[i].r, sizeof c[i].r);
    }
    sp_error err;
    if (k == 0 || medusa_tree_build(t, k, depths, ranks, "suggested tree", &err)) {
        /* no example had its first label in the top ranks: fall back to the single best guess */
        int one = 1, zero[MEDUSA_MAX_HEADS] = {0};
        medusa_tree_build(t, 1, &one, zero, "suggested tree", &err);
    }
    free(depths);
    free(ranks);
    free(c);
}
