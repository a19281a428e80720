/* spec_law.c — the exact law of chain speculative decoding (spec_law.h), found by following every branch of the
 * process with its probability. Each planted bug changes the acceptance, the residual or the bonus row exactly
 * as planted_accept does. */
#include "spec_law.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "enumerate.h"

typedef struct {
    const spec_law_spec *s;
    double *joint;
    int tokens[ENUM_MAX_LENGTH + 1];
    float *p, *parent_p, *draw, *ratio; /* [L, V] one row per prefix length: the recursion's frames */
    double *row;                        /* [L, V] */
    sp_error *err;
    int failed;
} law;

static void law_round(law *w, int len, double mass);

/* row[V] ← in[V] / Σ in (the race draws in proportion to its weights). */
static void normalised(const float *in, double *row, int V) {
    double sum = 0;
    for (int i = 0; i < V; i++) sum += in[i] > 0 ? in[i] : 0;
    for (int i = 0; i < V; i++) row[i] = sum > 0 && in[i] > 0 ? in[i] / sum : 0;
}

/* The typical rule's threshold at a node whose target row is p[V]: min(epsilon, delta·exp(−H(p))), H in nats. */
static double typical_threshold(const spec_law_spec *s, const float *p) {
    double h = 0;
    for (int i = 0; i < s->V; i++)
        if (p[i] > 0) h -= p[i] * log(p[i]);
    const double cut = s->delta * exp(-h);
    return cut < s->epsilon ? cut : s->epsilon;
}

/* The probability that the rule accepts a draft x with p(x) = px, q(x) = qx:
 * the test is U·q < p (inverted: U·p < q) with U uniform on (0, 1). */
static double accept_probability(const spec_law_spec *s, int x, double px, double qx) {
    const planted_bug bug = s->bug;
    if (bug == PLANT_EOS_DRAFT_UNTESTED && s->stop_at_eos && x == s->eos) return 1.0;
    double num = bug == PLANT_RATIO_INVERTED ? qx : px, den = bug == PLANT_RATIO_INVERTED ? px : qx;
    if (den <= 0) return num > 0 ? 1.0 : 0.0;
    return num >= den ? 1.0 : num / den;
}

/* The law of the correction after a rejection, as planted_accept draws it. */
static void residual(planted_bug bug, const float *p, const float *q, double *row, int V) {
    if (bug == PLANT_RESIDUAL_IS_P) {
        normalised(p, row, V);
        return;
    }
    if (bug == PLANT_REJECT_FROM_Q) {
        normalised(q, row, V);
        return;
    }
    double mass = 0;
    for (int i = 0; i < V; i++) mass += p[i] > q[i] ? (double)p[i] - q[i] : 0;
    if (bug == PLANT_RESIDUAL_UNNORMALISED) { /* the inverse CDF: what the weights miss goes to V − 1 */
        double cum = 0;
        for (int i = 0; i < V; i++) {
            float wi = p[i] > q[i] ? p[i] - q[i] : 0.0f; /* the float the planted code computes */
            row[i] = wi;
            cum += wi;
        }
        if (cum < 1) row[V - 1] += 1 - cum;
        return;
    }
    if (mass <= 0) { /* accept_residual keeps p when p ≤ q everywhere */
        normalised(p, row, V);
        return;
    }
    for (int i = 0; i < V; i++) row[i] = p[i] > q[i] ? ((double)p[i] - q[i]) / mass : 0;
}

/* A node at depth `depth` of a round that proposes K drafts, reached after
 * emitting tokens[0..len) with probability mass. A node at depth d < K draws
 * x from the draft row with probability d(x), accepts it with probability
 * a(x) (min(1, p/q) for the exact rule) and goes on; with the remaining mass
 * it rejects and emits a correction from the residual, which ends the round.
 * The node at depth K emits a bonus token from p and ends the round. With an
 * EOS stop, a branch ends at the EOS it emits: the rest of the window is EOS,
 * whatever the round held. */
static void law_node(law *w, int len, int depth, int K, double mass) {
    const spec_law_spec *s = w->s;
    const int V = s->V;
    if (w->failed || mass <= 0) return;
    if (s->stop_at_eos && len > 0 && len < s->L && w->tokens[len - 1] == s->eos) { /* the run stopped */
        for (int j = len; j < s->L; j++) w->tokens[j] = s->eos;
        len = s->L;
    }
    if (len == s->L) {
        w->joint[enumerate_index(w->tokens, s->L, V)] += mass;
        return;
    }
    float *p = w->p + (size_t)len * V;
    double *row = w->row + (size_t)len * V;
    s->target(s->user, w->tokens, len, p);
    if (depth == K) { /* a leaf: the bonus token */
        const float *bonus = p;
        const int late = s->bug == PLANT_BONUS_FROM_PARENT_LATE && len >= PLANT_LATE_POSITION;
        if ((s->bug == PLANT_BONUS_FROM_PARENT || late) && depth > 0) {
            bonus = w->parent_p + (size_t)len * V;
            s->target(s->user, w->tokens, len - 1, w->parent_p + (size_t)len * V);
        }
        normalised(bonus, row, V);
        for (int y = 0; y < V; y++) {
            w->tokens[len] = y;
            law_round(w, len + 1, mass * row[y]);
        }
        return;
    }
    float *d = w->draw + (size_t)len * V, *q = w->ratio + (size_t)len * V;
    s->draw(s->user, w->tokens, len, depth + 1, d);
    if (s->ratio)
        s->ratio(s->user, w->tokens, len, depth + 1, q);
    else
        memcpy(q, d, (size_t)V * sizeof(float));
    double dsum = 0, reject = 1;
    const double threshold = s->typical ? typical_threshold(s, p) : 0;
    for (int x = 0; x < V; x++) dsum += d[x] > 0 ? d[x] : 0;
    for (int x = 0; x < V && !w->failed; x++) {
        if (!(d[x] > 0)) continue;
        if (!(q[x] > 0)) {
            w->failed = 1;
            sp_fail(w->err, "spec_law: a draft of token %d after %d tokens has q = 0 (the rule would fail)", x, len);
            return;
        }
        const double a = s->typical ? (p[x] > threshold ? 1.0 : 0.0) : accept_probability(s, x, p[x], q[x]);
        double take = (d[x] / dsum) * a;
        reject -= take;
        w->tokens[len] = x;
        law_node(w, len + 1, depth + 1, K, mass * take);
    }
    if (reject <= 1e-15) return; /* rounding: every draft is always accepted */
    /* The recursion above overwrote deeper frames only, so p and q are intact. */
    if (s->typical) { /* the token after the last accepted node, from its p (its parent's under the bug) */
        const float *from = p;
        if (s->bug == PLANT_BONUS_FROM_PARENT && depth > 0) {
            from = w->parent_p + (size_t)len * V;
            s->target(s->user, w->tokens, len - 1, w->parent_p + (size_t)len * V);
        }
        normalised(from, row, V);
    } else {
        residual(s->bug, p, q, row, V);
    }
    for (int y = 0; y < V; y++) {
        w->tokens[len] = y;
        law_round(w, len + 1, mass * reject * row[y]);
    }
}

static void law_round(law *w, int len, double mass) {
    const spec_law_spec *s = w->s;
    const int k = s->round_k ? s->round_k(s->user, w->tokens, len) : s->k;
    int K = k;
    if (s->max_tokens > 0) {
        int remaining = s->max_tokens - len;
        K = remaining > 1 ? (remaining - 1 < k ? remaining - 1 : k) : 0;
    }
    law_node(w, len, 0, K, mass);
}

int spec_law_computes(planted_bug bug) { return bug != PLANT_COMMIT_PARENT_AFTER_TWO; }

int spec_law(const spec_law_spec *s, double *joint, sp_error *err) {
    const int64_t cells = enumerate_cells(s->V, s->L);
    if (s->L < 1 || s->L > ENUM_MAX_LENGTH || cells < 0)
        return sp_fail(err, "spec_law: V = %d, L = %d gives more than %d sequences (or L is outside [1, %d])", s->V,
                       s->L, ENUM_MAX_CELLS, ENUM_MAX_LENGTH);
    if (s->k < 0) return sp_fail(err, "spec_law: k = %d must be ≥ 0", s->k);
    if (!s->target || !s->draw) return sp_fail(err, "spec_law: target and draw rows are required");
    if (!spec_law_computes(s->bug) || (s->typical && s->bug != PLANT_NONE && s->bug != PLANT_BONUS_FROM_PARENT))
        return sp_fail(err, "spec_law: the law under %s is not computed here%s", planted_name(s->bug),
                       s->typical ? " (typical rule)" : "");
    law w;
    memset(&w, 0, sizeof w);
    w.s = s;
    w.joint = joint;
    w.err = err;
    const size_t frame = (size_t)s->L * s->V;
    w.p = sp_xcalloc(frame, sizeof(float), "law p rows");
    w.parent_p = sp_xcalloc(frame, sizeof(float), "law parent rows");
    w.draw = sp_xcalloc(frame, sizeof(float), "law draft rows");
    w.ratio = sp_xcalloc(frame, sizeof(float), "law ratio rows");
    w.row = sp_xcalloc(frame, sizeof(double), "law rows");
    memset(joint, 0, (size_t)cells * sizeof(double));
    law_round(&w, 0, 1.0);
    free(w.p);
    free(w.parent_p);
    free(w.draw);
    free(w.ratio);
    free(w.row);
    return w.failed ? -1 : 0;
}
