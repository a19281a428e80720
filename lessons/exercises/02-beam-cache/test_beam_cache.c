/* test_beam_cache.c — exercise 2's own checks of the copy-on-write KV
 * cache, block by block and without a forward pass: every position's key
 * and value is written with a number that names the sequence, the layer and
 * the position, so a write that lands in another beam's block, a copy that
 * misses the values, or a block given back too early shows up as a wrong
 * number; the pool's reference counts and blocks in use are checked after
 * every step.
 *
 * Wrong solutions this checker must reject (wrong/, run by
 * tests/parts/exercises.sh):
 *   no-copy.c           writes into a block another beam still lists
 *   fork-no-refcount.c  fork lists src's blocks without counting the new
 *                       references, so the first beam to let go frees them
 *   truncate-floor.c    keeps pos / KV_BLOCK_SIZE blocks: the partial block
 *                       that still holds positions below pos is given back
 *   copy-keeps-old.c    a copy on write never drops the old block's
 *                       reference: blocks leak
 *   keys-only.c         a copy on write copies the keys but not the values
 *   fork-no-deltanet.c  fork shares the KV blocks but leaves dst's DeltaNet
 *                       state as it was
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "state.h"

/* The value written at (sequence tag, layer, position, element): a whole
 * number below 2^24, so float holds it exactly and no two coincide (tag <
 * 32, t < 256, la < 8, i < 64: checked by build_state). */
static float mark(int tag, int la, int t, int i) { return (float)((((tag * 256 + t) * 8 + la) * 64) + i); }

static void write_positions(model_state *s, int tag, int from, int to) {
    for (int t = from; t < to; t++) {
        for (int la = 0; la < s->num_attn; la++) {
            float *k, *v;
            state_kv_for_write(s, la, t, &k, &v);
            ck_assert_msg(k && v, "state_kv_for_write gave no pointer for layer %d, position %d", la, t);
            for (int i = 0; i < s->pool->kv_dim; i++) k[i] = mark(tag, la, t, i), v[i] = -mark(tag, la, t, i);
        }
        s->pos = t + 1;
    }
}

/* Positions [from, to) of s hold what sequence `tag` wrote there. */
static void expect_positions(model_state *s, int tag, int from, int to, const char *what) {
    for (int t = from; t < to; t++)
        for (int la = 0; la < s->num_attn; la++) {
            const float *k = state_key(s, la, t), *v = state_value(s, la, t);
            for (int i = 0; i < s->pool->kv_dim; i++)
                ck_assert_msg(k[i] == mark(tag, la, t, i) && v[i] == -mark(tag, la, t, i),
                              "%s: layer %d position %d element %d holds key %g, value %g; want %g, %g", what, la, t, i,
                              k[i], v[i], mark(tag, la, t, i), -mark(tag, la, t, i));
        }
}

static fixture_model fx;
static void open_fixture(void) {
    fixture_model_open(&fx, "micro", 31, NULL);
    model_state s;
    state_build(&s, &fx.m.cfg, NULL);
    ck_assert_msg(s.num_attn >= 1 && s.num_attn <= 8 && s.pool->kv_dim <= 64,
                  "the fixture's shape (%d attention layers, kv_dim %d) is outside what mark() can number", s.num_attn,
                  s.pool->kv_dim);
    state_free(&s);
}
static void close_fixture(void) { fixture_model_close(&fx); }

START_TEST(test_fork_shares_and_a_write_copies_one_block) {
    model_state a, b;
    state_build(&a, &fx.m.cfg, NULL);
    state_build(&b, &fx.m.cfg, a.pool);
    kv_pool *p = a.pool;
    const int n = 2 * KV_BLOCK_SIZE + 5; /* two full blocks and a partial one */
    write_positions(&a, 1, 0, n);
    ck_assert_int_eq(a.n_blocks, 3);
    ck_assert_int_eq(p->blocks_in_use, 3);
    state_fork(&b, &a);
    ck_assert_int_eq(b.pos, n);
    ck_assert_int_eq(b.n_blocks, 3);
    ck_assert_msg(p->blocks_in_use == 3, "a fork copied blocks: %d in use, want 3 (shared)", p->blocks_in_use);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(b.blocks[i], a.blocks[i]);
        ck_assert_msg(p->refcount[a.blocks[i]] == 2, "block %d is listed by two tables but counts %d", i,
                      p->refcount[a.blocks[i]]);
    }
    expect_positions(&b, 1, 0, n, "the fork reads its parent's prefix");
    ck_assert_int_eq(p->copies, 0);

    /* b writes its next position into the shared partial block: one copy */
    write_positions(&b, 2, n, n + 1);
    ck_assert_msg(p->copies == 1, "%ld copies after one write into a shared block, want 1", p->copies);
    ck_assert_int_eq(p->blocks_in_use, 4);
    ck_assert_int_eq(a.blocks[0], b.blocks[0]);
    ck_assert_int_eq(a.blocks[1], b.blocks[1]);
    ck_assert_int_ne(a.blocks[2], b.blocks[2]);
    ck_assert_int_eq(p->refcount[a.blocks[2]], 1);
    ck_assert_int_eq(p->refcount[b.blocks[2]], 1);
    ck_assert_int_eq(p->refcount[a.blocks[0]], 2);
    expect_positions(&b, 1, 0, n, "the copy keeps the parent's positions of the block");
    expect_positions(&b, 2, n, n + 1, "the fork's own position");

    /* a writes the same position: its block is private again, no copy */
    write_positions(&a, 1, n, n + 1);
    ck_assert_int_eq(p->copies, 1);
    expect_positions(&a, 1, 0, n + 1, "the parent after the fork wrote");
    expect_positions(&b, 2, n, n + 1, "the fork after the parent wrote");

    /* b runs on into a new block of its own: no copy */
    write_positions(&b, 2, n + 1, 3 * KV_BLOCK_SIZE + 2);
    ck_assert_int_eq(p->copies, 1);
    ck_assert_int_eq(b.n_blocks, 4);
    ck_assert_int_eq(p->blocks_in_use, 5);

    /* letting b go gives back its two private blocks; a's stay whole */
    state_truncate_kv(&b, 0);
    ck_assert_int_eq(b.n_blocks, 0);
    ck_assert_int_eq(b.pos, 0);
    ck_assert_int_eq(p->blocks_in_use, 3);
    ck_assert_int_eq(p->refcount[a.blocks[0]], 1);
    expect_positions(&a, 1, 0, n + 1, "the parent after the fork was let go");
    state_free(&b);
    state_free(&a);
}
END_TEST

START_TEST(test_truncate_gives_back_whole_blocks_only) {
    model_state s;
    state_build(&s, &fx.m.cfg, NULL);
    kv_pool *p = s.pool;
    write_positions(&s, 3, 0, 3 * KV_BLOCK_SIZE);
    ck_assert_int_eq(p->blocks_in_use, 3);
    state_truncate_kv(&s, 2 * KV_BLOCK_SIZE + 1); /* position 32 is still held: three blocks */
    ck_assert_msg(s.n_blocks == 3, "truncated to %d positions: %d blocks, want 3", 2 * KV_BLOCK_SIZE + 1, s.n_blocks);
    ck_assert_int_eq(s.pos, 2 * KV_BLOCK_SIZE + 1);
    state_truncate_kv(&s, 2 * KV_BLOCK_SIZE); /* exactly two blocks */
    ck_assert_int_eq(s.n_blocks, 2);
    ck_assert_int_eq(p->blocks_in_use, 2);
    ck_assert_int_eq(s.pos, 2 * KV_BLOCK_SIZE);
    state_truncate_kv(&s, 3 * KV_BLOCK_SIZE); /* past the end: nothing changes, pos does not grow */
    ck_assert_int_eq(s.n_blocks, 2);
    ck_assert_int_eq(s.pos, 2 * KV_BLOCK_SIZE);
    state_truncate_kv(&s, 5);
    ck_assert_int_eq(s.n_blocks, 1);
    ck_assert_int_eq(p->blocks_in_use, 1);
    expect_positions(&s, 3, 0, 5, "the positions kept");
    write_positions(&s, 4, 5, KV_BLOCK_SIZE + 3); /* rewrite past the cut */
    expect_positions(&s, 3, 0, 5, "the positions kept, after new writes");
    expect_positions(&s, 4, 5, KV_BLOCK_SIZE + 3, "the new writes");
    ck_assert_int_eq(p->blocks_in_use, 2);
    state_free(&s);
}
END_TEST

/* A fork into a table that holds blocks of its own, and whose table is
 * shorter than src's; the DeltaNet state is copied, not shared. */
START_TEST(test_fork_replaces_what_dst_held) {
    model_state a, b;
    state_build(&a, &fx.m.cfg, NULL);
    state_build(&b, &fx.m.cfg, a.pool);
    kv_pool *p = a.pool;
    write_positions(&b, 5, 0, KV_BLOCK_SIZE + 1);  /* b: two blocks of its own */
    write_positions(&a, 6, 0, 12 * KV_BLOCK_SIZE); /* a: twelve, a longer table than b's */
    ck_assert_int_eq(p->blocks_in_use, 14);
    const size_t conv = state_deltanet_bytes(&a) / sizeof(float);
    ck_assert(conv > 0);
    for (int i = 0; i < a.num_linear; i++) state_recurrent(&a, i)[0] = 7.5f + (float)i, state_conv(&a, i)[0] = 2.5f;
    state_fork(&b, &a);
    ck_assert_msg(p->blocks_in_use == 12, "after the fork %d blocks in use; b's own two must go back (want 12)",
                  p->blocks_in_use);
    ck_assert_int_eq(b.n_blocks, 12);
    ck_assert_int_eq(b.pos, 12 * KV_BLOCK_SIZE);
    expect_positions(&b, 6, 0, 12 * KV_BLOCK_SIZE, "the fork");
    for (int i = 0; i < a.num_linear; i++) {
        ck_assert_msg(state_recurrent(&b, i)[0] == 7.5f + (float)i && state_conv(&b, i)[0] == 2.5f,
                      "DeltaNet layer %d: the fork's state is not its parent's", i);
        ck_assert_msg(state_recurrent(&b, i) != state_recurrent(&a, i), "the fork shares its parent's DeltaNet state");
    }
    state_recurrent(&b, 0)[0] = -1.0f;
    ck_assert_msg(state_recurrent(&a, 0)[0] == 7.5f, "a write to the fork's DeltaNet state changed its parent's");
    state_free(&b);
    ck_assert_int_eq(p->blocks_in_use, 12);
    for (int i = 0; i < a.n_blocks; i++) ck_assert_int_eq(p->refcount[a.blocks[i]], 1);
    expect_positions(&a, 6, 0, 12 * KV_BLOCK_SIZE, "the parent after its fork was freed");
    state_free(&a);
}
END_TEST

/* Four beams forked from one, each then writing a block and a half, and
 * closed in an order that is not the order they were made in: every block
 * comes back, none twice. */
START_TEST(test_four_beams_give_every_block_back) {
    model_state root, beam[4];
    state_build(&root, &fx.m.cfg, NULL);
    kv_pool *p = root.pool;
    write_positions(&root, 10, 0, KV_BLOCK_SIZE + 8);
    for (int j = 0; j < 4; j++) {
        state_build(&beam[j], &fx.m.cfg, p);
        state_fork(&beam[j], &root);
    }
    ck_assert_int_eq(p->refcount[root.blocks[1]], 5);
    for (int j = 0; j < 4; j++) write_positions(&beam[j], 20 + j, KV_BLOCK_SIZE + 8, 3 * KV_BLOCK_SIZE);
    ck_assert_msg(p->copies == 4, "%ld copies: each beam copies the shared partial block once", p->copies);
    ck_assert_int_eq(p->blocks_in_use, 2 + 4 * 2);
    for (int j = 0; j < 4; j++) {
        expect_positions(&beam[j], 10, 0, KV_BLOCK_SIZE + 8, "a beam's shared prefix");
        expect_positions(&beam[j], 20 + j, KV_BLOCK_SIZE + 8, 3 * KV_BLOCK_SIZE, "a beam's own positions");
    }
    expect_positions(&root, 10, 0, KV_BLOCK_SIZE + 8, "the root after its beams wrote");
    const int order[4] = {2, 0, 3, 1};
    for (int j = 0; j < 4; j++) state_free(&beam[order[j]]);
    ck_assert_int_eq(p->blocks_in_use, 2);
    ck_assert_int_eq(p->refcount[root.blocks[0]], 1);
    ck_assert_int_eq(p->refcount[root.blocks[1]], 1);
    state_free(&root);
}
END_TEST

Suite *exercise_beam_cache_suite(void) {
    Suite *s = suite_create("exercise_beam_cache");
    TCase *tc = harness_tcase("blocks", 20);
    tcase_add_checked_fixture(tc, open_fixture, close_fixture);
    tcase_add_test(tc, test_fork_shares_and_a_write_copies_one_block);
    tcase_add_test(tc, test_truncate_gives_back_whole_blocks_only);
    tcase_add_test(tc, test_fork_replaces_what_dst_held);
    tcase_add_test(tc, test_four_beams_give_every_block_back);
    suite_add_tcase(s, tc);
    return s;
}
