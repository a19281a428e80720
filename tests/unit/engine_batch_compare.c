/* engine_batch_compare.c — see engine_batch_compare.h. */
#include "engine_batch_compare.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "engine_target.h"

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

int engine_batch_equals_alone(const char *dir, const engine_options *o, plant_cross planted, int multi_seq) {
    engine e;
    sp_error err;
    ck_assert_msg(engine_open(&e, dir, o, &err) == 0, "%s", err.msg);
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
