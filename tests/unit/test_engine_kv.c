/* test_engine_kv.c — the CPU engine with a bf16, q8 or q4 KV cache (engine_options.kv, --kv-cache) against the
 * same engine with its float32 cache: a prefill and then decode steps, one token at a time, on random micro
 * models; the bounds are measured ones with their margins, and q4 must break q8's. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "engine_compare.h"
#include "engine_target.h"
#include "harness.h"
#include "sampler.h"

#define N_PROMPT 8
#define N_DECODE 40 /* with the prompt, three KV blocks of 16 */

/* logits[(N_PROMPT + N_DECODE), V] of the engine on dir with KV cache f: the prompt's prefill, then each token
 * of `path` (the float32 cache's greedy tokens: every cache reads the same sequence) one decode step at a time.
 * path NULL: the greedy tokens are chosen here and written to chosen[N_DECODE]. */
static float *run(const char *dir, kv_format f, const int *path, int *chosen) {
    engine_options o = engine_defaults();
    o.kv = f;
    return engine_decode_logits(dir, &o, N_PROMPT, N_DECODE, path, chosen);
}

/* Largest |Δlogit| over every position, relative to the float32 cache's largest |logit| (rel_error). */
typedef struct {
    double bf16, q8, q4;
} kv_gaps;

static kv_gaps gaps_on(const char *preset, uint64_t seed) {
    char dir[512];
    write_checkpoint(dir, sizeof dir, preset, 0, seed, DTYPE_F32);
    engine e;
    sp_error err;
    ck_assert(engine_open(&e, dir, NULL, &err) == 0);
    const size_t n = (size_t)(N_PROMPT + N_DECODE) * e.cfg.vocab_size;
    ck_assert_int_eq(e.kv.format, KV_F32); /* the CPU's default is unchanged */
    engine_close(&e);
    int path[N_DECODE];
    float *ref = run(dir, KV_F32, NULL, path), *b = run(dir, KV_BF16, path, NULL);
    float *q8 = run(dir, KV_Q8, path, NULL), *q4 = run(dir, KV_Q4, path, NULL);
    const kv_gaps g = {rel_error(b, ref, n), rel_error(q8, ref, n), rel_error(q4, ref, n)};
    free(ref), free(b), free(q8), free(q4);
    harness_rmtree(dir);
    return g;
}

/* The bounds. Each layer's attention output moves by about a quantisation step of its keys and values (bf16:
 * 2⁻⁹ relative; q8: max/254 of a block; q4: max/14 after the rotation), which the layers carry to the logits.
 * Measured on these three models (docs/architecture.md): bf16 ≤ 3.3e-3, q8 ≤ 4.6e-3, q4 ≤ 8.9e-2; each bound
 * sits about 2× above. The control: q4's gap (≥ 2.4e-2 on all three) must break q8's bound, so the bound tells a
 * 4-bit cache from an 8-bit one. (micro-tied is left out: its logits move 0.9 % with a bf16 cache alone, so
 * there it measures the model's conditioning more than the cache.) */
#define BOUND_BF16 6e-3
#define BOUND_Q8 1e-2
#define BOUND_Q4 2e-1

static const struct {
    const char *preset;
    uint64_t seed;
} models[] = {{"micro", 41}, {"small", 43}, {"micro-deep", 44}};

START_TEST(test_quantised_cache_within_bound) {
    const kv_gaps g = gaps_on(models[_i].preset, models[_i].seed);
    ck_assert_msg(g.bf16 <= BOUND_BF16, "%s: bf16 cache off by %.3g (at most %g)", models[_i].preset, g.bf16,
                  BOUND_BF16);
    ck_assert_msg(g.q8 <= BOUND_Q8, "%s: q8 cache off by %.3g (at most %g)", models[_i].preset, g.q8, BOUND_Q8);
    ck_assert_msg(g.q4 <= BOUND_Q4, "%s: q4 cache off by %.3g (at most %g)", models[_i].preset, g.q4, BOUND_Q4);
    ck_assert_msg(g.q8 < g.q4, "%s: q8 (%.3g) no closer than q4 (%.3g)", models[_i].preset, g.q8, g.q4);
    /* the control: the q8 bound rejects the 4-bit cache */
    ck_assert_msg(g.q4 > BOUND_Q8, "%s: q4 cache within q8's bound (%.3g ≤ %g)", models[_i].preset, g.q4, BOUND_Q8);
}
END_TEST

/* q4 packs two elements a byte: an odd head width is refused by name, not stored wrong. */
static void odd_heads(model_config *c) { c->head_dim = 15, c->rotary_dim = 4; }

START_TEST(test_q4_refuses_odd_heads) {
    fixture_model f;
    fixture_model_open(&f, "micro", 5, odd_heads);
    engine e;
    sp_error err;
    engine_options o = engine_defaults();
    o.kv = KV_Q4;
    ck_assert_int_eq(engine_open(&e, f.dir, &o, &err), -1);
    ck_assert_msg(strstr(err.msg, "head_dim 15 is odd"), "%s", err.msg);
    o.kv = KV_Q8;
    ck_assert_msg(engine_open(&e, f.dir, &o, &err) == 0, "%s", err.msg);
    engine_close(&e);
    fixture_model_close(&f);
}
END_TEST

Suite *engine_kv_suite(void) {
    Suite *s = suite_create("engine_kv");
    TCase *tc = harness_tcase("kv", 120);
    tcase_add_loop_test(tc, test_quantised_cache_within_bound, 0, (int)(sizeof models / sizeof models[0]));
    tcase_add_test(tc, test_q4_refuses_odd_heads);
    suite_add_tcase(s, tc);
    return s;
}
