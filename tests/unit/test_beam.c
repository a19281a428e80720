/* test_beam.c — beam search (reference/beam.c) on micro models: width 1 is greedy decoding, hand-computed cases on
 * a bigram model whose probabilities the test sets, KV blocks shared copy-on-write between beams, and bad options.
 * The comparisons against brute force are in test_beam_brute.c. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "beam.h"
#include "decode.h"
#include "fixtures.h"
#include "footprint.h"
#include "harness.h"
#include "reference_target.h"

/* ---- width 1 is greedy --------------------------------------------------------- */

#define GREEDY_TOKENS 24

/* The greedy tokens from the oracle (fixture_greedy_oracle), cut after the
 * first EOS id when stop_at_eos. */
static void greedy_run(model *m, const int *prompt, int n, int stop_at_eos, decode_output *out) {
    memset(out, 0, sizeof *out);
    out->tokens = calloc(GREEDY_TOKENS, sizeof(int));
    fixture_greedy_oracle(m, prompt, n, GREEDY_TOKENS, out->tokens);
    out->n = GREEDY_TOKENS;
    for (int i = 0; stop_at_eos && i < out->n; i++)
        if (config_is_eos(&m->cfg, out->tokens[i])) out->n = i + 1;
}

static void assert_beam_is_greedy(model *m, const int *prompt, int n, beam_options bo, const decode_output *g,
                                  const char *what) {
    beam_output out;
    sp_error err;
    ck_assert_msg(fixture_beam_run(m, prompt, n, &bo, &out, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(out.n_best, 1);
    const beam_hypothesis *h = &out.best[0];
    ck_assert_msg(h->n == g->n, "%s (lp %g, %s): beam %d tokens, greedy %d", what, bo.length_penalty,
                  beam_early_stopping_name(bo.early_stopping), h->n, g->n);
    for (int i = 0; i < g->n; i++)
        ck_assert_msg(h->tokens[i] == g->tokens[i], "%s: token %d: beam %d, greedy %d", what, i, h->tokens[i],
                      g->tokens[i]);
    /* one pass per token: a width-1 beam is decoding one token at a time */
    ck_assert_int_eq(out.acc.target_passes, g->n);
    ck_assert_int_eq(out.acc.committed, g->n);
    beam_output_free(&out);
}

START_TEST(test_width_one_is_greedy) {
    fixture_model f;
    fixture_model_open(&f, "micro", 41, NULL);
    model *m = &f.m;
    const int V = m->cfg.vocab_size;
    const struct {
        float lp;
        beam_early_stopping es;
        int with_eos; /* "never" with lp > 0 may look past an EOS: greedy would not */
    } modes[] = {{1, BEAM_EARLY_HEURISTIC, 1}, {0, BEAM_EARLY_HEURISTIC, 1}, {2, BEAM_EARLY_TRUE, 1},
                 {-1, BEAM_EARLY_TRUE, 1},     {0, BEAM_EARLY_NEVER, 1},     {-1, BEAM_EARLY_NEVER, 1},
                 {1, BEAM_EARLY_NEVER, 0}};
    for (int p = 0; p < 8; p++) {
        int prompt[20], n = 1 + (p * 5) % 19; /* lengths up to 19: some cross a KV block */
        for (int i = 0; i < n; i++) prompt[i] = (p * 11 + i * 7 + 3) % V;
        decode_output g;
        greedy_run(m, prompt, n, 0, &g);
        ck_assert_int_eq(g.n, GREEDY_TOKENS);
        /* an EOS id that greedy decoding meets: the 6th greedy token */
        const int saved_eos = m->cfg.eos_token_ids[0];
        m->cfg.eos_token_ids[0] = g.tokens[5];
        decode_output ge;
        greedy_run(m, prompt, n, 1, &ge);
        ck_assert_int_le(ge.n, 6);
        for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
            beam_options bo = beam_defaults();
            bo.num_beams = 1;
            bo.max_new_tokens = GREEDY_TOKENS;
            bo.length_penalty = modes[k].lp;
            bo.early_stopping = modes[k].es;
            if (modes[k].with_eos) assert_beam_is_greedy(m, prompt, n, bo, &ge, "stopping at EOS");
            bo.stop_at_eos = 0;
            assert_beam_is_greedy(m, prompt, n, bo, &g, "no EOS");
        }
        m->cfg.eos_token_ids[0] = saved_eos;
        decode_output_free(&g);
        decode_output_free(&ge);
    }
    fixture_model_close(&f);
}
END_TEST

/* ---- a bigram model with chosen probabilities ---------------------------------- */

#define BV 8                /* vocabulary of the bigram model */
#define EOS 7               /* its EOS id */
#define FLOOR_LOGIT (-40.0) /* tokens a row leaves out: e^-40 ≈ 4e-18, far below every tolerance here */

/* Rewrites a loaded micro model (vocabulary BV, D ≥ BV, untied) so that the
 * next-token distribution depends only on the current token t, as
 * probs[t][·]: every layer's output projection (o_proj, out_proj,
 * down_proj) is zeroed, so the residual stream stays embed[t] = √D·e_t; the
 * final norm (weight 0, i.e. ×1) maps it to √D·e_t/√(1+eps), and
 * lm_head[v][t] = log p(v|t)/√D gives logits log p(v|t)·(1 − 5e-7). */
static void make_bigram(model *m, const double probs[BV][BV]) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, V = c->vocab_size;
    ck_assert_int_eq(V, BV);
    ck_assert_int_ge(D, BV);
    ck_assert_msg(!c->tie_word_embeddings, "the bigram construction needs an untied lm_head");
    for (int l = 0; l < c->num_layers; l++) {
        layer_weights *w = &m->w.layers[l];
        if (c->layer_types[l] == LAYER_FULL_ATTENTION)
            memset(w->o_proj, 0, sizeof(float) * D * c->num_heads * c->head_dim);
        else
            memset(w->out_proj, 0, sizeof(float) * D * c->lin_v_heads * c->lin_v_dim);
        memset(w->down_proj, 0, sizeof(float) * D * c->intermediate_size);
    }
    memset(m->w.final_norm, 0, sizeof(float) * D);
    memset(m->w.embed, 0, sizeof(float) * V * D);
    memset(m->w.lm_head, 0, sizeof(float) * V * D);
    for (int t = 0; t < V; t++) {
        m->w.embed[t * D + t] = sqrtf((float)D);
        for (int v = 0; v < V; v++)
            m->w.lm_head[v * D + t] = (float)((probs[t][v] > 0 ? log(probs[t][v]) : FLOOR_LOGIT) / sqrt((double)D));
    }
}

static void tweak_bigram(model_config *c) {
    c->vocab_size = BV;
    c->eos_token_ids[0] = EOS;
    c->num_eos = 1;
}

static void open_bigram(fixture_model *f, const double probs[BV][BV]) {
    fixture_model_open(f, "micro", 51, tweak_bigram);
    make_bigram(&f->m, probs);
}

/* a row: probability p of token a, 1 − p of token b */
static void row2(double probs[BV][BV], int t, int a, double p, int b) {
    memset(probs[t], 0, sizeof probs[t]);
    probs[t][a] = p;
    probs[t][b] = 1 - p;
}

static void uniform_rows(double probs[BV][BV]) {
    for (int t = 0; t < BV; t++)
        for (int v = 0; v < BV; v++) probs[t][v] = 1.0 / BV;
}

/* Runs beam search and checks the returned hypotheses against want[i]
 * (tokens terminated by −1) and their scores; tolerance 1e-5: the logits
 * carry float32 rounding of log p (~1e-7) and the eps of the final norm. */
static void expect_hypotheses(model *m, const int *prompt, int n_prompt, beam_options bo, int n_want,
                              const int want[][4], const double *want_score, long want_passes) {
    beam_output out;
    sp_error err;
    ck_assert_msg(fixture_beam_run(m, prompt, n_prompt, &bo, &out, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(out.n_best, n_want);
    for (int i = 0; i < n_want; i++) {
        const beam_hypothesis *h = &out.best[i];
        int n = 0;
        while (n < 4 && want[i][n] >= 0) n++;
        ck_assert_msg(h->n == n, "lp %g %s: hypothesis %d has %d tokens, want %d", bo.length_penalty,
                      beam_early_stopping_name(bo.early_stopping), i, h->n, n);
        for (int t = 0; t < n; t++)
            ck_assert_msg(h->tokens[t] == want[i][t], "lp %g %s: hypothesis %d token %d: got %d, want %d",
                          bo.length_penalty, beam_early_stopping_name(bo.early_stopping), i, t, h->tokens[t],
                          want[i][t]);
        ck_assert_msg(fabs(h->score - want_score[i]) < 1e-5, "hypothesis %d: score %.8f, want %.8f", i, h->score,
                      want_score[i]);
        ck_assert_int_eq(h->ended_by_eos, h->tokens[h->n - 1] == EOS);
        ck_assert_msg(fabs(h->score - h->sum_logprobs / pow(h->n, bo.length_penalty)) < 1e-12,
                      "score is not sum_logprobs / length^lp");
    }
    if (want_passes) ck_assert_int_eq(out.acc.target_passes, want_passes);
    beam_output_free(&out);
}

/* Three finished hypotheses with sums −0.8 (length 1), −1.0 (2), −1.8 (3):
 * penalty 0 prefers the shortest, 1 the middle one, 2 the longest. */
START_TEST(test_length_penalty_changes_the_winner) {
    double probs[BV][BV];
    uniform_rows(probs);
    const double p_eos0 = exp(-0.8), l1 = log(1 - p_eos0);
    const double p_eos1 = exp(-1.0 - l1), l2 = log(1 - p_eos1);
    const double p_eos2 = exp(-1.8 - l1 - l2);
    row2(probs, 0, EOS, p_eos0, 1);
    row2(probs, 1, EOS, p_eos1, 2);
    row2(probs, 2, EOS, p_eos2, 3);
    const double s123 = l1 + l2 + log(1 - p_eos2); /* [1 2 3] stops at max_new_tokens = 3 */
    fixture_model f;
    open_bigram(&f, probs);
    const int prompt[] = {5, 0};
    beam_options bo = beam_defaults();
    bo.num_beams = 4;
    bo.num_return = 3;
    bo.max_new_tokens = 3;
    bo.early_stopping = BEAM_EARLY_NEVER;
    {
        bo.length_penalty = 0;
        const int want[3][4] = {{EOS, -1}, {1, EOS, -1}, {1, 2, EOS, -1}};
        const double score[3] = {-0.8, -1.0, -1.8};
        expect_hypotheses(&f.m, prompt, 2, bo, 3, want, score, 3);
    }
    {
        bo.length_penalty = 1;
        const int want[3][4] = {{1, EOS, -1}, {1, 2, EOS, -1}, {EOS, -1}};
        const double score[3] = {-0.5, -0.6, -0.8};
        expect_hypotheses(&f.m, prompt, 2, bo, 3, want, score, 3);
    }
    {
        bo.length_penalty = 2;
        const int want[3][4] = {{1, 2, EOS, -1}, {1, EOS, -1}, {1, 2, 3, -1}};
        const double score[3] = {-0.2, -0.25, s123 / 9};
        expect_hypotheses(&f.m, prompt, 2, bo, 3, want, score, 3);
    }
    fixture_model_close(&f);
}
END_TEST

/* b = 2, penalty 1. Step 1 finishes [EOS] (−0.693) while [1] and [2] go on;
 * step 2 finishes [1 EOS] (−1.597/2), which fills the set, with the live
 * [1 3] at −1.397. `true` stops there; the heuristic bound −1.397/2 beats
 * the worst finished −0.799, so `heuristic` (and `never`) go on and find
 * [1 3 EOS] at −1.407/3 = −0.469. */
START_TEST(test_early_stopping_true_vs_heuristic) {
    double probs[BV][BV];
    uniform_rows(probs);
    memset(probs[0], 0, sizeof probs[0]);
    probs[0][EOS] = 0.5, probs[0][1] = 0.45, probs[0][2] = 0.05;
    row2(probs, 1, 3, 0.55, EOS);
    row2(probs, 2, EOS, 0.5, 4);
    row2(probs, 3, EOS, 0.99, 4);
    row2(probs, 4, EOS, 0.5, 5);
    fixture_model f;
    open_bigram(&f, probs);
    const int prompt[] = {0};
    beam_options bo = beam_defaults();
    bo.num_beams = 2;
    bo.num_return = 2;
    bo.max_new_tokens = 3;
    bo.length_penalty = 1;
    const double s_eos = log(0.5), s_1eos = log(0.45) + log(0.45), s_13eos = log(0.45) + log(0.55) + log(0.99);
    {
        bo.early_stopping = BEAM_EARLY_TRUE;
        const int want[2][4] = {{EOS, -1}, {1, EOS, -1}};
        const double score[2] = {s_eos, s_1eos / 2};
        expect_hypotheses(&f.m, prompt, 1, bo, 2, want, score, 2);
    }
    for (int es = BEAM_EARLY_HEURISTIC; es <= BEAM_EARLY_NEVER; es++) {
        bo.early_stopping = (beam_early_stopping)es;
        const int want[2][4] = {{1, 3, EOS, -1}, {EOS, -1}};
        const double score[2] = {s_13eos / 3, s_eos};
        expect_hypotheses(&f.m, prompt, 1, bo, 2, want, score, 3);
    }
    fixture_model_close(&f);
}
END_TEST

/* b = 1, penalty 2. Step 1 finishes [EOS] (−0.511); the live [1] has
 * −0.916. The heuristic bound −0.916/1² says stop; `never` bounds with the
 * longest possible length, −0.916/3² = −0.102, goes on and finds
 * [1 EOS] at −1.021/2² = −0.255. With penalty 0 `never` uses the current
 * length too and stops like the heuristic. */
START_TEST(test_early_stopping_heuristic_vs_never) {
    double probs[BV][BV];
    uniform_rows(probs);
    row2(probs, 0, EOS, 0.6, 1);
    row2(probs, 1, EOS, 0.9, 2);
    row2(probs, 2, EOS, 0.5, 3);
    fixture_model f;
    open_bigram(&f, probs);
    const int prompt[] = {3, 3, 0};
    beam_options bo = beam_defaults();
    bo.num_beams = 1;
    bo.max_new_tokens = 3;
    const int just_eos[1][4] = {{EOS, -1}}, one_eos[1][4] = {{1, EOS, -1}};
    for (int es = BEAM_EARLY_TRUE; es <= BEAM_EARLY_HEURISTIC; es++) {
        bo.early_stopping = (beam_early_stopping)es;
        bo.length_penalty = 2;
        const double score[1] = {log(0.6)};
        expect_hypotheses(&f.m, prompt, 3, bo, 1, just_eos, score, 1);
    }
    bo.early_stopping = BEAM_EARLY_NEVER;
    bo.length_penalty = 2;
    const double score2[1] = {(log(0.4) + log(0.9)) / 4};
    expect_hypotheses(&f.m, prompt, 3, bo, 1, one_eos, score2, 2);
    bo.length_penalty = 0;
    const double score0[1] = {log(0.6)};
    expect_hypotheses(&f.m, prompt, 3, bo, 1, just_eos, score0, 1);
    fixture_model_close(&f);
}
END_TEST

/* HF lets only the top b of the kept candidates finish. With b = 1 and
 * penalty 0, [EOS] (−0.799) ranks second to [1] at step 1 and is dropped,
 * though it scores better than the [1 EOS] (−0.821) that is returned; with
 * b = 2 it is in the top b and wins. */
START_TEST(test_only_top_b_candidates_finish) {
    double probs[BV][BV];
    uniform_rows(probs);
    row2(probs, 0, 1, 0.55, EOS);
    row2(probs, 1, EOS, 0.8, 2);
    fixture_model f;
    open_bigram(&f, probs);
    const int prompt[] = {0};
    beam_options bo = beam_defaults();
    bo.max_new_tokens = 2;
    bo.length_penalty = 0;
    bo.early_stopping = BEAM_EARLY_NEVER;
    bo.num_beams = 1;
    const int w1[1][4] = {{1, EOS, -1}};
    const double s1[1] = {log(0.55) + log(0.8)};
    expect_hypotheses(&f.m, prompt, 1, bo, 1, w1, s1, 2);
    bo.num_beams = 2;
    const int w2[1][4] = {{EOS, -1}};
    const double s2[1] = {log(0.45)};
    expect_hypotheses(&f.m, prompt, 1, bo, 1, w2, s2, 2);
    fixture_model_close(&f);
}
END_TEST

/* Exact ties go to the lower token id, as greedy decoding's argmax does, so
 * width 1 stays greedy even then; at width 2 both tied branches survive in
 * that order. */
START_TEST(test_ties_go_to_the_lower_token) {
    double probs[BV][BV];
    uniform_rows(probs);
    memset(probs[0], 0, sizeof probs[0]);
    probs[0][4] = probs[0][2] = 0.5; /* the same float logit for 2 and 4 */
    row2(probs, 2, 6, 0.5, 3);
    row2(probs, 4, 6, 0.5, 3);
    fixture_model f;
    open_bigram(&f, probs);
    const int prompt[] = {0};
    beam_options bo = beam_defaults();
    bo.num_beams = 1;
    bo.max_new_tokens = 2;
    bo.length_penalty = 0;
    const int w1[1][4] = {{2, 3, -1}};
    const double s1[1] = {2 * log(0.5)};
    expect_hypotheses(&f.m, prompt, 1, bo, 1, w1, s1, 2);
    decode_output g;
    greedy_run(&f.m, prompt, 1, 1, &g);
    ck_assert_int_eq(g.tokens[0], 2);
    ck_assert_int_eq(g.tokens[1], 3);
    decode_output_free(&g);
    bo.num_beams = bo.num_return = 2;
    const int w2[2][4] = {{2, 3, -1}, {2, 6, -1}};
    const double s2[2] = {2 * log(0.5), 2 * log(0.5)};
    expect_hypotheses(&f.m, prompt, 1, bo, 2, w2, s2, 2);
    fixture_model_close(&f);
}
END_TEST

/* ---- KV blocks shared between beams ---------------------------------------------- */

/* Every block's refcount is the number of live beams' block tables that
 * hold it, and the pool's blocks_in_use is the number of distinct blocks
 * held: the live beams are the only open sequences, so a sequence closed
 * without giving its blocks back shows up as a block nobody lists. */
static void assert_refcounts_exact(const beam_search *bs) {
    const kv_pool *p = reference_target_pool(bs->target);
    int *count = calloc((size_t)p->capacity + 1, sizeof(int)), distinct = 0;
    for (int i = 0; i < bs->n_live; i++) {
        const model_state *st = reference_target_state(bs->target, bs->live[i].seq);
        ck_assert_ptr_nonnull(st);
        for (int k = 0; k < st->n_blocks; k++) count[st->blocks[k]]++;
    }
    for (int b = 0; b < p->capacity; b++) {
        ck_assert_msg(p->refcount[b] == count[b], "block %d: refcount %d, held by %d tables", b, p->refcount[b],
                      count[b]);
        distinct += count[b] > 0;
    }
    ck_assert_int_eq(p->blocks_in_use, distinct);
    free(count);
}

#define KV_PROMPT 20 /* one full block and a partial one */

static void kv_prompt(int *prompt, int V) {
    for (int i = 0; i < KV_PROMPT; i++) prompt[i] = (i * 5 + 2) % V;
}

START_TEST(test_fork_shares_blocks_and_a_write_copies_one) {
    fixture_model f;
    fixture_model_open(&f, "micro", 61, NULL);
    model *m = &f.m;
    int prompt[KV_PROMPT];
    kv_prompt(prompt, m->cfg.vocab_size);
    beam_options bo = beam_defaults();
    bo.num_beams = 3;
    bo.stop_at_eos = 0;
    bo.max_new_tokens = 8;
    decode_target t;
    reference_target_build(&t, m);
    const kv_pool *pool = reference_target_pool(&t);
    beam_search bs;
    sp_error err;
    ck_assert_msg(beam_begin(&bs, &t, prompt, KV_PROMPT, &bo, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(t.position(&t, bs.live[0].seq), KV_PROMPT - 1);
    ck_assert_int_eq(pool->blocks_in_use, 2);
    ck_assert_int_eq(beam_step(&bs), 1);
    /* three children of the one beam: one took its state over, two forked it */
    ck_assert_int_eq(bs.n_live, 3);
    ck_assert_int_eq(bs.stats.deltanet_copies, 2);
    ck_assert_int_eq(bs.stats.kv_block_copies, 0);
    ck_assert_int_eq(pool->blocks_in_use, 2);
    const model_state *s0 = reference_target_state(&t, bs.live[0].seq);
    for (int i = 0; i < 3; i++) {
        const model_state *s = reference_target_state(&t, bs.live[i].seq);
        ck_assert_int_eq(s->pos, KV_PROMPT);
        ck_assert_int_eq(s->n_blocks, 2);
        ck_assert_int_eq(s->blocks[0], s0->blocks[0]);
        ck_assert_int_eq(s->blocks[1], s0->blocks[1]);
        ck_assert_int_eq(pool->refcount[s->blocks[0]], 3);
        ck_assert_int_eq(pool->refcount[s->blocks[1]], 3);
        const size_t conv = (size_t)s->num_linear * s->conv_dim * (s->conv_width - 1),
                     rec = (size_t)s->num_linear * s->lin_v_heads * s->lin_k_dim * s->lin_v_dim;
        ck_assert_msg(memcmp(s->conv, s0->conv, conv * sizeof(float)) == 0 &&
                          memcmp(s->recurrent, s0->recurrent, rec * sizeof(float)) == 0,
                      "beam %d: its DeltaNet state differs from the state it was forked from", i);
        if (i) ck_assert_ptr_ne(s->recurrent, s0->recurrent); /* a copy, not an alias */
    }
    assert_refcounts_exact(&bs);
    /* Feed each child its pending token by hand, as the next pass would:
     * the first two writers copy the shared partial block (exactly one
     * block each), the last one owns it by then and writes in place; the
     * full block 0 stays shared by all three. */
    const int shared0 = s0->blocks[0], shared1 = s0->blocks[1];
    for (int i = 0; i < 3; i++) {
        model_state *s = reference_target_state(&t, bs.live[i].seq);
        const int before = pool->blocks_in_use, ref1 = pool->refcount[shared1];
        model_forward(m, s, bs.live[i].tokens[0], NULL, NULL);
        ck_assert_int_eq(s->blocks[0], shared0);
        if (i < 2) {
            ck_assert_int_eq(pool->blocks_in_use, before + 1);
            ck_assert_int_ne(s->blocks[1], shared1);
            ck_assert_int_eq(pool->refcount[s->blocks[1]], 1);
            ck_assert_int_eq(pool->refcount[shared1], ref1 - 1);
        } else {
            ck_assert_int_eq(pool->blocks_in_use, before);
            ck_assert_int_eq(s->blocks[1], shared1);
            ck_assert_int_eq(pool->refcount[shared1], 1);
        }
        ck_assert_int_eq(pool->refcount[shared0], 3);
    }
    assert_refcounts_exact(&bs);
    beam_free(&bs);
    ck_assert_int_eq(pool->blocks_in_use, 0); /* freeing the search closed its sequences */
    t.release(&t);
    fixture_model_close(&f);
}
END_TEST

/* A whole search: the refcounts stay exact after every step, copies are
 * counted, sharing beats private caches, and nothing is held at the end. */
START_TEST(test_blocks_tracked_through_a_search) {
    fixture_model f;
    fixture_model_open(&f, "micro", 62, NULL);
    model *m = &f.m;
    int prompt[KV_PROMPT];
    kv_prompt(prompt, m->cfg.vocab_size);
    decode_target t;
    reference_target_build(&t, m);
    const kv_pool *pool = reference_target_pool(&t);
    for (int b = 2; b <= 6; b += 4) {
        beam_options bo = beam_defaults();
        bo.num_beams = b;
        bo.stop_at_eos = 0;
        bo.max_new_tokens = 2 * KV_BLOCK_SIZE; /* the live beams cross a block boundary */
        bo.early_stopping = BEAM_EARLY_NEVER;
        bo.length_penalty = 0;
        beam_search bs;
        sp_error err;
        ck_assert_msg(beam_begin(&bs, &t, prompt, KV_PROMPT, &bo, &err) == 0, "%s", err.msg);
        int steps = 0;
        while (beam_step(&bs)) {
            steps++;
            assert_refcounts_exact(&bs);
            ck_assert_int_le(bs.n_live, b);
        }
        steps++;
        ck_assert_int_eq(pool->blocks_in_use, 0); /* released when the search stopped */
        ck_assert_int_eq(steps, bo.max_new_tokens);
        beam_output out;
        beam_finish(&bs, &out);
        ck_assert_int_eq(out.acc.target_passes, steps);
        ck_assert_int_eq(out.stats.peak_live_beams, b);
        ck_assert_int_gt(out.stats.kv_block_copies, 0);
        ck_assert_int_gt(out.stats.deltanet_copies, 0);
        ck_assert_int_lt(out.stats.kv_blocks_peak, out.stats.kv_blocks_unshared_peak);
        ck_assert_int_ge(out.stats.kv_blocks_unshared_peak, b * 2);
        model_state probe;
        state_build(&probe, &m->cfg, NULL);
        ck_assert_uint_eq(out.stats.deltanet_bytes_per_beam, state_deltanet_bytes(&probe));
        state_free(&probe);
        /* positions evaluated: one beam at step 1, then up to b per step */
        ck_assert_int_le(out.stats.beam_forwards, 1 + (long)b * (steps - 1));
        ck_assert_int_ge(out.stats.beam_forwards, steps);
        beam_output_free(&out);
        beam_free(&bs);
    }
    t.release(&t);
    fixture_model_close(&f);
}
END_TEST

/* ---- bad input --------------------------------------------------------------------- */

START_TEST(test_bad_options_are_refused) {
    fixture_model f;
    fixture_model_open(&f, "micro", 63, NULL);
    const int prompt[] = {1, 2};
    beam_output out;
    sp_error err;
    beam_options bo = beam_defaults();
    bo.num_beams = 0;
    ck_assert_int_eq(fixture_beam_run(&f.m, prompt, 2, &bo, &out, &err), -1);
    ck_assert_msg(strstr(err.msg, "number of beams"), "%s", err.msg);
    bo = beam_defaults();
    bo.num_return = bo.num_beams + 1;
    ck_assert_int_eq(fixture_beam_run(&f.m, prompt, 2, &bo, &out, &err), -1);
    ck_assert_msg(strstr(err.msg, "returned hypotheses must be in [1, 4]"), "%s", err.msg);
    bo = beam_defaults();
    bo.max_new_tokens = 0;
    ck_assert_int_eq(fixture_beam_run(&f.m, prompt, 2, &bo, &out, &err), -1);
    ck_assert_msg(strstr(err.msg, "max_new_tokens"), "%s", err.msg);
    bo = beam_defaults();
    bo.length_penalty = NAN;
    ck_assert_int_eq(fixture_beam_run(&f.m, prompt, 2, &bo, &out, &err), -1);
    ck_assert_msg(strstr(err.msg, "length penalty"), "%s", err.msg);
    bo = beam_defaults();
    ck_assert_int_eq(fixture_beam_run(&f.m, prompt, 0, &bo, &out, &err), -1);
    ck_assert_msg(strstr(err.msg, "at least one token"), "%s", err.msg);
    const int bad[] = {1, 32};
    ck_assert_int_eq(fixture_beam_run(&f.m, bad, 2, &bo, &out, &err), -1);
    ck_assert_msg(strstr(err.msg, "prompt token 32 at position 1"), "%s", err.msg);
    beam_early_stopping es;
    ck_assert_int_eq(beam_early_stopping_parse("never", &es), 0);
    ck_assert_int_eq(es, BEAM_EARLY_NEVER);
    ck_assert_int_eq(beam_early_stopping_parse("false", &es), -1);
    fixture_model_close(&f);
}
END_TEST

/* The per-beam figures docs/methods.md and beam.h quote for Qwen3.8-27B. */
START_TEST(test_documented_27b_memory) {
    model_config c;
    sp_error err;
    ck_assert_msg(config_load("models/qwen3.8-27b/config.json", &c, &err) == 0, "%s", err.msg);
    model_footprint fp;
    footprint_compute(&c, 0, 2, 2, &fp);
    ck_assert_double_eq(fp.deltanet_bytes, 156893184.0);    /* 149.6 MiB, copied on a fork */
    ck_assert_double_eq(fp.kv_bytes_per_position, 65536.0); /* bf16 */
    ck_assert_double_eq(fp.deltanet_bytes / fp.kv_bytes_per_position, 2394.0);
}
END_TEST

Suite *beam_suite(void) {
    Suite *s = suite_create("beam");
    TCase *tc = harness_tcase("greedy", 120);
    tcase_add_test(tc, test_width_one_is_greedy);
    suite_add_tcase(s, tc);
    tc = harness_tcase("constructed", 60);
    tcase_add_test(tc, test_length_penalty_changes_the_winner);
    tcase_add_test(tc, test_early_stopping_true_vs_heuristic);
    tcase_add_test(tc, test_early_stopping_heuristic_vs_never);
    tcase_add_test(tc, test_only_top_b_candidates_finish);
    tcase_add_test(tc, test_ties_go_to_the_lower_token);
    suite_add_tcase(s, tc);
    tc = harness_tcase("kv", 60);
    tcase_add_test(tc, test_fork_shares_blocks_and_a_write_copies_one);
    tcase_add_test(tc, test_blocks_tracked_through_a_search);
    tcase_add_test(tc, test_bad_options_are_refused);
    if (access("models/qwen3.8-27b/config.json", R_OK) == 0)
        tcase_add_test(tc, test_documented_27b_memory);
    else
        harness_skip("beam", "documented_27b_memory", "models/qwen3.8-27b/config.json is not in this checkout");
    suite_add_tcase(s, tc);
    return s;
}
