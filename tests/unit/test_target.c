/* test_target.c — the contract of the target and step interfaces (target.h, stepper.h) that the decoding layer
 * relies on, on each backend (the loop index: 0 the reference, 1 the CPU engine, 2 the CUDA engine on the
 * kernels' emulator). Equality is bit for bit: a backend must compute a position the same way whether a prefill,
 * a chain or a tree reaches it. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "engine_mtp.h"
#include "engine_target.h"
#include "fixtures.h"
#include "harness.h"
#include "reference_target.h"

#define N_BACKENDS 3
static const char *const backend_names[N_BACKENDS] = {"reference", "cpu engine", "cuda engine"};

typedef struct {
    fixture_model model;
    engine e;
    int backend;
    decode_target t;
    int V, D;
} world;

static void world_open(world *w, uint64_t seed, int backend) {
    /* micro-tied for the CUDA engine, whose kernels need head_dim a multiple of 32 (micro's is 16) */
    fixture_model_open(&w->model, backend == 2 ? "micro-tied" : "micro", seed, NULL);
    w->backend = backend;
    if (backend == 0) {
        reference_target_build(&w->t, &w->model.m);
    } else {
        sp_error err;
        engine_options o = engine_defaults();
        o.cuda = backend == 2;
        ck_assert_msg(engine_open(&w->e, w->model.dir, &o, &err) == 0, "%s", err.msg);
        engine_target_build(&w->t, &w->e);
    }
    w->V = w->model.m.cfg.vocab_size;
    w->D = w->model.m.cfg.hidden_size;
}

static void world_close(world *w) {
    w->t.release(&w->t);
    if (w->backend >= 1) engine_close(&w->e);
    fixture_model_close(&w->model);
}

/* The MTP module of the world's backend as a stepper. */
static void world_mtp(world *w, stepper *s) {
    sp_error err;
    const int rc =
        w->backend == 0 ? reference_mtp_stepper_build(s, &w->model.m, &err) : engine_mtp_stepper_build(s, &w->e, &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
}

static int open_seq(decode_target *t) {
    sp_error err;
    const int seq = t->seq_open(t, &err);
    ck_assert_msg(seq >= 0, "%s", err.msg);
    return seq;
}

/* Logits [V] after prefilling tokens[0..n) into a new sequence (closed again). */
static void logits_after(decode_target *t, const int *tokens, int n, float *out, int V) {
    sp_error err;
    const int seq = open_seq(t);
    float *all = calloc((size_t)n * V, sizeof(float));
    ck_assert_msg(t->prefill(t, seq, tokens, n, all, NULL, &err) == 0, "%s", err.msg);
    memcpy(out, all + (size_t)(n - 1) * V, (size_t)V * sizeof(float));
    free(all);
    t->seq_close(t, seq);
}

/* The tree root 5 → {3 → 7, 4}: node 1 = 3, node 2 = 7 under it, node 3 = 4. */
static void small_tree(token_tree *tree, int V) {
    tree_build(tree, V, 4);
    tree_reset(tree, 5, CHILDREN_IID);
    ck_assert_int_eq(tree_add(tree, 0, 3), 1);
    ck_assert_int_eq(tree_add(tree, 1, 7), 2);
    ck_assert_int_eq(tree_add(tree, 0, 4), 3);
}

/* Every node's raw logits are those of prefilling its path, and committing a
 * node leaves the sequence where prefilling its path leaves it. */
START_TEST(test_verify_and_commit_follow_the_paths) {
    world w;
    world_open(&w, 51, _i);
    const int V = w.V, prefix[2] = {1, 2};
    static const int path_of[4][4] = {{5}, {5, 3}, {5, 3, 7}, {5, 4}};
    static const int len_of[4] = {1, 2, 3, 2};
    token_tree tree;
    small_tree(&tree, V);
    float *p = calloc((size_t)4 * V, sizeof(float)), *want = calloc((size_t)V, sizeof(float));
    float *next = calloc((size_t)V, sizeof(float));
    sp_error err;
    for (int commit = 0; commit < 4; commit++) {
        const int seq = open_seq(&w.t);
        ck_assert(w.t.prefill(&w.t, seq, prefix, 2, NULL, NULL, &err) == 0);
        const target_job job = {seq, &tree, p, NULL};
        ck_assert_msg(w.t.verify(&w.t, &job, 1, NULL, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(w.t.position(&w.t, seq), 3); /* the root is consumed by the pass itself */
        for (int i = 0; i < 4; i++) {
            int tokens[6] = {1, 2};
            memcpy(tokens + 2, path_of[i], (size_t)len_of[i] * sizeof(int));
            logits_after(&w.t, tokens, 2 + len_of[i], want, V);
            ck_assert_msg(memcmp(p + (size_t)i * V, want, (size_t)V * sizeof(float)) == 0, "%s: node %d",
                          backend_names[w.backend], i);
        }
        ck_assert_msg(w.t.commit(&w.t, seq, commit, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(w.t.position(&w.t, seq), 2 + len_of[commit]);
        /* the next token after the committed path sees exactly that path */
        const int after = 6;
        ck_assert(w.t.prefill(&w.t, seq, &after, 1, next, NULL, &err) == 0);
        int tokens[7] = {1, 2};
        memcpy(tokens + 2, path_of[commit], (size_t)len_of[commit] * sizeof(int));
        tokens[2 + len_of[commit]] = after;
        logits_after(&w.t, tokens, 3 + len_of[commit], want, V);
        ck_assert_msg(memcmp(next, want, (size_t)V * sizeof(float)) == 0, "%s: after committing node %d",
                      backend_names[w.backend], commit);
        w.t.seq_close(&w.t, seq);
    }
    target_memory mem;
    w.t.memory(&w.t, NULL, 0, &mem);
    ck_assert_int_eq(mem.kv_blocks_in_use, 0); /* every node's blocks went back with its sequence */
    free(p), free(want), free(next);
    tree_free(&tree);
    world_close(&w);
}
END_TEST

/* Processed distributions are sampler_probs of the raw logits; hidden states
 * are those prefill reports. */
START_TEST(test_processed_rows_and_hidden_states) {
    world w;
    world_open(&w, 52, _i);
    const int V = w.V, D = w.D, prompt[3] = {4, 1, 2};
    token_tree tree;
    small_tree(&tree, V);
    float *raw = calloc((size_t)4 * V, sizeof(float)), *probs = calloc((size_t)4 * V, sizeof(float));
    float *hidden = calloc((size_t)4 * D, sizeof(float)), *want = calloc((size_t)4 * D, sizeof(float));
    sampler_params sp = sampler_defaults();
    sp.temperature = 0.7f;
    sp.top_k = 5;
    sp_error err;
    for (int pass = 0; pass < 2; pass++) {
        const int seq = open_seq(&w.t);
        ck_assert(w.t.prefill(&w.t, seq, prompt, 3, NULL, NULL, &err) == 0);
        const target_job job = {seq, &tree, pass ? probs : raw, pass ? hidden : NULL};
        ck_assert(w.t.verify(&w.t, &job, 1, pass ? &sp : NULL, &err) == 0);
        w.t.seq_close(&w.t, seq);
    }
    for (int i = 0; i < 4; i++) {
        float row[64];
        sampler_probs(&sp, raw + (size_t)i * V, row, V);
        ck_assert(memcmp(row, probs + (size_t)i * V, (size_t)V * sizeof(float)) == 0);
    }
    /* node 2's hidden state = the last hidden state of prefilling 4 1 2 5 3 7 */
    const int path[6] = {4, 1, 2, 5, 3, 7};
    float *hs = calloc((size_t)6 * D, sizeof(float));
    const int seq = open_seq(&w.t);
    ck_assert(w.t.prefill(&w.t, seq, path, 6, NULL, hs, &err) == 0);
    w.t.seq_close(&w.t, seq);
    ck_assert(memcmp(hs + (size_t)5 * D, hidden + (size_t)2 * D, (size_t)D * sizeof(float)) == 0);
    free(raw), free(probs), free(hidden), free(want), free(hs);
    tree_free(&tree);
    world_close(&w);
}
END_TEST

/* Two sequences in one pass give what each gives alone; a fork continues
 * like its source, which the fork does not disturb. */
START_TEST(test_jobs_and_forks_are_independent) {
    world w;
    world_open(&w, 53, _i);
    const int V = w.V, a[2] = {1, 2}, b[3] = {6, 6, 3};
    token_tree ta, tb;
    small_tree(&ta, V);
    tree_build(&tb, V, 2);
    tree_reset(&tb, 2, CHILDREN_IID);
    tree_add(&tb, 0, 1);
    float *pa = calloc((size_t)4 * V, sizeof(float)), *pb = calloc((size_t)2 * V, sizeof(float));
    float *alone = calloc((size_t)4 * V, sizeof(float));
    sp_error err;
    const int sa = open_seq(&w.t), sb = open_seq(&w.t);
    ck_assert(w.t.prefill(&w.t, sa, a, 2, NULL, NULL, &err) == 0);
    ck_assert(w.t.prefill(&w.t, sb, b, 3, NULL, NULL, &err) == 0);
    const int fork = w.t.seq_fork(&w.t, sa, &err);
    ck_assert_msg(fork >= 0, "%s", err.msg);
    ck_assert_int_eq(w.t.position(&w.t, fork), 2);
    /* the fork shares its source's one block: three tables list it, two blocks are held */
    target_memory mem;
    const int open_seqs[3] = {sa, sb, fork};
    w.t.memory(&w.t, open_seqs, 3, &mem);
    ck_assert_int_eq(mem.kv_blocks_listed, 3);
    ck_assert_int_eq(mem.kv_blocks_in_use, 2);
    ck_assert_uint_gt(mem.kv_block_bytes, 0);
    ck_assert_uint_gt(mem.seq_state_bytes, 0);
    const target_job jobs[2] = {{sa, &ta, pa, NULL}, {sb, &tb, pb, NULL}};
    ck_assert_msg(w.t.verify(&w.t, jobs, 2, NULL, &err) == 0, "%s", err.msg);
    const target_job again = {fork, &ta, alone, NULL};
    ck_assert(w.t.verify(&w.t, &again, 1, NULL, &err) == 0);
    ck_assert(memcmp(pa, alone, (size_t)4 * V * sizeof(float)) == 0);
    int tokens[5] = {6, 6, 3, 2, 1};
    logits_after(&w.t, tokens, 5, alone, V);
    ck_assert(memcmp(pb + V, alone, (size_t)V * sizeof(float)) == 0);
    for (int i = 0; i < 3; i++) {
        ck_assert(w.t.commit(&w.t, open_seqs[i], 0, &err) == 0);
        w.t.seq_close(&w.t, open_seqs[i]);
    }
    w.t.memory(&w.t, NULL, 0, &mem);
    ck_assert_int_eq(mem.kv_blocks_in_use, 0);
    free(pa), free(pb), free(alone);
    tree_free(&ta), tree_free(&tb);
    world_close(&w);
}
END_TEST

/* Misuse is refused with a message, and leaves the sequence usable. */
START_TEST(test_misuse_is_refused) {
    world w;
    world_open(&w, 54, _i);
    token_tree tree;
    small_tree(&tree, w.V);
    float *p = calloc((size_t)4 * w.V, sizeof(float));
    sp_error err;
    const int seq = open_seq(&w.t), tok = 1;
    ck_assert_int_eq(w.t.commit(&w.t, seq, 0, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "not in its verified tree"));
    const target_job job = {seq, &tree, p, NULL};
    ck_assert(w.t.verify(&w.t, &job, 1, NULL, &err) == 0);
    ck_assert_int_eq(w.t.verify(&w.t, &job, 1, NULL, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "verified twice"));
    ck_assert_int_eq(w.t.prefill(&w.t, seq, &tok, 1, NULL, NULL, &err), -1);
    ck_assert_int_eq(w.t.commit(&w.t, seq, 4, &err), -1);
    ck_assert(w.t.commit(&w.t, seq, 3, &err) == 0);
    ck_assert(w.t.prefill(&w.t, seq, &tok, 1, NULL, NULL, &err) == 0);
    w.t.seq_close(&w.t, seq);
    ck_assert_int_eq(w.t.prefill(&w.t, seq, &tok, 1, NULL, NULL, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "is not open"));
    ck_assert_int_eq(w.t.seq_fork(&w.t, 99, &err), -1);
    ck_assert_int_eq(w.t.position(&w.t, seq), -1);
    free(p);
    tree_free(&tree);
    world_close(&w);
}
END_TEST

/* A stepper's rewind returns to the marked state exactly, and a step over n
 * positions equals n steps of one. */
START_TEST(test_stepper_marks) {
    world w;
    world_open(&w, 55, _i);
    const int V = w.V, D = w.D;
    stepper s;
    sp_error err;
    world_mtp(&w, &s);
    ck_assert(s.reads_hidden && s.V == V && s.D == D);
    float *h = calloc((size_t)3 * D, sizeof(float)), *a = calloc((size_t)V, sizeof(float));
    float *b = calloc((size_t)V, sizeof(float)), *ha = calloc((size_t)D, sizeof(float));
    float *hb = calloc((size_t)D, sizeof(float));
    for (int i = 0; i < 3 * D; i++) h[i] = (float)((i * 37) % 11) / 11.0f - 0.5f;
    const int tokens[3] = {2, 5, 1};
    s.reset(&s);
    s.mark(&s, 0);
    ck_assert(s.step(&s, tokens, h, 3, a, ha, &err) == 0);
    ck_assert_int_eq(s.position(&s), 3);
    s.rewind(&s, 0);
    ck_assert_int_eq(s.position(&s), 0);
    for (int i = 0; i < 3; i++)
        ck_assert(s.step(&s, &tokens[i], h + (size_t)i * D, 1, i == 2 ? b : NULL, i == 2 ? hb : NULL, &err) == 0);
    ck_assert(memcmp(a, b, (size_t)V * sizeof(float)) == 0);
    ck_assert(memcmp(ha, hb, (size_t)D * sizeof(float)) == 0);
    s.mark(&s, 1);
    ck_assert(s.step(&s, tokens, h, 1, a, NULL, &err) == 0);
    s.rewind(&s, 1);
    ck_assert(s.step(&s, tokens, h, 1, b, NULL, &err) == 0);
    ck_assert(memcmp(a, b, (size_t)V * sizeof(float)) == 0);
    ck_assert_int_eq(s.step(&s, tokens, h, 0, NULL, NULL, &err), -1);
    s.release(&s);
    free(h), free(a), free(b), free(ha), free(hb);
    world_close(&w);
}
END_TEST

Suite *target_suite(void) {
    Suite *s = suite_create("target");
    TCase *tc = harness_tcase("contract", 60);
    tcase_add_loop_test(tc, test_verify_and_commit_follow_the_paths, 0, N_BACKENDS);
    tcase_add_loop_test(tc, test_processed_rows_and_hidden_states, 0, N_BACKENDS);
    tcase_add_loop_test(tc, test_jobs_and_forks_are_independent, 0, N_BACKENDS);
    tcase_add_loop_test(tc, test_misuse_is_refused, 0, N_BACKENDS);
    tcase_add_loop_test(tc, test_stepper_marks, 0, N_BACKENDS);
    suite_add_tcase(s, tc);
    return s;
}
