/* test_engine_batch.c — a verify pass over several sequences on the CPU
 * engine (one pass, every job's nodes; engine_target.c) against the same
 * jobs verified one pass each: raw logits, processed distributions and
 * hidden states equal bit for bit, for a chain and trees, sequences at
 * different positions, round after round (a commit leaves each sequence as
 * if it had run alone). Bit equality is the contract, not a tolerance: the
 * CPU products give each row the same bits whatever the rows beside it
 * (cpu/gemm.h), and the cores compute each node alone. The negative
 * controls plant a cross-sequence slip in the backend — a node attending to
 * another sequence's keys and values, a node's DeltaNet step starting from
 * another sequence's state — and the comparison must catch each. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "engine_plants.h"
#include "engine_target.h"
#include "fixtures.h"
#include "harness.h"

#define N_JOBS 3
#define ROUNDS 3

/* Job j's tree in round r: a chain, the tree root → {a → b, c}, a wider tree; its tokens move with j and r. */
static void job_tree(token_tree *t, int V, int j, int r) {
    const int k = 3 * j + 5 * r;
    tree_reset(t, (1 + k) % V, CHILDREN_IID);
    if (j == 0) {
        for (int i = 1; i < 4; i++) tree_add(t, i - 1, (k + 2 * i) % V);
    } else if (j == 1) {
        tree_add(t, 0, (k + 3) % V);
        tree_add(t, 1, (k + 7) % V);
        tree_add(t, 0, (k + 4) % V);
    } else {
        for (int i = 0; i < 3; i++) tree_add(t, 0, (k + 2 + i) % V);
        tree_add(t, 2, (k + 9) % V);
        tree_add(t, 4, (k + 1) % V);
    }
}

/* The node job j commits in round r: a deep one, a different one each round. */
static int job_commit(const token_tree *t, int j, int r) { return (t->n - 1 - (j + r) % 2 + t->n) % t->n; }

/* Prefills N_JOBS sequences with prompts of different lengths (20, 7, 12 positions: different blocks and bases)
 * and forks each: seqs[j] runs in the shared passes, seqs[N_JOBS + j] alone. */
static void open_pairs(decode_target *t, int V, int *seqs) {
    static const int lengths[N_JOBS] = {20, 7, 12};
    sp_error err;
    for (int j = 0; j < N_JOBS; j++) {
        int prompt[20];
        for (int i = 0; i < lengths[j]; i++) prompt[i] = (7 * i + 3 * j + 1) % V;
        seqs[j] = t->seq_open(t, &err);
        ck_assert_msg(seqs[j] >= 0, "%s", err.msg);
        ck_assert_msg(t->prefill(t, seqs[j], prompt, lengths[j], NULL, NULL, &err) == 0, "%s", err.msg);
        seqs[N_JOBS + j] = t->seq_fork(t, seqs[j], &err);
        ck_assert_msg(seqs[N_JOBS + j] >= 0, "%s", err.msg);
    }
}

/* ROUNDS rounds of every job verified in one pass and the same jobs verified one pass each, then the same node
 * committed on both sides; returns 1 when every row (raw logits in even rounds, processed distributions and
 * hidden states in odd ones) agrees bit for bit. */
static int batched_equals_alone(const char *dir, plant_cross planted, int multi_seq, int threads) {
    engine e;
    sp_error err;
    engine_options o = engine_defaults();
    o.threads = threads; /* 2: the DeltaNet core's channel ranges and heads on two threads */
    ck_assert_msg(engine_open(&e, dir, &o, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(e.be.multi_seq, 1);
    e.be.multi_seq = multi_seq; /* 0: the host's fallback for a backend that runs one sequence a pass */
    decode_target t;
    engine_target_build(&t, &e);
    const int V = e.cfg.vocab_size, D = e.cfg.hidden_size, cap = 6;
    int seqs[2 * N_JOBS];
    open_pairs(&t, V, seqs);
    engine_plant_cross_seq(&e, planted);
    sampler_params sp = sampler_defaults();
    sp.temperature = 0.8f;
    token_tree trees[N_JOBS];
    float *rows[2][N_JOBS], *hidden[2][N_JOBS];
    for (int side = 0; side < 2; side++)
        for (int j = 0; j < N_JOBS; j++) {
            rows[side][j] = calloc((size_t)cap * V, sizeof(float));
            hidden[side][j] = calloc((size_t)cap * D, sizeof(float));
        }
    for (int j = 0; j < N_JOBS; j++) tree_build(&trees[j], V, cap);
    int same = 1;
    for (int r = 0; r < ROUNDS; r++) {
        const sampler_params *round_sp = r % 2 ? &sp : NULL;
        target_job jobs[2][N_JOBS];
        for (int j = 0; j < N_JOBS; j++) {
            job_tree(&trees[j], V, j, r);
            for (int side = 0; side < 2; side++)
                jobs[side][j] =
                    (target_job){seqs[side * N_JOBS + j], &trees[j], rows[side][j], r % 2 ? hidden[side][j] : NULL};
        }
        engine_plant_passes = engine_plant_widest = 0;
        ck_assert_msg(t.verify(&t, jobs[0], N_JOBS, round_sp, &err) == 0, "%s", err.msg);
        const int want = multi_seq ? 1 : N_JOBS;
        ck_assert_msg(engine_plant_passes == want && engine_plant_widest == N_JOBS / want,
                      "%d jobs verified in %d passes of at most %d", N_JOBS, engine_plant_passes, engine_plant_widest);
        for (int j = 0; j < N_JOBS; j++)
            ck_assert_msg(t.verify(&t, &jobs[1][j], 1, round_sp, &err) == 0, "%s", err.msg);
        for (int j = 0; j < N_JOBS; j++) {
            const int n = trees[j].n;
            same &= memcmp(rows[0][j], rows[1][j], (size_t)n * V * sizeof(float)) == 0;
            if (r % 2) same &= memcmp(hidden[0][j], hidden[1][j], (size_t)n * D * sizeof(float)) == 0;
            const int node = job_commit(&trees[j], j, r);
            for (int side = 0; side < 2; side++)
                ck_assert_msg(t.commit(&t, seqs[side * N_JOBS + j], node, &err) == 0, "%s", err.msg);
            ck_assert_int_eq(t.position(&t, seqs[j]), t.position(&t, seqs[N_JOBS + j]));
        }
    }
    for (int side = 0; side < 2; side++)
        for (int j = 0; j < N_JOBS; j++) free(rows[side][j]), free(hidden[side][j]);
    for (int j = 0; j < N_JOBS; j++) tree_free(&trees[j]);
    for (int i = 0; i < 2 * N_JOBS; i++) t.seq_close(&t, seqs[i]);
    t.release(&t);
    engine_close(&e);
    return same;
}

START_TEST(test_batched_verify_equals_alone) {
    fixture_model m;
    fixture_model_open(&m, "micro", 71, NULL);
    const int threads = 1 + _i;
    ck_assert_msg(batched_equals_alone(m.dir, PLANT_CROSS_NONE, 1, threads),
                  "%d threads: a pass over %d sequences differs from one pass each", threads, N_JOBS);
    fixture_model_close(&m);
}
END_TEST

/* A backend without multi_seq gets one pass a job (the CUDA backend's case), with the same rows. */
START_TEST(test_one_pass_a_job_without_multi_seq) {
    fixture_model m;
    fixture_model_open(&m, "micro", 72, NULL);
    ck_assert(batched_equals_alone(m.dir, PLANT_CROSS_NONE, 0, 1));
    fixture_model_close(&m);
}
END_TEST

/* Negative controls: the same comparison catches a node seeing another sequence's keys and values, and a node
 * stepping from another sequence's DeltaNet state. */
START_TEST(test_cross_sequence_slips_are_caught) {
    fixture_model m;
    fixture_model_open(&m, "micro", 71, NULL);
    ck_assert_msg(!batched_equals_alone(m.dir, PLANT_CROSS_ATTENTION, 1, 1),
                  "a node attending to another sequence's cache");
    ck_assert_msg(!batched_equals_alone(m.dir, PLANT_CROSS_DELTANET, 1, 1),
                  "a node stepping from another sequence's state");
    fixture_model_close(&m);
}
END_TEST

Suite *engine_batch_suite(void) {
    Suite *s = suite_create("engine-batch");
    TCase *tc = harness_tcase("batched verify", 60);
    tcase_add_loop_test(tc, test_batched_verify_equals_alone, 0, 2); /* 1 and 2 threads */
    tcase_add_test(tc, test_one_pass_a_job_without_multi_seq);
    tcase_add_test(tc, test_cross_sequence_slips_are_caught);
    suite_add_tcase(s, tc);
    return s;
}
