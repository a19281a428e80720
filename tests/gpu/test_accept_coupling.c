/* test_accept_coupling.c — the CUDA engine's acceptance where the logits are (verify_accept, on the kernels' CPU
 * emulator) held to the host's acceptance and to the CPU engine by coupling: the same seeds through both. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit/engine_compare.h"
#include "fixtures.h"
#include "harness.h"
#include "method.h"
#include "planted_engine.h"
#include "stats.h"

#define MAX_TOKENS 6
#define DELTA 0.05
/* The bound on TV(device path, host path): 0 mismatches in the 44 runs below give 0.066. */
#define BOUND_HOST 0.10
/* The bound on TV(CUDA engine, CPU engine). */
#define BOUND_CPU 0.25

typedef struct {
    const char *flags;
    int n_seeds, n_tokens, control; /* control: the planted target runs these seeds too */
} coupled_method;

/* The draft is micro-tied itself on the CPU engine: q close to p, so rounds accept, reject and end in bonuses
 * alike; the MTP module's random drafts are rejected, so its rounds end in corrections from the residual. The
 * draft trees (two children under the root, one under each) go through kn_accept_tree. */
static const coupled_method methods[] = {
    {"--method spec --k 3 --temperature 1", 22, 6, 1},
    {"--method mtp --k 2 --mtp-sample --temperature 1", 8, 4, 0},             /* a pass per token: shorter runs */
    {"--method spec --tree-shape 2,1 --temperature 1", 8, 6, 0},              /* without replacement (kn_accept_tree) */
    {"--method spec --tree-shape 2,1 --rule exact --temperature 1", 6, 6, 0}, /* i.i.d. children */
};
#define N_METHODS (int)(sizeof methods / sizeof methods[0])

/* tokens[MAX_TOKENS] (n_tokens of them, zeros after) of one run. */
static void run(const method_parts *parts, const coupled_method *m, uint64_t seed, int *tokens) {
    const char *flags = m->flags;
    method_spec s = fixture_spec(flags);
    s.max_tokens = m->n_tokens;
    s.stop_at_eos = 0;
    s.seed = seed;
    const int prompt[2] = {1, 5};
    decode_output out;
    sp_error err;
    ck_assert_msg(method_generate(&s, parts, prompt, 2, &out, &err) == 0, "%s, seed %llu: %s", flags,
                  (unsigned long long)seed, err.msg);
    ck_assert_int_eq(out.n, m->n_tokens);
    memset(tokens, 0, sizeof(int) * MAX_TOKENS);
    memcpy(tokens, out.tokens, sizeof(int) * (size_t)m->n_tokens);
    decode_output_free(&out);
}

typedef struct {
    int runs, host, cpu;       /* runs, and those whose tokens differ from the device path's */
    int control_runs, control; /* the same for the control */
} mismatches;

/* Why a coupling bound is a distribution test: every random number of a run is a pure function of its Philox site
 * (seed, purpose, round, position, slot: sampler.h, accept.h), and the device path draws at the same sites as the
 * host path (verify, then accept_exact on the downloaded distributions). Run both with the same seed and the pair
 * (A, B) of their token sequences is one draw of a coupling of the two output laws; for any coupling,
 * TV(law of A, law of B) ≤ P(A ≠ B). Over n seeds the number of runs that differ is binomial with that
 * probability, so its Clopper–Pearson upper bound at 95 % bounds the TV distance between the laws of the whole
 * output sequences. It assumes nothing about the laws, and is far tighter than comparing histograms at the same
 * n: a correct device path gives no mismatch at all, since its distributions are the host path's floats and its
 * arithmetic the rule's.
 *
 * The same seeds through the CPU engine close the chain to the exact law: the CPU engine is held to it
 * (tests/stat/test_engine_dist.c), and TV(CUDA, exact) ≤ TV(CUDA, CPU) + TV(CPU, exact). The two engines' logits
 * differ by numerics (bf16 KV cache, other sums: test_engine_cuda.c's 4e-3), so a draw within that of a tie can
 * go either way; BOUND_CPU is looser for that reason.
 *
 * Negative control: the engine's acceptance at the next round's sites (planted_engine.h, engine-accept-round),
 * draws the host path does not make. Its mismatches, on the draft-model seeds (fewer runs than the real path's),
 * must put its bound above BOUND_HOST: the test sees a device path that does not replay the host's draws. A slip
 * that changes the law, not only the draws, is a mismatch on every seed where it shows, so it is caught as well.
 *
 * The emulator is slow, so the runs are short (6 tokens, 4 for MTP, after a 2-token prompt) and few; its speed is
 * in docs/verification.md. */
START_TEST(test_device_acceptance_couples_with_the_host) {
    fixture_model tf;
    fixture_model_open(&tf, "micro-tied", 91, NULL);
    engine_options cuda = engine_defaults(), cpu = engine_defaults();
    cuda.cuda = 1;
    static engine_parts gpu, cpu_parts; /* large: the engines' tables and buffers */
    engine_parts_open(&gpu, &tf, &cuda, &tf, &cpu);
    engine_parts_open(&cpu_parts, &tf, &cpu, &tf, &cpu);
    ck_assert_msg(gpu.t.verify_accept && !cpu_parts.t.verify_accept,
                  "the CUDA engine accepts where its logits are, the CPU engine on the host");
    decode_target host_t = gpu.t; /* the same engine, the round loop's verify + accept_exact */
    host_t.verify_accept = NULL;
    host_t.mtp_verify_accept = NULL; /* and the MTP drafts drawn by the proposer (test_mtp_device.c: the device's) */
    decode_target control_t;
    planted_engine_target_build(&control_t, &gpu.te, PLANT_ENGINE_ACCEPT_ROUND);
    method_parts host = gpu.parts, control = gpu.parts;
    host.target = &host_t;
    control.target = &control_t;

    mismatches n = {0};
    for (int m = 0; m < N_METHODS; m++)
        for (int i = 0; i < methods[m].n_seeds; i++) {
            const uint64_t seed = 1000 + 17 * (uint64_t)i;
            int dev[MAX_TOKENS], other[MAX_TOKENS];
            run(&gpu.parts, &methods[m], seed, dev);
            run(&host, &methods[m], seed, other);
            n.host += memcmp(dev, other, sizeof dev) != 0;
            run(&cpu_parts.parts, &methods[m], seed, other);
            n.cpu += memcmp(dev, other, sizeof dev) != 0;
            n.runs++;
            if (!methods[m].control) continue;
            run(&control, &methods[m], seed, other);
            n.control += memcmp(dev, other, sizeof dev) != 0;
            n.control_runs++;
        }
    const double host_ub = stats_clopper_pearson_upper(n.host, n.runs, DELTA);
    const double cpu_ub = stats_clopper_pearson_upper(n.cpu, n.runs, DELTA);
    const double control_ub = stats_clopper_pearson_upper(n.control, n.control_runs, DELTA);
    printf("accept coupling: %d runs; differ from the device path: host path %d (TV <= %.3f), CPU engine %d "
           "(TV <= %.3f); control %d of %d (bound %.3f)\n",
           n.runs, n.host, host_ub, n.cpu, cpu_ub, n.control, n.control_runs, control_ub);
    ck_assert_msg(host_ub <= BOUND_HOST, "device vs host acceptance: %d of %d runs differ: TV <= %.3f, above %.2f",
                  n.host, n.runs, host_ub, BOUND_HOST);
    ck_assert_msg(cpu_ub <= BOUND_CPU, "CUDA vs CPU engine: %d of %d runs differ: TV <= %.3f, above %.2f", n.cpu,
                  n.runs, cpu_ub, BOUND_CPU);
    ck_assert_msg(control_ub > BOUND_HOST,
                  "control: acceptance at the next round's sites differs in %d of %d runs: "
                  "bound %.3f, within %.2f",
                  n.control, n.control_runs, control_ub, BOUND_HOST);

    control_t.release(&control_t);
    engine_parts_close(&cpu_parts);
    engine_parts_close(&gpu);
    fixture_model_close(&tf);
}
END_TEST

/* Where a round's acceptance runs: a tree drawn from q (here without replacement, two children under the root
 * and one under the first) is accepted on the device, so its distributions never reach the host and the job's
 * rows stay as they were; a tree of top ranks (accept_exact refuses it) takes them to the host and fails with
 * accept_exact's message. The coupling above cannot tell where the rule ran; this does. */
START_TEST(test_trees_are_accepted_on_the_device) {
    fixture_model tf;
    fixture_model_open(&tf, "micro-tied", 92, NULL);
    engine e;
    engine_options o = engine_defaults();
    o.cuda = 1;
    sp_error err;
    ck_assert_msg(engine_open(&e, tf.dir, &o, &err) == 0, "%s", err.msg);
    decode_target t;
    engine_target_build(&t, &e);
    const int V = e.cfg.vocab_size, prompt[3] = {1, 5, 9};
    token_tree tree;
    tree_build(&tree, V, 4);
    float *p = calloc((size_t)4 * V, sizeof(float));
    const sampler_params sp = sampler_defaults();
    for (int top_ranks = 0; top_ranks < 2; top_ranks++) {
        tree_reset(&tree, 7, top_ranks ? CHILDREN_TOP_RANKS : CHILDREN_NO_REPLACEMENT);
        tree_add(&tree, 0, 3), tree_add(&tree, 0, 4), tree_add(&tree, 1, 5);
        for (int i = 0; i < 4; i++)
            for (int v = 0; v < V; v++) tree_q(&tree, i)[v] = 1.0f / V;
        for (size_t i = 0; i < (size_t)4 * V; i++) p[i] = -1.0f; /* no distribution has a negative entry */
        const int seq = t.seq_open(&t, &err);
        ck_assert_msg(seq >= 0 && t.prefill(&t, seq, prompt, 3, NULL, NULL, &err) == 0, "%s", err.msg);
        const target_job job = {seq, &tree, p, NULL};
        const accept_site site = {5, 0, 3};
        accept_result r;
        const int rc = t.verify_accept(&t, &job, &sp, site, &r, &err);
        int untouched = 1;
        for (size_t i = 0; i < (size_t)4 * V; i++) untouched &= p[i] == -1.0f;
        if (top_ranks) {
            ck_assert_msg(rc != 0 && strstr(err.msg, "top-ranked"), "a tree of top ranks: %s", rc ? err.msg : "ok");
            ck_assert_msg(!untouched, "a tree of top ranks: the distributions did not come to the host");
        } else {
            ck_assert_msg(rc == 0, "%s", err.msg);
            ck_assert_msg(untouched, "a sampled tree's distributions came to the host");
            ck_assert_msg(r.next_token >= 0 && r.next_token < V && r.n_accepted <= 2, "result %d, %d", r.n_accepted,
                          r.next_token);
            ck_assert(t.commit(&t, seq, r.path[r.n_accepted], &err) == 0);
        }
        t.seq_close(&t, seq);
    }
    free(p);
    tree_free(&tree);
    t.release(&t);
    engine_close(&e);
    fixture_model_close(&tf);
}
END_TEST

Suite *accept_coupling_suite(void) {
    Suite *s = suite_create("accept_coupling");
    TCase *tc = harness_tcase("device against host acceptance", 300);
    tcase_add_test(tc, test_device_acceptance_couples_with_the_host);
    tcase_add_test(tc, test_trees_are_accepted_on_the_device);
    suite_add_tcase(s, tc);
    return s;
}
