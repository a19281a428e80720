/* test_sampler.c — the processed distribution against hand-computed cases
 * and the second implementation the laws use (processed_law.h), the edge cases, the
 * Philox mapping the CUDA sampler must reproduce, and the exponential race's
 * frequencies (chi-square with a fixed seed and a planted-bug control). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "philox.h"
#include "processed_law.h"
#include "sampler.h"
#include "stats.h"

/* probs are rounded once from double to float: half an ulp of 1 is 6e-8,
 * and 1e-6 leaves room for the double sums without hiding a wrong cut
 * (a wrong cut moves some entry by at least 1e-3 in every case below). */
#define PROB_TOL 1e-6

static sampler_params params(float t, int k, float top_p, float min_p) {
    sampler_params sp = {.temperature = t, .top_k = k, .top_p = top_p, .min_p = min_p};
    return sp;
}

static void expect_probs(const float *got, const double *want, int V, const char *what) {
    for (int i = 0; i < V; i++)
        ck_assert_msg(fabs((double)got[i] - want[i]) <= PROB_TOL, "%s: probs[%d] = %.8f, want %.8f", what, i,
                      (double)got[i], want[i]);
}

/* logits whose softmax at temperature 1 is exactly proportional to w */
static void log_of(const double *w, float *logits, int V) {
    for (int i = 0; i < V; i++) logits[i] = (float)log(w[i]);
}

/* ---- parameters ---------------------------------------------------------------- */

START_TEST(test_validate) {
    sp_error err;
    sampler_params ok = sampler_defaults();
    ck_assert_int_eq(sampler_validate(&ok, &err), 0);
    ck_assert(ok.temperature == 1.0f && ok.top_k == 0 && ok.top_p == 1.0f && ok.min_p == 0.0f);
    static const struct {
        sampler_params sp;
        const char *needle;
    } bad[] = {
        {{-0.5f, 0, 1.0f, 0.0f}, "temperature must be a finite number >= 0"},
        {{INFINITY, 0, 1.0f, 0.0f}, "temperature"},
        {{NAN, 0, 1.0f, 0.0f}, "temperature"},
        {{1.0f, -1, 1.0f, 0.0f}, "top_k must be >= 0 (0 = off), got -1"},
        {{1.0f, 0, 0.0f, 0.0f}, "top_p must be in (0, 1]"},
        {{1.0f, 0, 1.5f, 0.0f}, "top_p must be in (0, 1] (1 = off), got 1.5"},
        {{1.0f, 0, NAN, 0.0f}, "top_p"},
        {{1.0f, 0, 1.0f, 1.0f}, "min_p must be in [0, 1)"},
        {{1.0f, 0, 1.0f, -0.1f}, "min_p"},
    };
    for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_int_eq(sampler_validate(&bad[i].sp, &err), -1);
        ck_assert_msg(strstr(err.msg, bad[i].needle) != NULL, "case %u: '%s'", i, err.msg);
    }
    ck_assert_int_eq(sampler_validate(NULL, &err), -1);
    /* sampler_probs refuses them too: an all-zero row, never a guess */
    float logits[3] = {1, 2, 3}, probs[3];
    sampler_probs(&bad[0].sp, logits, probs, 3);
    for (int i = 0; i < 3; i++) ck_assert(probs[i] == 0.0f);
}
END_TEST

/* ---- each cut by hand ----------------------------------------------------------- */

START_TEST(test_plain_softmax_and_temperature) {
    static const double w[4] = {0.1, 0.2, 0.3, 0.4};
    float logits[4], probs[4];
    log_of(w, logits, 4);
    sampler_params sp = params(1.0f, 0, 1.0f, 0.0f);
    sampler_probs(&sp, logits, probs, 4);
    expect_probs(probs, w, 4, "softmax");
    /* temperature 2 takes square roots: p ∝ sqrt(w) */
    double s = 0, want[4];
    for (int i = 0; i < 4; i++) s += want[i] = sqrt(w[i]);
    for (int i = 0; i < 4; i++) want[i] /= s;
    sp.temperature = 2.0f;
    sampler_probs(&sp, logits, probs, 4);
    expect_probs(probs, want, 4, "temperature 2");
    /* temperature 0.5 squares: p ∝ w² */
    s = 0;
    for (int i = 0; i < 4; i++) s += want[i] = w[i] * w[i];
    for (int i = 0; i < 4; i++) want[i] /= s;
    sp.temperature = 0.5f;
    sampler_probs(&sp, logits, probs, 4);
    expect_probs(probs, want, 4, "temperature 0.5");
}
END_TEST

START_TEST(test_top_k) {
    float probs[5];
    /* logits 1,2,3,4 with k = 2: softmax over {3, 4} */
    float l4[4] = {1, 2, 3, 4};
    sampler_params sp = params(1.0f, 2, 1.0f, 0.0f);
    sampler_probs(&sp, l4, probs, 4);
    double e = exp(1.0), want4[4] = {0, 0, 1 / (1 + e), e / (1 + e)};
    expect_probs(probs, want4, 4, "top-k 2");
    /* ties at the boundary: 2,1,1,1,0 with k = 2. The 2nd largest is 1, so all
     * three 1s stay (a sort-and-truncate sampler would keep one of them). */
    float tied[5] = {2, 1, 1, 1, 0};
    sampler_probs(&sp, tied, probs, 5);
    double d = e + 3, want5[5] = {e / d, 1 / d, 1 / d, 1 / d, 0};
    expect_probs(probs, want5, 5, "top-k ties");
    /* k ≥ V is off; k = 1 keeps the maximum (and its ties) only */
    sp.top_k = 5;
    sampler_probs(&sp, tied, probs, 5);
    ck_assert(probs[4] > 0.0f);
    sp.top_k = 1;
    float two_max[4] = {3, 1, 3, 2};
    sampler_probs(&sp, two_max, probs, 4);
    static const double half[4] = {0.5, 0, 0.5, 0};
    expect_probs(probs, half, 4, "top-k 1 with tied maxima");
}
END_TEST

START_TEST(test_top_p) {
    /* p = .4 .2 .2 .1 .1 */
    static const double w[5] = {0.4, 0.2, 0.2, 0.1, 0.1};
    float logits[5], probs[5];
    log_of(w, logits, 5);
    sampler_params sp = params(1.0f, 0, 0.5f, 0.0f);
    /* top_p 0.5: the mass at levels ≥ 0.4 is 0.4 < 0.5, at ≥ 0.2 it is 0.8, so
     * τ = 0.2 and both tied 0.2s stay: .4 .2 .2 renormalised */
    sampler_probs(&sp, logits, probs, 5);
    static const double want_half[5] = {0.5, 0.25, 0.25, 0, 0};
    expect_probs(probs, want_half, 5, "top-p 0.5 (ties at the cut)");
    sp.top_p = 0.35f; /* 0.4 alone reaches it */
    sampler_probs(&sp, logits, probs, 5);
    static const double want_one[5] = {1, 0, 0, 0, 0};
    expect_probs(probs, want_one, 5, "top-p 0.35");
    sp.top_p = 0.85f; /* needs the 0.1 level: both 0.1s stay, nothing is cut */
    sampler_probs(&sp, logits, probs, 5);
    expect_probs(probs, w, 5, "top-p 0.85");
    sp.top_p = 1.0f; /* off */
    sampler_probs(&sp, logits, probs, 5);
    expect_probs(probs, w, 5, "top-p 1");
    /* top-k then top-p: k = 4 keeps all five (the 4th largest is a tied 0.1);
     * k = 3 keeps .4 .2 .2, renormalised .5 .25 .25, where top-p 0.6 needs
     * the 0.25 level (0.5 alone is short) */
    sp = params(1.0f, 4, 1.0f, 0.0f);
    sampler_probs(&sp, logits, probs, 5);
    expect_probs(probs, w, 5, "top-k 4 with a tie at the boundary");
    sp = params(1.0f, 3, 0.6f, 0.0f);
    sampler_probs(&sp, logits, probs, 5);
    expect_probs(probs, want_half, 5, "top-k 3 then top-p 0.6");
    sp = params(1.0f, 3, 0.45f, 0.0f); /* the top's 0.5 alone reaches 0.45 */
    sampler_probs(&sp, logits, probs, 5);
    expect_probs(probs, want_one, 5, "top-k 3 then top-p 0.45");
}
END_TEST

START_TEST(test_min_p) {
    static const double w[5] = {0.4, 0.2, 0.2, 0.1, 0.1};
    float logits[5], probs[5];
    log_of(w, logits, 5);
    sampler_params sp = params(1.0f, 0, 1.0f, 0.3f); /* keep p ≥ 0.3·0.4 = 0.12 */
    sampler_probs(&sp, logits, probs, 5);
    static const double want[5] = {0.5, 0.25, 0.25, 0, 0};
    expect_probs(probs, want, 5, "min-p 0.3");
    sp.min_p = 0.6f; /* keep p ≥ 0.24 */
    sampler_probs(&sp, logits, probs, 5);
    static const double one[5] = {1, 0, 0, 0, 0};
    expect_probs(probs, one, 5, "min-p 0.6");
    sp.min_p = 0.2f; /* keep p ≥ 0.08: everything */
    sampler_probs(&sp, logits, probs, 5);
    expect_probs(probs, w, 5, "min-p 0.2");
    /* min-p and top-p together keep the intersection, in either reading */
    sp = params(1.0f, 0, 0.85f, 0.3f);
    sampler_probs(&sp, logits, probs, 5);
    expect_probs(probs, want, 5, "top-p 0.85 with min-p 0.3");
}
END_TEST

/* ---- temperature limits and edge cases ------------------------------------------- */

START_TEST(test_temperature_zero) {
    float logits[6] = {0.5f, 3.0f, -INFINITY, 3.0f, NAN, 1.0f}, probs[6];
    sampler_params sp = params(0.0f, 2, 0.3f, 0.5f); /* the cuts do not apply */
    sampler_probs(&sp, logits, probs, 6);
    static const double want[6] = {0, 1, 0, 0, 0, 0}; /* lowest index of the tied maximum */
    expect_probs(probs, want, 6, "temperature 0");
    ck_assert_int_eq(sampler_argmax(logits, 6), 1);
    /* a NaN first does not win */
    float nan_first[3] = {NAN, -2.0f, -1.0f};
    ck_assert_int_eq(sampler_argmax(nan_first, 3), 2);
    /* +inf wins */
    float inf[3] = {1.0f, INFINITY, 2.0f};
    ck_assert_int_eq(sampler_argmax(inf, 3), 1);
}
END_TEST

START_TEST(test_temperature_limits) {
    float logits[5] = {-3.0f, 10.0f, -INFINITY, 0.0f, 25.0f}, probs[5];
    /* very large temperature: uniform over the finite entries */
    sampler_params sp = params(1e30f, 0, 1.0f, 0.0f);
    sampler_probs(&sp, logits, probs, 5);
    static const double uniform[5] = {0.25, 0.25, 0, 0.25, 0.25};
    expect_probs(probs, uniform, 5, "temperature 1e30");
    /* very small positive temperature: all mass on the maximum, computed in
     * double without overflow (25/1e-30 is beyond float) */
    sp.temperature = 1e-30f;
    sampler_probs(&sp, logits, probs, 5);
    static const double peak[5] = {0, 0, 0, 0, 1};
    expect_probs(probs, peak, 5, "temperature 1e-30");
    /* … but tied maxima share it, unlike temperature 0 */
    float tied[3] = {2.0f, 5.0f, 5.0f};
    sampler_probs(&sp, tied, probs, 3);
    static const double shared[3] = {0, 0.5, 0.5};
    expect_probs(probs, shared, 3, "temperature 1e-30, tied maxima");
}
END_TEST

START_TEST(test_masked_rows) {
    float probs[4];
    sampler_params all_cuts = params(0.7f, 2, 0.5f, 0.2f);
    /* all but one masked: one-hot on the survivor, whatever the cuts */
    float one_left[4] = {-INFINITY, -INFINITY, 3.0f, -INFINITY};
    static const double onehot[4] = {0, 0, 1, 0};
    sampler_probs(&all_cuts, one_left, probs, 4);
    expect_probs(probs, onehot, 4, "all but one masked");
    sampler_params plain = sampler_defaults();
    sampler_probs(&plain, one_left, probs, 4);
    expect_probs(probs, onehot, 4, "all but one masked, no cuts");
    rng_site site = {.seed = 1, .purpose = RNG_SAMPLE, .index = 0};
    for (site.index = 0; site.index < 100; site.index++) ck_assert_int_eq(sampler_sample(probs, 4, site), 2);
    /* everything masked: no distribution at all, at any temperature */
    float none[4] = {-INFINITY, -INFINITY, NAN, -INFINITY};
    sampler_params t0 = params(0.0f, 0, 1.0f, 0.0f);
    sampler_params *each[3] = {&plain, &all_cuts, &t0};
    for (int k = 0; k < 3; k++) {
        sampler_probs(each[k], none, probs, 4);
        for (int i = 0; i < 4; i++) ck_assert(probs[i] == 0.0f);
        ck_assert_int_eq(sampler_sample(probs, 4, site), -1);
    }
    ck_assert_int_eq(sampler_argmax(none, 4), -1);
    /* NaN counts as masked; −inf entries get exactly 0 */
    float some[4] = {NAN, 0.0f, -INFINITY, 0.0f};
    sampler_probs(&plain, some, probs, 4);
    static const double halves[4] = {0, 0.5, 0, 0.5};
    expect_probs(probs, halves, 4, "NaN and -inf");
    ck_assert(probs[0] == 0.0f && probs[2] == 0.0f);
    /* +inf entries share the mass (the limit of the softmax) */
    float infs[4] = {INFINITY, 1e30f, INFINITY, 0.0f};
    sampler_probs(&plain, infs, probs, 4);
    static const double inf_half[4] = {0.5, 0, 0.5, 0};
    expect_probs(probs, inf_half, 4, "+inf logits");
    /* probs may alias logits */
    float alias[3] = {0.0f, (float)log(3.0), -INFINITY};
    sampler_probs(&plain, alias, alias, 3);
    static const double quarter[3] = {0.25, 0.75, 0};
    expect_probs(alias, quarter, 3, "in place");
}
END_TEST

/* ---- the definitions read literally --------------------------------------------- */

START_TEST(test_matches_definitions_and_order_free) {
    /* 400 random rows of 12 logits on a coarse grid (many ties), random cut
     * settings; sampler_probs must keep exactly the entries the literal
     * definitions keep, with the same values, and permuting the logits must
     * permute the result. Cut points land on a tie or clear of rounding: the
     * logits are multiples of 0.5 and top_p is never a cumulative mass. */
    enum { V = 12 };
    uint32_t w[4];
    static const float top_ps[5] = {1.0f, 0.9f, 0.7f, 0.45f, 0.2f};
    static const float min_ps[4] = {0.0f, 0.05f, 0.3f, 0.7f};
    static const float temps[3] = {1.0f, 0.6f, 2.5f};
    int nontrivial = 0;
    for (int rep = 0; rep < 400; rep++) {
        philox_words(2718, 1, (uint64_t)rep, w);
        float logits[V], perm_logits[V], probs[V], perm_probs[V];
        int perm[V];
        for (int i = 0; i < V; i++) {
            philox_words(2718, 2, (uint64_t)(rep * V + i), w);
            logits[i] = 0.5f * (float)(w[0] % 7);
            perm[i] = i;
        }
        for (int i = V - 1; i > 0; i--) { /* Fisher–Yates from Philox */
            philox_words(2718, 3, (uint64_t)(rep * V + i), w);
            int j = (int)(w[0] % (uint32_t)(i + 1)), t = perm[i];
            perm[i] = perm[j], perm[j] = t;
        }
        for (int i = 0; i < V; i++) perm_logits[i] = logits[perm[i]];
        philox_words(2718, 4, (uint64_t)rep, w);
        sampler_params sp = params(temps[w[0] % 3], (int)(w[1] % 6), top_ps[w[2] % 5], min_ps[w[3] % 4]);
        float want[V];
        processed_law(&sp, logits, want, V);
        sampler_probs(&sp, logits, probs, V);
        sampler_probs(&sp, perm_logits, perm_probs, V);
        int kept = 0;
        for (int i = 0; i < V; i++) {
            ck_assert_msg((probs[i] > 0) == (want[i] > 0), "rep %d entry %d: kept %d, definition keeps %d", rep, i,
                          probs[i] > 0, want[i] > 0);
            ck_assert_msg(probs[i] == want[i], "rep %d entry %d: %.9g vs %.9g", rep, i, (double)probs[i],
                          (double)want[i]);
            /* the sums run in another order, so allow a float ulp or two */
            ck_assert_msg(fabsf(perm_probs[i] - probs[perm[i]]) <= 2.5e-7f * probs[perm[i]],
                          "rep %d: permuted entry %d differs", rep, i);
            ck_assert((perm_probs[i] > 0) == (probs[perm[i]] > 0));
            kept += probs[i] > 0;
        }
        nontrivial += kept > 1 && kept < V;
    }
    ck_assert_int_ge(nontrivial, 200); /* the cuts were actually exercised */
}
END_TEST

/* processed_law.h's copy against sampler_probs on 1 200 rows of random float logits (no ties) and random cut settings,
 * V from 2 to 40, bit for bit (top_p is never within rounding of a cumulative mass there). The comparison has power:
 * on at least a hundred of the rows the k-th entry carries mass, so a sampler that dropped it (a slip from z ≥ κ to
 * z > κ) would differ from the law, as a copy with that slip is shown to. */
START_TEST(test_law_copy_agrees_bit_for_bit) {
    enum { ROWS = 1200, VMAX = 40 };
    static const float top_ps[4] = {1.0f, 0.95f, 0.8f, 0.5f};
    static const float min_ps[4] = {0.0f, 0.02f, 0.1f, 0.4f};
    uint32_t w[4];
    int kth_matters = 0;
    for (int rep = 0; rep < ROWS; rep++) {
        philox_words(4243, 1, (uint64_t)rep, w);
        const int V = 2 + (int)(w[0] % (VMAX - 1));
        sampler_params sp = params(0.3f + (float)(w[1] % 100) / 40.0f, (int)(w[2] % (uint32_t)(V + 1)),
                                   top_ps[w[3] % 4], min_ps[(w[3] >> 8) % 4]);
        float logits[VMAX], probs[VMAX], law[VMAX], slipped[VMAX];
        for (int i = 0; i < V; i++) {
            philox_words(4243, 2, (uint64_t)(rep * VMAX + i), w);
            logits[i] = 4.0f * ((float)w[0] * 0x1p-32f) - 2.0f;
        }
        sampler_probs(&sp, logits, probs, V);
        processed_law(&sp, logits, law, V);
        for (int i = 0; i < V; i++)
            ck_assert_msg(probs[i] == law[i], "row %d (V %d, T %g, top-k %d, top-p %g, min-p %g) entry %d: %.9g vs %.9g",
                          rep, V, (double)sp.temperature, sp.top_k, (double)sp.top_p, (double)sp.min_p, i,
                          (double)probs[i], (double)law[i]);
        if (sp.top_k > 1 && sp.top_k < V) { /* the slip keeps k − 1 entries: the law of top-k one smaller */
            sampler_params fewer = sp;
            fewer.top_k = sp.top_k - 1;
            processed_law(&fewer, logits, slipped, V);
            int differs = 0;
            for (int i = 0; i < V; i++) differs |= slipped[i] != law[i];
            kth_matters += differs;
        }
    }
    ck_assert_int_ge(kth_matters, 100);
}
END_TEST

START_TEST(test_renormalised) {
    /* random float logits (no ties), every cut combination: the result sums
     * to 1 (float rounding of ≤ 64 entries: 1e-6), and kept entries keep the
     * softmax ratios exp(z_i − z_j) (1e-5 relative: float outputs). */
    enum { V = 64 };
    uint32_t w[4];
    for (int rep = 0; rep < 100; rep++) {
        float logits[V], probs[V];
        for (int i = 0; i < V; i++) {
            philox_words(31, 5, (uint64_t)(rep * V + i), w);
            logits[i] = 8.0f * philox_unit(w[0]) - 4.0f;
        }
        philox_words(31, 6, (uint64_t)rep, w);
        float T = 0.3f + 2.0f * philox_unit(w[0]);
        sampler_params sp = params(T, (int)(w[1] % 40), 0.3f + 0.7f * philox_unit(w[2]), 0.2f * philox_unit(w[3]));
        sampler_probs(&sp, logits, probs, V);
        double sum = 0;
        int top = sampler_argmax(logits, V);
        for (int i = 0; i < V; i++) {
            sum += probs[i];
            if (probs[i] > 0) {
                double ratio = (double)probs[i] / probs[top], want = exp(((double)logits[i] - logits[top]) / T);
                ck_assert_msg(fabs(ratio / want - 1.0) < 1e-5, "rep %d entry %d: ratio %g want %g", rep, i, ratio,
                              want);
            }
        }
        ck_assert_msg(fabs(sum - 1.0) < 1e-6, "rep %d sums to %.9f", rep, sum);
        ck_assert(probs[top] > 0);
    }
}
END_TEST

/* ---- the race ------------------------------------------------------------------- */

/* The mapping of sampler.h written out independently: the CUDA sampler must
 * produce exactly these numbers. */
static uint32_t site_word(rng_site s, uint32_t block, int word) {
    uint32_t ctr[4] = {block, (uint32_t)s.index, (uint32_t)(s.index >> 32), s.purpose};
    uint32_t key[2] = {(uint32_t)s.seed, (uint32_t)(s.seed >> 32)}, out[4];
    philox4x32_10(ctr, key, out);
    return out[word];
}

START_TEST(test_philox_mapping) {
    rng_site site = {.seed = 0x123456789abcdef0ull, .purpose = RNG_RESIDUAL, .index = 0x500000007ull};
    ck_assert(rng_uniform(site) == philox_unit(site_word(site, RNG_UNIFORM_BLOCK, 0)));
    /* the race's exponentials, bit for bit (a 23-bit uniform would differ) */
    for (int token = 0; token < 9; token++) {
        double want = -log(((double)site_word(site, (uint32_t)token >> 2, token & 3) + 0.5) / 4294967296.0);
        ck_assert_msg(rng_race_exponential(site, token) == want, "token %d: %.17g vs %.17g", token,
                      rng_race_exponential(site, token), want);
    }
    /* a race over 11 tokens recomputed by hand */
    float probs[11] = {0.05f, 0.1f, 0.0f, 0.2f, 0.05f, 0.1f, 0.1f, 0.15f, 0.05f, 0.2f, 0.0f};
    for (uint64_t idx = 0; idx < 50; idx++) {
        site.index = 0x500000000ull + idx;
        int best = -1;
        double best_r = 0;
        for (int i = 0; i < 11; i++) {
            if (probs[i] <= 0) continue;
            double u = ((double)site_word(site, (uint32_t)(i >> 2), i & 3) + 0.5) / 4294967296.0;
            double r = probs[i] / -log(u);
            if (r > best_r) best_r = r, best = i;
        }
        ck_assert_int_eq(sampler_sample(probs, 11, site), best);
    }
    /* rng_uniform lies in (0, 1) and differs across purposes and indices */
    rng_site a = {.seed = 9, .purpose = RNG_ACCEPT, .index = 4}, b = a, c = a;
    b.purpose = RNG_DRAFT;
    c.index = 5;
    ck_assert(rng_uniform(a) > 0.0f && rng_uniform(a) < 1.0f);
    ck_assert(rng_uniform(a) != rng_uniform(b) || rng_uniform(a) != rng_uniform(c));
}
END_TEST

START_TEST(test_sample_determinism) {
    float probs[6] = {0.3f, 0.1f, 0.2f, 0.15f, 0.05f, 0.2f};
    rng_site site = {.seed = 42, .purpose = RNG_SAMPLE, .index = 0};
    int first[200], hist[6] = {0}, same_other_seed = 0, same_other_purpose = 0;
    for (int i = 0; i < 200; i++) {
        site.index = (uint64_t)i;
        first[i] = sampler_sample(probs, 6, site);
        ck_assert_int_eq(sampler_sample(probs, 6, site), first[i]); /* same site, same token */
        hist[first[i]]++;
        rng_site s2 = site, s3 = site;
        s2.seed = 43;
        s3.purpose = RNG_DRAFT;
        same_other_seed += sampler_sample(probs, 6, s2) == first[i];
        same_other_purpose += sampler_sample(probs, 6, s3) == first[i];
    }
    for (int t = 0; t < 6; t++) ck_assert_msg(hist[t] > 0, "token %d never drawn in 200", t);
    /* other seeds and purposes are other streams: they agree only as often as
     * two independent draws do (Σ p² = 0.205, so about 41 of 200) */
    ck_assert_int_lt(same_other_seed, 80);
    ck_assert_int_lt(same_other_purpose, 80);
    /* the race draws in proportion: doubling every entry changes nothing */
    float doubled[6];
    for (int i = 0; i < 6; i++) doubled[i] = 2.0f * probs[i];
    for (int i = 0; i < 200; i++) {
        site.index = (uint64_t)i;
        ck_assert_int_eq(sampler_sample(doubled, 6, site), first[i]);
    }
}
END_TEST

START_TEST(test_zero_probability_never_wins) {
    /* 20000 draws over 32 tokens where every other token has probability 0,
     * one is negative and one is NaN: none of those is ever chosen, not even
     * next to a 1e-30 entry. */
    enum { V = 32 };
    float probs[V];
    for (int i = 0; i < V; i++) probs[i] = (i % 2) ? 0.0f : 1.0f / 16;
    probs[4] = -0.5f;
    probs[8] = NAN;
    probs[30] = 1e-30f;
    rng_site site = {.seed = 5, .purpose = RNG_SAMPLE};
    for (site.index = 0; site.index < 20000; site.index++) {
        int t = sampler_sample(probs, V, site);
        ck_assert_msg(t >= 0 && t % 2 == 0 && t != 4 && t != 8, "index %llu drew token %d",
                      (unsigned long long)site.index, t);
    }
    float zeros[3] = {0, 0, 0};
    ck_assert_int_eq(sampler_sample(zeros, 3, site), -1);
}
END_TEST

/* The planted bug of the frequency test: a race run on p² instead of p. */
static int squared_race(const float *probs, int V, rng_site site) {
    float sq[64];
    for (int i = 0; i < V; i++) sq[i] = probs[i] * probs[i];
    return sampler_sample(sq, V, site);
}

/* N draws at consecutive indices into counts[V]. */
static void race_counts(const float *probs, int V, int64_t N, int squared, uint64_t seed, int64_t *counts) {
    for (int i = 0; i < V; i++) counts[i] = 0;
    rng_site site = {.seed = seed, .purpose = RNG_TEST};
    for (site.index = 0; site.index < (uint64_t)N; site.index++) {
        int t = squared ? squared_race(probs, V, site) : sampler_sample(probs, V, site);
        ck_assert(t >= 0);
        counts[t]++;
    }
}

START_TEST(test_race_frequencies) {
    /* Chi-square goodness of fit of 120000 race draws against p (10 tokens,
     * one of them impossible). Sample size: df 8 after dropping the zero cell;
     * stats_n_gof(8, α = 1e-3, power 0.99, w = 0.02) — power 0.99 against
     * every alternative at TV ≥ 0.01, since w ≥ 2·TV — gives λ = 46.85 and
     * n = 117122 (checked below). The planted bug (the race on p²) must be
     * rejected at p < 1e-12 at the same n. */
    enum { V = 10 };
    const int64_t N = 120000;
    static const float pf[V] = {0.3f, 0.2f, 0.15f, 0.1f, 0.08f, 0.07f, 0.05f, 0.03f, 0.02f, 0.0f};
    double p[V];
    for (int i = 0; i < V; i++) p[i] = pf[i];
    int64_t need;
    sp_error err;
    ck_assert_int_eq(stats_n_gof(8, 1e-3, 0.99, 0.02, &need, &err), 0);
    ck_assert_msg(need <= N, "power target needs %lld draws", (long long)need);
    int64_t counts[V];
    stats_result res;
    race_counts(pf, V, N, 0, 20240501, counts);
    ck_assert(counts[9] == 0);
    ck_assert_int_eq(stats_gof(counts, p, V, STATS_PEARSON, STATS_MIN_EXPECTED, &res, &err), 0);
    ck_assert_int_eq(res.df, 8);
    ck_assert_msg(res.p_value > 1e-3, "the race rejected: X² %.2f p %.3g", res.statistic, res.p_value);
    stats_tv tv;
    ck_assert_int_eq(stats_tv_upper(counts, p, V, 1e-3, &tv, &err), 0);
    ck_assert_msg(tv.upper < 0.02, "TV upper bound %.4f", tv.upper);
    /* negative control, same seed and n */
    race_counts(pf, V, N, 1, 20240501, counts);
    ck_assert_int_eq(stats_gof(counts, p, V, STATS_PEARSON, STATS_MIN_EXPECTED, &res, &err), 0);
    ck_assert_msg(res.p_value < 1e-12, "the p² race passed: p %.3g", res.p_value);
}
END_TEST

START_TEST(test_race_after_cuts) {
    /* The whole path on 64 tokens: processed distribution (temperature, top-k,
     * top-p, min-p with ties) then the race, 60000 draws, G-test with pooling
     * of the rare tokens. Negative controls at the same n: the race on the
     * distribution before the cuts (a sampler that forgets to apply them:
     * caught by draws outside the kept set), and the race on p^1.25 (same
     * support, wrong shape: caught by the statistic). */
    enum { V = 64 };
    const int64_t N = 60000;
    float logits[V], probs[V], raw[V];
    uint32_t w[4];
    for (int i = 0; i < V; i++) {
        philox_words(77, 1, (uint64_t)i, w);
        logits[i] = 0.25f * (float)(w[0] % 24); /* ties on a grid */
    }
    sampler_params sp = params(0.8f, 40, 0.9f, 0.02f);
    sampler_probs(&sp, logits, probs, V);
    sampler_params none = params(0.8f, 0, 1.0f, 0.0f);
    sampler_probs(&none, logits, raw, V);
    double p[V];
    for (int i = 0; i < V; i++) p[i] = probs[i];
    int64_t counts[V];
    stats_result res;
    sp_error err;
    race_counts(probs, V, N, 0, 8, counts);
    for (int i = 0; i < V; i++) ck_assert(probs[i] > 0 || counts[i] == 0);
    ck_assert_int_eq(stats_gof(counts, p, V, STATS_G, STATS_MIN_EXPECTED, &res, &err), 0);
    ck_assert_msg(res.p_value > 1e-3, "G %.2f df %d p %.3g", res.statistic, res.df, res.p_value);
    rng_site site = {.seed = 8, .purpose = RNG_TEST};
    for (int i = 0; i < V; i++) counts[i] = 0;
    for (site.index = 0; site.index < (uint64_t)N; site.index++) counts[sampler_sample(raw, V, site)]++;
    ck_assert_int_eq(stats_gof(counts, p, V, STATS_G, STATS_MIN_EXPECTED, &res, &err), 0);
    ck_assert_msg(res.p_value < 1e-12, "the uncut race passed: p %.3g", res.p_value);
    /* a subtler bug with the same support: the temperature applied twice
     * (p^1.25, as if the kept logits were divided by 0.8 once more). The
     * plan for rejecting it at α = 1e-12 with power 0.9999 must fit in N. */
    float twice[V];
    double q[V], qs = 0;
    for (int i = 0; i < V; i++) twice[i] = probs[i] > 0 ? powf(probs[i], 1.25f) : 0.0f;
    for (int i = 0; i < V; i++) qs += q[i] = twice[i];
    for (int i = 0; i < V; i++) q[i] /= qs;
    stats_plan plan;
    ck_assert_int_eq(stats_plan_gof(p, q, V, 1e-12, 0.9999, STATS_MIN_EXPECTED, &plan, &err), 0);
    ck_assert_msg(plan.n <= N, "rejecting p^1.25 needs %lld draws", (long long)plan.n);
    for (int i = 0; i < V; i++) counts[i] = 0;
    for (site.index = 0; site.index < (uint64_t)N; site.index++) counts[sampler_sample(twice, V, site)]++;
    ck_assert_int_eq(stats_gof(counts, p, V, STATS_G, STATS_MIN_EXPECTED, &res, &err), 0);
    ck_assert(res.impossible == 0);
    ck_assert_msg(res.p_value < 1e-12, "the twice-tempered race passed: G %.1f p %.3g", res.statistic, res.p_value);
}
END_TEST

START_TEST(test_uniform_is_uniform) {
    /* rng_uniform over 16 equal bins, 64000 draws: chi-square p > 1e-3. */
    int64_t counts[16] = {0};
    double p[16];
    for (int i = 0; i < 16; i++) p[i] = 1.0 / 16;
    rng_site site = {.seed = 3, .purpose = RNG_ACCEPT};
    for (site.index = 0; site.index < 64000; site.index++) counts[(int)(rng_uniform(site) * 16.0f)]++;
    stats_result res;
    sp_error err;
    ck_assert_int_eq(stats_gof(counts, p, 16, STATS_PEARSON, STATS_MIN_EXPECTED, &res, &err), 0);
    ck_assert_msg(res.p_value > 1e-3, "X² %.2f p %.3g", res.statistic, res.p_value);
}
END_TEST

/* ---- the order statistics against a full sort -------------------------------------- */

static int desc(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* τ as the walk over all V weights sorted descending (sorted[V]) finds it: the definition the selection must
 * reproduce to the bit. */
static double top_p_by_sort(const double *sorted, int V, double S, double top_p) {
    const double target = top_p * S;
    double cum = 0.0;
    for (int i = 0; i < V && sorted[i] > 0.0;) {
        const double level = sorted[i];
        while (i < V && sorted[i] == level) cum += sorted[i++];
        if (cum >= target) return level;
    }
    return 0.0;
}

/* Rows of 5000 and 250000 weights, flat and peaked, with long runs of ties (the values on a grid) and zeros, at
 * top_p values that end the walk inside the first 1024, past it, at a group straddling the first 1024, and never
 * (top_p·S above every partial sum): the selection's τ and κ are the full sort's, bit for bit. */
START_TEST(test_order_statistics_match_a_full_sort) {
    static const int sizes[2] = {5000, 250000};
    static const double top_ps[6] = {0.05, 0.5, 0.9, 0.99, 0.999999, 1.0 + 1e-12};
    static const int grids[3] = {0, 64, 4}; /* 0: continuous values; else values on a grid of that many levels */
    uint32_t w[4];
    int past_first = 0;
    for (int si = 0; si < 2; si++) {
        const int V = sizes[si];
        double *e = malloc((size_t)V * sizeof *e), *scratch = malloc((size_t)V * sizeof *scratch);
        double *sorted = malloc((size_t)V * sizeof *sorted);
        for (int g = 0; g < 3; g++)
            for (int peaked = 0; peaked < 2; peaked++) {
                double S = 0.0;
                for (int i = 0; i < V; i++) {
                    philox_words(777, (uint64_t)(si * 8 + g * 2 + peaked), (uint64_t)i, w);
                    double u = (w[0] + 0.5) * 0x1p-32;
                    if (grids[g]) u = floor(u * grids[g]) / grids[g];
                    e[i] = w[1] % 10 == 0 ? 0.0 : peaked ? exp(-30.0 * u) : u;
                    S += e[i];
                }
                memcpy(sorted, e, (size_t)V * sizeof *sorted);
                qsort(sorted, (size_t)V, sizeof *sorted, desc);
                for (int t = 0; t < 6; t++) {
                    const double want = top_p_by_sort(sorted, V, S, top_ps[t]);
                    const double got = sampler_top_p_threshold(e, V, S, top_ps[t], scratch);
                    ck_assert_msg(got == want, "V %d grid %d peaked %d top_p %g: tau %.17g, a full sort gives %.17g", V,
                                  grids[g], peaked, top_ps[t], got, want);
                    int above = 0;
                    for (int i = 0; i < V; i++) above += e[i] > want;
                    past_first += above >= 1024;
                }
                for (int k = 1; k <= V; k = k < 16 ? k + 1 : k * 7)
                    ck_assert_msg(sampler_kth_largest(e, V, k, scratch) == sorted[k - 1], "V %d k %d", V, k);
            }
        free(e), free(scratch), free(sorted);
    }
    ck_assert_int_ge(past_first, 6); /* walks that went past the first selection were exercised */
}
END_TEST

Suite *sampler_suite(void) {
    Suite *s = suite_create("sampler");
    TCase *cuts = harness_tcase("cuts", 10);
    tcase_add_test(cuts, test_validate);
    tcase_add_test(cuts, test_plain_softmax_and_temperature);
    tcase_add_test(cuts, test_top_k);
    tcase_add_test(cuts, test_top_p);
    tcase_add_test(cuts, test_min_p);
    tcase_add_test(cuts, test_temperature_zero);
    tcase_add_test(cuts, test_temperature_limits);
    tcase_add_test(cuts, test_masked_rows);
    tcase_add_test(cuts, test_matches_definitions_and_order_free);
    tcase_add_test(cuts, test_law_copy_agrees_bit_for_bit);
    tcase_add_test(cuts, test_renormalised);
    suite_add_tcase(s, cuts);
    TCase *large = harness_tcase("order statistics", 60);
    tcase_add_test(large, test_order_statistics_match_a_full_sort);
    suite_add_tcase(s, large);
    TCase *race = harness_tcase("race", 60);
    tcase_add_test(race, test_philox_mapping);
    tcase_add_test(race, test_sample_determinism);
    tcase_add_test(race, test_zero_probability_never_wins);
    tcase_add_test(race, test_race_frequencies);
    tcase_add_test(race, test_race_after_cuts);
    tcase_add_test(race, test_uniform_is_uniform);
    suite_add_tcase(s, race);
    return s;
}
