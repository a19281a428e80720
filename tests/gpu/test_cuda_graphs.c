/* test_cuda_graphs.c — the CUDA backend's passes as CUDA graphs (optimized/cuda/graph_cache.h) give the same
 * logits as without them. Runs on the kernels' CPU emulator, whose runtime records a capture and replays it as a
 * GPU would. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "unit/engine_compare.h"
#include "fixtures.h"
#include "harness.h"
#include "method.h"

#define PROMPT 5
/* The passes after the prompt: a tree of n nodes, node 0 the pending token; shape 0 a chain, 1 a tree (node i's
 * parent (i − 1) / 2, so branches); the commit keeps the path to its last node. Sizes repeat, so that a shape's
 * graph is reused at a longer context than it was captured at: a shape's first pass runs op by op, its second is
 * captured and instantiated, its third and later update that graph. */
static const int pass_n[] = {1, 3, 1, 4, 1, 3, 2, 1, 4, 3, 1, 2};
static const int pass_tree[] = {0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0};
#define N_PASSES (int)(sizeof pass_n / sizeof pass_n[0])

static size_t script_rows(void) {
    size_t rows = PROMPT;
    for (int i = 0; i < N_PASSES; i++) rows += (size_t)pass_n[i];
    return rows;
}

/* The first row of the first pass that reuses a graph (a shape's third pass), or −1. */
static int first_reuse_row(void) {
    int row = PROMPT, seen[N_PASSES];
    for (int p = 0; p < N_PASSES; p++) {
        int times = 0;
        for (int q = 0; q < p; q++) times += seen[q] == pass_n[p];
        if (times == 2) return row;
        seen[p] = pass_n[p];
        row += pass_n[p];
    }
    return -1;
}

/* The first row of rows [from, to) where a and b differ, or −1. */
static int first_difference(const float *a, const float *b, size_t from, size_t to, int V) {
    for (size_t r = from; r < to; r++)
        if (memcmp(a + r * V, b + r * V, (size_t)V * sizeof(float))) return (int)r;
    return -1;
}

/* The script's raw logits [script_rows(), V] with the CUDA backend's graphs in `mode`, or NULL with a message;
 * *stats: its graphs. With `against` (else NULL), the script stops after the first pass whose logits differ from
 * its rows there, and *differs is that row (−1: none did). */
static float *run_script(const char *dir, int mode, cuda_graph_stats *stats, int *vocab, sp_error *err,
                         const float *against, int *differs) {
    engine e;
    engine_options o = engine_defaults();
    o.cuda = 1;
    o.cuda_eager = mode == CUDA_GRAPHS_OFF; /* the engine's switch; the planted bug is the backend's own */
    if (engine_open(&e, dir, &o, err)) return NULL;
    if (backend_cuda_graphs(&e.be, mode) != (o.cuda_eager ? CUDA_GRAPHS_OFF : CUDA_GRAPHS_ON)) {
        sp_fail(err, "the CUDA backend did not start with graphs %s", o.cuda_eager ? "off" : "on");
        engine_close(&e);
        return NULL;
    }
    /* cut every 3 norms (micro-tied's 4 layers: 3 segments a pass, cut mid-layer too): the segments' keys,
     * updates and the order of their launches are tested, not just one graph a pass */
    if (backend_cuda_graph_segments(&e.be, 3) != 16) {
        sp_fail(err, "the CUDA backend did not start with 16 norms a segment");
        engine_close(&e);
        return NULL;
    }
    decode_target t;
    engine_target_build(&t, &e);
    const int V = *vocab = e.cfg.vocab_size;
    float *logits = calloc(script_rows() * (size_t)V, sizeof(float)), *at = logits;
    int prompt[PROMPT];
    for (int i = 0; i < PROMPT; i++) prompt[i] = (7 * i + 3) % V;
    const int seq = t.seq_open(&t, err);
    int failed = seq < 0 || t.prefill(&t, seq, prompt, PROMPT, at, NULL, err);
    at += (size_t)PROMPT * V;
    token_tree tree;
    tree_build(&tree, V, 8);
    if (differs) *differs = -1;
    for (int p = 0; p < N_PASSES && !failed && !(against && *differs >= 0); p++) {
        tree_reset(&tree, (11 * p + 5) % V, CHILDREN_IID);
        for (int i = 1; i < pass_n[p]; i++) tree_add(&tree, pass_tree[p] ? (i - 1) / 2 : i - 1, (13 * i + p) % V);
        const target_job job = {seq, &tree, at, NULL};
        failed = t.verify(&t, &job, 1, NULL, err) || t.commit(&t, seq, pass_n[p] - 1, err);
        const size_t from = (size_t)(at - logits) / V;
        at += (size_t)pass_n[p] * V;
        if (against) *differs = first_difference(logits, against, from, from + (size_t)pass_n[p], V);
    }
    *stats = backend_cuda_graph_stats(&e.be);
    tree_free(&tree);
    if (seq >= 0) t.seq_close(&t, seq);
    t.release(&t);
    engine_close(&e);
    if (failed) free(logits);
    return failed ? NULL : logits;
}

/* The script (a prefill, decode steps and verify passes of several sizes, chains and trees, the context growing
 * between them) gives bit-identical logits with graphs and without, through graphs that were updated, not only
 * instantiated. Negative control: graphs never updated after their first capture (CUDA_GRAPHS_STALE) must give
 * other logits. */
START_TEST(test_graphs_give_the_same_logits) {
    char dir[512];
    write_checkpoint(dir, sizeof dir, "micro-tied", 1, 91, DTYPE_BF16);
    cuda_graph_stats off, on;
    int V;
    sp_error err;
    float *eager = run_script(dir, CUDA_GRAPHS_OFF, &off, &V, &err, NULL, NULL);
    ck_assert_msg(eager != NULL, "graphs off: %s", err.msg);
    float *graphs = run_script(dir, CUDA_GRAPHS_ON, &on, &V, &err, NULL, NULL);
    ck_assert_msg(graphs != NULL, "graphs on: %s", err.msg);
    ck_assert_msg(off.passes == 0 && off.launched == 0, "graphs off: %ld passes captured", off.passes);
    /* every pass but a shape's first as graphs, each in segments; repeated shapes updated, not re-made */
    int shapes = 1; /* the prompt's */
    for (int p = 0; p < N_PASSES; p++) {
        int again = 0;
        for (int q = 0; q < p; q++) again |= pass_n[q] == pass_n[p];
        shapes += !again;
    }
    ck_assert_msg(on.passes == 1 + N_PASSES - shapes && on.segments >= 2 * on.passes && on.launched == on.segments,
                  "graphs on: %ld passes captured in %ld segments, %ld launched", on.passes, on.segments, on.launched);
    ck_assert_msg(on.updated >= 2 * 4 && on.instantiated + on.updated == on.launched,
                  "graphs on: %ld updated, %ld instantiated of %ld", on.updated, on.instantiated, on.launched);
    const int diff = first_difference(graphs, eager, 0, script_rows(), V);
    ck_assert_msg(diff < 0, "logits with graphs differ from those without at row %d of %zu", diff, script_rows());
    /* the control: graphs never updated after their first capture give the same logits until a shape's graph is
     * first reused (at a longer context than it was captured at), other logits then. It stops there: later, such
     * a graph also holds buffers that have grown since, freed (a fault on a GPU). */
    cuda_graph_stats stale;
    int stale_row;
    float *old = run_script(dir, CUDA_GRAPHS_STALE, &stale, &V, &err, eager, &stale_row);
    ck_assert_msg(old != NULL, "stale graphs: %s", err.msg);
    const int reuse = first_reuse_row();
    ck_assert_msg(stale.updated == 0 && stale_row == reuse,
                  "control: graphs never updated after their first capture (%ld updates) first differ from the "
                  "logits without graphs at row %d, not at the first reuse of a shape, row %d",
                  stale.updated, stale_row, reuse);
    free(eager), free(graphs), free(old);
    /* the switch refuses what it cannot set: another backend, a mode that is none of the three */
    engine e;
    const engine_options cpu = engine_defaults();
    ck_assert_msg(engine_open(&e, dir, &cpu, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(backend_cuda_graphs(&e.be, CUDA_GRAPHS_ON), -1);
    ck_assert_int_eq(backend_cuda_graph_segments(&e.be, 4), -1);
    engine_close(&e);
    engine_options o = engine_defaults();
    o.cuda = 1;
    ck_assert_msg(engine_open(&e, dir, &o, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(backend_cuda_graphs(&e.be, 3), -1);
    ck_assert_int_eq(backend_cuda_graph_segments(&e.be, 0), -1);
    ck_assert_int_eq(backend_cuda_graphs(&e.be, CUDA_GRAPHS_OFF), CUDA_GRAPHS_ON);
    engine_close(&e);
    harness_rmtree(dir);
}
END_TEST

#define N_TOKENS 10

/* Every method at temperature 0 with graphs gives the greedy oracle's tokens computed without them: the verify
 * passes, the in-place pass before the acceptance on the device, and the MTP module's chain passes. */
START_TEST(test_methods_with_graphs_match_the_eager_oracle) {
    fixture_model tf, df;
    fixture_model_open(&tf, "micro-tied", 93, NULL);
    fixture_model_open(&df, "micro-draft", 94, NULL);
    engine_options o = engine_defaults(), cpu = engine_defaults();
    o.cuda = 1;
    static engine_parts ep; /* large: the engines' tables and buffers */
    engine_parts_open(&ep, &tf, &o, &df, &cpu);
    static const char *const flags[] = {"--method mtp --k 3 --temperature 0 --mtp-sample",
                                        "--method medusa --temperature 0 --rule exact-norepl"};
    const int V = tf.m.cfg.vocab_size;
    int prompt[4], want[N_TOKENS];
    for (int i = 0; i < 4; i++) prompt[i] = (i * 5 + 2) % V;
    ck_assert_int_eq(backend_cuda_graphs(&ep.te.be, CUDA_GRAPHS_OFF), CUDA_GRAPHS_ON);
    engine_greedy_oracle(&ep.t, prompt, 4, N_TOKENS, want);
    ck_assert_int_eq(backend_cuda_graphs(&ep.te.be, CUDA_GRAPHS_ON), CUDA_GRAPHS_OFF);
    const cuda_graph_stats before = backend_cuda_graph_stats(&ep.te.be);
    assert_methods_give(&ep.parts, flags, (int)(sizeof flags / sizeof flags[0]), prompt, 4, want, N_TOKENS,
                        "a 4-token prompt, graphs on");
    const cuda_graph_stats after = backend_cuda_graph_stats(&ep.te.be);
    ck_assert_msg(after.updated > before.updated, "the methods ran no updated graph (%ld updates)",
                  after.updated - before.updated);
    engine_parts_close(&ep);
    fixture_model_close(&df);
    fixture_model_close(&tf);
}
END_TEST

Suite *cuda_graphs_suite(void) {
    Suite *s = suite_create("cuda_graphs");
    TCase *tc = harness_tcase("graphs against launches", 240);
    tcase_add_test(tc, test_graphs_give_the_same_logits);
    tcase_add_test(tc, test_methods_with_graphs_match_the_eager_oracle);
    suite_add_tcase(s, tc);
    return s;
}
