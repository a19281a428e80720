/* check_sample.cu — validates and times the device sampler (kn_sample.h):
 * processed distributions against sampler_probs (values and the kept set),
 * race draws against sampler_sample, and chain and tree acceptance against
 * accept_exact, draw for draw over many sites. */
#include <string.h>

#include "gc.cuh"
#include "kn_sample.h"
#include "twin.h"
extern "C" {
#include "accept.h"
#include "tree.h"
}

/* probs: both sides compute in double and round once to float, so values
 * agree to an ulp of float (6e-8 relative); 1e-6 leaves room for an exp or a
 * sum differing in its last double bits. A wrong temperature or cut moves
 * mass by far more, and the kept sets are compared entry by entry too.
 * sample / accept: the same token on every draw (bound 0 mismatches). */
#define PROBS_BOUND 1e-6
#define DRAW_BOUND 0.0
#define DRAWS 48

static float *host_logits(int m, int V, uint64_t seed, int ties, int specials) {
    float *lg = (float *)gc_hmalloc((size_t)m * V * 4);
    uint64_t x = seed | 1;
    for (size_t i = 0; i < (size_t)m * V; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        float u = (float)(x >> 40) * (1.0f / 16777216.0f);
        float v = -12.0f + 24.0f * u * u; /* skewed: a few large logits, a long tail */
        lg[i] = ties ? floorf(v * 2.0f) * 0.5f : v;
    }
    if (specials && V > 8)
        for (int t = 0; t < m; t++) {
            lg[(size_t)t * V + 1] = NAN;
            lg[(size_t)t * V + 3] = -INFINITY;
        }
    return lg;
}

static void probs_case(gc_ctx *c, const char *shape, int m, int V, sampler_params sp, int ties, int specials) {
    size_t n = (size_t)m * V;
    float *lg_h = host_logits(m, V, c->seed ^ (uint64_t)V ^ ((uint64_t)m << 32), ties, specials);
    float *ref = (float *)gc_hmalloc(n * 4), *got = (float *)gc_hmalloc(n * 4);
    twin_probs(ref, lg_h, m, V, &sp);
    /* the logits rotated (copies of set 0), so a timed call reads them from HBM */
    size_t sizes[1] = {n * 4};
    gc_rot rot = gc_rot_make(c, sizes, 1);
    float *lg = (float *)gc_rot_buf(&rot, 0, 0), *pr = (float *)gc_dmalloc(n * 4);
    gc_h2d(lg, lg_h, n * 4);
    for (int s = 1; s < rot.n_sets; s++) gc_d2d(gc_rot_buf(&rot, s, 0), lg, n * 4);
    size_t work_n = kn_probs_work_doubles(m, V);
    double *work = (double *)gc_dmalloc(work_n * 8);
    int nv = 0;
    const kn_probs_version *vs = kn_probs_versions(&nv);
    for (int vi = 0; vi < nv; vi++) {
        char note[96] = "";
        double err = INFINITY, us = NAN;
        gc_poison(pr, n * 4);
        cudaError_t e = vs[vi].fn(pr, lg, m, V, sp, work, work_n, 0);
        if (e != cudaSuccess) {
            snprintf(note, sizeof note, "launch: %s", cudaGetErrorString(e));
        } else {
            gc_sync(vs[vi].name);
            err = gc_compare_f32(pr, ref, n, note, sizeof note);
            gc_d2h(got, pr, n * 4);
            size_t set_diff = 0;
            for (size_t i = 0; i < n; i++) set_diff += (got[i] == 0.0f) != (ref[i] == 0.0f);
            if (set_diff) {
                snprintf(note, sizeof note, "kept sets differ at %zu entries", set_diff);
                err = INFINITY;
            }
            if (gc_status_for(err, PROBS_BOUND) == GC_OK)
                us = gc_time_us(c, [&](int it) {
                    return vs[vi].fn(pr, (const float *)gc_rot_buf(&rot, it % rot.n_sets, 0), m, V, sp, work, work_n,
                                     0);
                });
        }
        gc_record(c, "probs", vs[vi].name, shape, m, err, PROBS_BOUND, us, 8.0 * n, 0.0, note);
    }
    gc_rot_free(&rot);
    gc_dfree(pr), gc_dfree(work);
    free(lg_h), free(ref), free(got);
}

static void sample_case(gc_ctx *c, const char *shape, int m, int V, sampler_params sp) {
    size_t n = (size_t)m * V;
    float *lg_h = host_logits(m, V, c->seed ^ 0x5a, 0, 0);
    float *pr_h = (float *)gc_hmalloc(n * 4);
    twin_probs(pr_h, lg_h, m, V, &sp);
    size_t sizes[1] = {n * 4}; /* the distributions rotated (copies of set 0) */
    gc_rot rot = gc_rot_make(c, sizes, 1);
    float *pr = (float *)gc_rot_buf(&rot, 0, 0);
    gc_h2d(pr, pr_h, n * 4);
    for (int s = 1; s < rot.n_sets; s++) gc_d2d(gc_rot_buf(&rot, s, 0), pr, n * 4);
    int *tok = (int *)gc_dmalloc((size_t)m * 4);
    int *got = (int *)gc_hmalloc((size_t)m * 4), *want = (int *)gc_hmalloc((size_t)m * 4);
    int mismatches = 0, draws = 0;
    char note[96] = "";
    double us = NAN;
    uint64_t seed = c->seed * 0x9e3779b97f4a7c15ull;
    for (int d = 0; d < DRAWS / m + 1; d++) {
        uint64_t index0 = (uint64_t)d * m + ((uint64_t)d << 33); /* high index bits too */
        cudaError_t e = kn_sample(tok, pr, m, V, seed, RNG_SAMPLE, index0, 0);
        if (e != cudaSuccess) {
            snprintf(note, sizeof note, "launch: %s", cudaGetErrorString(e));
            mismatches = draws = 1;
            break;
        }
        gc_sync("kn_sample");
        gc_d2h(got, tok, (size_t)m * 4);
        twin_sample(want, pr_h, m, V, seed, RNG_SAMPLE, index0);
        for (int t = 0; t < m; t++) mismatches += got[t] != want[t], draws++;
    }
    double err = (double)mismatches / draws;
    if (mismatches && !note[0])
        snprintf(note, sizeof note, "%d of %d draws differ from sampler_sample", mismatches, draws);
    if (gc_status_for(err, DRAW_BOUND) == GC_OK)
        us = gc_time_us(c, [&](int it) {
            return kn_sample(tok, (const float *)gc_rot_buf(&rot, it % rot.n_sets, 0), m, V, seed, RNG_SAMPLE,
                             (uint64_t)it, 0);
        });
    gc_record(c, "sample", "v1", shape, m, err, DRAW_BOUND, us, 4.0 * n, 0.0, note);
    gc_rot_free(&rot);
    gc_dfree(tok);
    free(lg_h), free(pr_h), free(got), free(want);
}

/* accept_exact on the chain root → draft[0] → … → draft[k−1]. */
static int twin_accept(const float *p, const float *q, const int *draft, int k, int V, uint64_t seed, uint64_t round,
                       int base, int out[3]) {
    token_tree t;
    tree_build(&t, V, k + 1);
    tree_reset(&t, 0, CHILDREN_IID);
    for (int i = 0; i < k; i++) {
        int node = tree_add(&t, i, draft[i]);
        memcpy(tree_q(&t, i), q + (size_t)i * V, (size_t)V * 4);
        (void)node;
    }
    float *scratch = (float *)gc_hmalloc((size_t)2 * V * 4);
    accept_result r;
    sp_error err;
    accept_site site = {seed, round, base};
    int rc = accept_exact(&t, p, site, scratch, &r, &err);
    out[0] = rc ? -1 : r.n_accepted, out[1] = rc ? -1 : r.next_token, out[2] = rc ? 0 : r.bonus;
    free(scratch);
    tree_free(&t);
    return rc;
}

static void accept_case(gc_ctx *c, const char *shape, int k, int V, sampler_params sp, int trials) {
    size_t pn = (size_t)(k + 1) * V, qn = (size_t)k * V;
    float *lp = host_logits(k + 1, V, c->seed ^ 0xacc, 0, 0);
    float *lq = (float *)gc_hmalloc(qn * 4);
    uint64_t x = c->seed | 1;
    for (size_t i = 0; i < qn; i++) { /* the proposer: the target's logits plus noise */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        lq[i] = lp[i] + ((float)(x >> 40) * (1.0f / 16777216.0f) - 0.5f) * 3.0f;
    }
    float *p_h = (float *)gc_hmalloc(pn * 4), *q_h = (float *)gc_hmalloc(qn * 4);
    twin_probs(p_h, lp, k + 1, V, &sp);
    twin_probs(q_h, lq, k, V, &sp);
    size_t sizes[2] = {pn * 4, qn * 4}; /* p and q rotated (copies of set 0) */
    gc_rot rot = gc_rot_make(c, sizes, 2);
    float *p = (float *)gc_rot_buf(&rot, 0, 0), *q = (float *)gc_rot_buf(&rot, 0, 1);
    gc_h2d(p, p_h, pn * 4), gc_h2d(q, q_h, qn * 4);
    for (int s = 1; s < rot.n_sets; s++)
        gc_d2d(gc_rot_buf(&rot, s, 0), p, pn * 4), gc_d2d(gc_rot_buf(&rot, s, 1), q, qn * 4);
    int *draft = (int *)gc_dmalloc((size_t)k * 4), *res = (int *)gc_dmalloc(3 * 4);
    int *draft_h = (int *)gc_hmalloc((size_t)k * 4);
    uint64_t seed = c->seed ^ 0xfeedull;
    int mismatches = 0, hist[2] = {0, 0};
    char note[96] = "";
    for (int tr = 0; tr < trials; tr++) {
        int base = 1000 + 7 * tr;
        for (int i = 0; i < k; i++) { /* drafts drawn from q, as a proposer would */
            rng_site s = {seed, RNG_DRAFT, (uint64_t)(base + i) + ((uint64_t)tr << 40)};
            draft_h[i] = sampler_sample(q_h + (size_t)i * V, V, s);
        }
        gc_h2d(draft, draft_h, (size_t)k * 4);
        cudaError_t e = kn_accept_chain(res, p, q, draft, k, V, seed, (uint64_t)tr, base, 0);
        if (e != cudaSuccess) {
            snprintf(note, sizeof note, "launch: %s", cudaGetErrorString(e));
            mismatches = trials;
            break;
        }
        gc_sync("kn_accept_chain");
        int got[3], want[3];
        gc_d2h(got, res, sizeof got);
        twin_accept(p_h, q_h, draft_h, k, V, seed, (uint64_t)tr, base, want);
        mismatches += got[0] != want[0] || got[1] != want[1] || got[2] != want[2];
        hist[got[0] == k]++;
    }
    if (k > 0 && !note[0]) { /* a draft outside q's support: accept_exact's error, result[0] = −1 */
        draft_h[0] = -1;     /* the first node is always examined */
        gc_h2d(draft, draft_h, (size_t)k * 4);
        GC_CUDA(kn_accept_chain(res, p, q, draft, k, V, seed, 0, 1000, 0));
        gc_sync("kn_accept_chain (error path)");
        int got[3];
        gc_d2h(got, res, sizeof got);
        if (got[0] != -1) {
            snprintf(note, sizeof note, "a draft with q = 0 gave %d accepted instead of the error -1", got[0]);
            mismatches++;
        }
    }
    double err = (double)mismatches / trials;
    if (mismatches && !note[0])
        snprintf(note, sizeof note, "%d of %d trials differ from accept_exact", mismatches, trials);
    else if (!note[0])
        snprintf(note, sizeof note, "%d trials with a rejection, %d fully accepted", hist[0], hist[1]);
    double us = NAN;
    if (gc_status_for(err, DRAW_BOUND) == GC_OK) {
        for (int i = 0; i < k; i++) draft_h[i] = sampler_argmax(q_h + (size_t)i * V, V);
        gc_h2d(draft, draft_h, (size_t)k * 4);
        us = gc_time_us(c, [&](int it) {
            int s = it % rot.n_sets;
            return kn_accept_chain(res, (const float *)gc_rot_buf(&rot, s, 0), (const float *)gc_rot_buf(&rot, s, 1),
                                   draft, k, V, seed, (uint64_t)it, 1000, 0);
        });
    }
    gc_record(c, "accept", "v1", shape, k + 1, err, DRAW_BOUND, us, 8.0 * V, 0.0, note);
    gc_rot_free(&rot);
    gc_dfree(draft), gc_dfree(res);
    free(lp), free(lq), free(p_h), free(q_h), free(draft_h);
}

/* accept_exact on a tree: its result in kn_accept_tree's layout (out[3 + n]). */
static void twin_accept_tree(const float *p, const float *q, const int *token, const int *parent, int n, int V,
                             children_kind kind, uint64_t seed, uint64_t round, int base, int *out) {
    token_tree t;
    tree_build(&t, V, n);
    tree_reset(&t, token[0], kind);
    for (int c = 1; c < n; c++) tree_add(&t, parent[c], token[c]);
    for (int i = 0; i < n; i++) memcpy(tree_q(&t, i), q + (size_t)i * V, (size_t)V * 4);
    float *scratch = (float *)gc_hmalloc((size_t)2 * V * 4);
    accept_result r;
    sp_error err;
    accept_site site = {seed, round, base};
    int rc = accept_exact(&t, p, site, scratch, &r, &err);
    out[0] = rc ? -1 : r.n_accepted, out[1] = rc ? -1 : r.next_token, out[2] = rc ? 0 : r.bonus;
    for (int i = 1; !rc && i <= r.n_accepted; i++) out[2 + i] = r.path[i];
    free(scratch);
    tree_free(&t);
}

/* kn_accept_tree against accept_exact on a fixed branching tree (three children under the root, two under the
 * first, one deeper), its drafts drawn from their parents' q as a proposer draws them (without replacement:
 * each sibling from q without the earlier siblings' tokens), over many sites: the same result on every trial. */
static void accept_tree_case(gc_ctx *c, const char *shape, int V, children_kind kind, sampler_params sp, int trials) {
    enum { N = 7 };
    static const int parent_h[N] = {-1, 0, 0, 0, 1, 1, 4};
    const size_t pn = (size_t)N * V;
    float *lp = host_logits(N, V, c->seed ^ 0x7ee, 0, 0);
    float *lq = (float *)gc_hmalloc(pn * 4);
    uint64_t x = c->seed | 1;
    for (size_t i = 0; i < pn; i++) { /* the proposer: the target's logits plus noise */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        lq[i] = lp[i] + ((float)(x >> 40) * (1.0f / 16777216.0f) - 0.5f) * 3.0f;
    }
    float *p_h = (float *)gc_hmalloc(pn * 4), *q_h = (float *)gc_hmalloc(pn * 4), *drawn = (float *)gc_hmalloc(V * 4);
    twin_probs(p_h, lp, N, V, &sp);
    twin_probs(q_h, lq, N, V, &sp);
    float *p = (float *)gc_dmalloc(pn * 4), *q = (float *)gc_dmalloc(pn * 4), *work = (float *)gc_dmalloc(2 * V * 4);
    int *token = (int *)gc_dmalloc(N * 4), *parent = (int *)gc_dmalloc(N * 4), *res = (int *)gc_dmalloc((3 + N) * 4);
    gc_h2d(p, p_h, pn * 4), gc_h2d(q, q_h, pn * 4), gc_h2d(parent, parent_h, N * 4);
    const uint64_t seed = c->seed ^ 0x7eedull;
    int token_h[N], mismatches = 0, accepted = 0;
    char note[96] = "";
    for (int tr = 0; tr < trials; tr++) {
        const int base = 2000 + 11 * tr;
        token_h[0] = 0;
        for (int n = 1; n < N; n++) {
            const int u = parent_h[n];
            memcpy(drawn, q_h + (size_t)u * V, (size_t)V * 4);
            for (int s = 1; kind == CHILDREN_NO_REPLACEMENT && s < n; s++)
                if (parent_h[s] == u) drawn[token_h[s]] = 0.0f; /* an earlier sibling's token: drawn already */
            rng_site site = {seed, RNG_DRAFT, (uint64_t)(base + n) + ((uint64_t)tr << 40)};
            token_h[n] = sampler_sample(drawn, V, site);
        }
        gc_h2d(token, token_h, N * 4);
        cudaError_t e = kn_accept_tree(res, p, q, token, parent, N, V, kind == CHILDREN_NO_REPLACEMENT, seed,
                                       (uint64_t)tr, base, work, 0);
        if (e != cudaSuccess) {
            snprintf(note, sizeof note, "launch: %s", cudaGetErrorString(e));
            mismatches = trials;
            break;
        }
        gc_sync("kn_accept_tree");
        int got[3 + N], want[3 + N];
        gc_d2h(got, res, sizeof got);
        twin_accept_tree(p_h, q_h, token_h, parent_h, N, V, kind, seed, (uint64_t)tr, base, want);
        int differ = got[0] != want[0] || got[1] != want[1] || got[2] != want[2];
        for (int i = 0; !differ && i < want[0]; i++) differ = got[3 + i] != want[3 + i];
        mismatches += differ;
        accepted += want[0] > 0;
    }
    double err = (double)mismatches / trials;
    if (mismatches && !note[0])
        snprintf(note, sizeof note, "%d of %d trials differ from accept_exact", mismatches, trials);
    else if (!note[0])
        snprintf(note, sizeof note, "%d trials accepted a draft, %d none", accepted, trials - accepted);
    gc_record(c, "accept", kind == CHILDREN_NO_REPLACEMENT ? "tree norepl" : "tree iid", shape, N, err, DRAW_BOUND, NAN,
              8.0 * V, 0.0, note);
    gc_dfree(p), gc_dfree(q), gc_dfree(work), gc_dfree(token), gc_dfree(parent), gc_dfree(res);
    free(lp), free(lq), free(p_h), free(q_h), free(drawn);
}

static sampler_params params(float t, int k, float top_p, float min_p) {
    sampler_params sp;
    sp.temperature = t, sp.top_k = k, sp.top_p = top_p, sp.min_p = min_p;
    return sp;
}

void gc_family_sample(gc_ctx *c) {
    probs_case(c, "odd V=1000 ties k=7 p=0.5", 2, 1000, params(0.8f, 7, 0.5f, 0.0f), 1, 1);
    probs_case(c, "odd V=777 ties p=0.9 minp", 3, 777, params(1.3f, 0, 0.9f, 0.02f), 1, 1);
    probs_case(c, "odd V=513 greedy", 2, 513, params(0.0f, 0, 1.0f, 0.0f), 1, 1);
    probs_case(c, "odd V=300 k=300 p=1", 1, 300, params(1.0f, 300, 1.0f, 0.0f), 0, 0);
    probs_case(c, "odd V=64 invalid top_p", 1, 64, params(1.0f, 0, 1.5f, 0.0f), 0, 0);
    sample_case(c, "odd V=1001 dense", 3, 1001, params(1.0f, 0, 1.0f, 0.0f));
    sample_case(c, "odd V=999 k=5", 2, 999, params(0.7f, 5, 1.0f, 0.0f));
    accept_case(c, "odd k=3 V=600", 3, 600, params(1.0f, 0, 1.0f, 0.0f), 24);
    accept_case(c, "odd k=5 V=257 greedy", 5, 257, params(0.0f, 0, 1.0f, 0.0f), 8);
    accept_tree_case(c, "odd tree of 7 V=300", 300, CHILDREN_IID, params(1.0f, 0, 1.0f, 0.0f), 48);
    accept_tree_case(c, "odd tree of 7 V=300 T=1.5", 300, CHILDREN_NO_REPLACEMENT, params(1.5f, 0, 1.0f, 0.0f), 48);
    if (c->small) return;
    for (int m = 1; m <= 4; m += 3) probs_case(c, GC_SHAPE_PROBS, m, GC27_V, params(0.7f, 20, 0.95f, 0.0f), 0, 0);
    probs_case(c, "V=248320 T=1 p=0.9", 1, GC27_V, params(1.0f, 0, 0.9f, 0.0f), 0, 0);
    probs_case(c, "V=248320 T=1 min_p=0.05", 1, GC27_V, params(1.0f, 0, 1.0f, 0.05f), 0, 0);
    sample_case(c, GC_SHAPE_SAMPLE, 1, GC27_V, params(1.0f, 0, 1.0f, 0.0f));
    sample_case(c, "V=248320 k=20", 4, GC27_V, params(0.7f, 20, 1.0f, 0.0f));
    accept_case(c, GC_SHAPE_ACCEPT, 3, GC27_V, params(1.0f, 0, 1.0f, 0.0f), 32);
}
