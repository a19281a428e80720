/* test_state.c — rollback leaves no trace: after any accepted prefix, the target's next logits are bit-identical
 * to a run that only ever saw the accepted tokens, and copy-on-write KV blocks are shared and copied exactly when
 * they should be. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"

#define T_MAX 40

static void tokens_for(int *ids, int n, int V, int salt) {
    for (int i = 0; i < n; i++) ids[i] = (i * 5 + salt * 3 + 2) % V;
}

/* logits after feeding ids[0..n) to a fresh state */
static void fresh_logits(model *m, const int *ids, int n, float *logits) {
    model_state s;
    state_build(&s, &m->cfg, NULL);
    for (int i = 0; i < n; i++) model_forward(m, &s, ids[i], logits, NULL);
    state_free(&s);
}

START_TEST(test_snapshot_restore_is_exact) {
    fixture_model f;
    fixture_model_open(&f, "micro", 21, NULL);
    model *m = &f.m;
    const int V = m->cfg.vocab_size;
    int ids[T_MAX], junk[6];
    tokens_for(ids, T_MAX, V, 1);
    tokens_for(junk, 6, V, 9);
    float *want = malloc(sizeof(float) * V), *got = malloc(sizeof(float) * V);
    /* accept j tokens, then propose and reject r junk tokens, then go on; j
     * crosses a KV block boundary (KV_BLOCK_SIZE) for some cases */
    for (int j = 1; j < T_MAX - 2; j += 3) {
        for (int r = 1; r <= 5; r += 2) {
            fresh_logits(m, ids, T_MAX, want);
            model_state s;
            state_snapshot snap;
            state_build(&s, &m->cfg, NULL);
            snapshot_build(&snap, &s);
            for (int i = 0; i < j; i++) model_forward(m, &s, ids[i], NULL, NULL);
            state_save(&s, &snap);
            for (int i = 0; i < r; i++) model_forward(m, &s, junk[i], NULL, NULL);
            state_restore(&s, &snap);
            ck_assert_int_eq(s.pos, j);
            for (int i = j; i < T_MAX; i++) model_forward(m, &s, ids[i], got, NULL);
            ck_assert_msg(memcmp(want, got, sizeof(float) * V) == 0, "j=%d r=%d: logits differ after rollback", j, r);
            snapshot_free(&snap);
            state_free(&s);
        }
    }
    free(want);
    free(got);
    fixture_model_close(&f);
}
END_TEST

START_TEST(test_fork_branch_leaves_no_trace) {
    fixture_model f;
    fixture_model_open(&f, "micro", 22, NULL);
    model *m = &f.m;
    const int V = m->cfg.vocab_size;
    int ids[T_MAX], junk[8];
    tokens_for(ids, T_MAX, V, 2);
    tokens_for(junk, 8, V, 7);
    float *want = malloc(sizeof(float) * V), *got = malloc(sizeof(float) * V);
    fresh_logits(m, ids, T_MAX, want);
    model_state s, branch;
    state_build(&s, &m->cfg, NULL);
    state_build(&branch, &m->cfg, s.pool);
    for (int i = 0; i < 20; i++) model_forward(m, &s, ids[i], NULL, NULL);
    state_fork(&branch, &s);
    for (int i = 0; i < 8; i++) model_forward(m, &branch, junk[i], NULL, NULL); /* a rejected branch */
    for (int i = 20; i < T_MAX; i++) model_forward(m, &s, ids[i], got, NULL);
    ck_assert(memcmp(want, got, sizeof(float) * V) == 0);
    /* and the other way round: the branch that continues is the fork */
    fresh_logits(m, ids, T_MAX, want);
    state_reset(&s);
    for (int i = 0; i < 17; i++) model_forward(m, &s, ids[i], NULL, NULL);
    state_fork(&branch, &s);
    for (int i = 0; i < 5; i++) model_forward(m, &s, junk[i], NULL, NULL);
    for (int i = 17; i < T_MAX; i++) model_forward(m, &branch, ids[i], got, NULL);
    ck_assert(memcmp(want, got, sizeof(float) * V) == 0);
    state_free(&branch);
    state_free(&s);
    free(want);
    free(got);
    fixture_model_close(&f);
}
END_TEST

START_TEST(test_copy_on_write_blocks) {
    fixture_model f;
    fixture_model_open(&f, "micro", 23, NULL);
    model *m = &f.m;
    model_state a, b;
    state_build(&a, &m->cfg, NULL);
    state_build(&b, &m->cfg, a.pool);
    const int n = KV_BLOCK_SIZE + 5; /* one full block and one partial */
    for (int i = 0; i < n; i++) model_forward(m, &a, i % m->cfg.vocab_size, NULL, NULL);
    ck_assert_int_eq(a.n_blocks, 2);
    ck_assert_int_eq(a.pool->blocks_in_use, 2);
    state_fork(&b, &a);
    ck_assert_int_eq(a.pool->blocks_in_use, 2); /* shared, not copied */
    ck_assert_int_eq(a.pool->refcount[a.blocks[0]], 2);
    ck_assert_int_eq(a.pool->refcount[a.blocks[1]], 2);
    model_forward(m, &b, 1, NULL, NULL); /* writes into the shared partial block: exactly one copy */
    ck_assert_int_eq(a.pool->blocks_in_use, 3);
    ck_assert_int_eq(a.blocks[0], b.blocks[0]);
    ck_assert_int_ne(a.blocks[1], b.blocks[1]);
    ck_assert_int_eq(a.pool->refcount[a.blocks[1]], 1);
    model_forward(m, &b, 2, NULL, NULL); /* now private: no further copy */
    ck_assert_int_eq(a.pool->blocks_in_use, 3);
    state_truncate_kv(&b, 0);
    ck_assert_int_eq(a.pool->blocks_in_use, 2);
    ck_assert_int_eq(a.pool->refcount[a.blocks[0]], 1);
    state_free(&b);
    state_free(&a);
    fixture_model_close(&f);
}
END_TEST

START_TEST(test_state_sizes) {
    fixture_model f;
    fixture_model_open(&f, "micro", 24, NULL);
    const model_config *c = &f.m.cfg;
    model_state s;
    state_build(&s, c, NULL);
    size_t want =
        (size_t)config_num_linear(c) *
        ((size_t)config_conv_dim(c) * (c->conv_kernel - 1) + (size_t)c->lin_v_heads * c->lin_k_dim * c->lin_v_dim) *
        sizeof(float);
    ck_assert_uint_eq(state_deltanet_bytes(&s), want);
    ck_assert_uint_eq(state_kv_bytes_per_position(&s),
                      2 * (size_t)config_num_full(c) * c->num_kv_heads * c->head_dim * sizeof(float));
    state_free(&s);
    fixture_model_close(&f);
}
END_TEST

Suite *state_suite(void) {
    Suite *s = suite_create("state");
    TCase *tc = harness_tcase("rollback", 60);
    tcase_add_test(tc, test_snapshot_restore_is_exact);
    tcase_add_test(tc, test_fork_branch_leaves_no_trace);
    tcase_add_test(tc, test_copy_on_write_blocks);
    tcase_add_test(tc, test_state_sizes);
    suite_add_tcase(s, tc);
    return s;
}
