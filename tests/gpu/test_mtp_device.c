/* test_mtp_device.c — the MTP round drafted on the CUDA device (target.h: mtp_verify_accept;
 * optimized/engine_mtp_round.c), on the kernels' CPU emulator, held to the host-drafted path on the same engine:
 * the proposer drawing each draft from the downloaded MTP logits (mtp.c), then verify_accept. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "engine_mtp.h"
#include "engine_target.h"
#include "fixtures.h"
#include "decode_batch.h"
#include "harness.h"
#include "method.h"

#define MAX_TOKENS 10
#define MAX_DRAFTS (3 * MAX_TOKENS) /* at most k = 3 drafts a round, a round per token at worst */
#define N_SEEDS 6

/* An engine on the CUDA backend (the emulator), its target and MTP module; the target as the device path
 * (mtp_verify_accept), as the host-drafted path (no mtp_verify_accept: the proposer drafts, verify_accept
 * accepts) and as the control (the device path with a slip), each recording the drafts it verifies. */
typedef struct {
    fixture_model tf;
    engine e;
    decode_target t, device, host, control;
    stepper mtp;
    int slip;               /* the control's: 1 drafts at the next round's sites, 2 accepts at the next round's */
    int drafts[MAX_DRAFTS]; /* the run's drafts, round after round */
    int n_drafts;
} mtp_rig;

static mtp_rig *rig; /* the wrappers' (their impl is the engine, which they pass on to its own ops) */

static void record(const int *drafts, int k) {
    for (int i = 0; i < k; i++) {
        ck_assert_msg(rig->n_drafts < MAX_DRAFTS, "more than %d drafts in a run", MAX_DRAFTS);
        rig->drafts[rig->n_drafts++] = drafts[i];
    }
}

/* The device path, its drafts as they came back; the control's slip applied to its call or site. */
static int device_round(decode_target *t, const target_job *job, const mtp_chain_call *call, const sampler_params *sp,
                        accept_site site, accept_result *r, sp_error *err) {
    mtp_chain_call c = *call;
    if (t == &rig->control && rig->slip == 1) c.round++;    /* acceptance stays at its own sites */
    if (t == &rig->control && rig->slip == 2) site.round++; /* the drafts stay at theirs */
    const int rc = rig->t.mtp_verify_accept(t, job, &c, sp, site, r, err);
    if (rc == 0) record(c.drafts, c.k);
    return rc;
}

/* The host-drafted path: the proposer's drafts, in the tree verify_accept takes. */
static int host_verify_accept(decode_target *t, const target_job *job, const sampler_params *sp, accept_site site,
                              accept_result *r, sp_error *err) {
    record(job->tree->token + 1, job->tree->n - 1);
    return rig->t.verify_accept(t, job, sp, site, r, err);
}

static void rig_open(mtp_rig *g) {
    fixture_model_open(&g->tf, "micro-tied", 93, NULL);
    engine_options o = engine_defaults();
    o.cuda = 1;
    sp_error err;
    ck_assert_msg(engine_open(&g->e, g->tf.dir, &o, &err) == 0, "%s", err.msg);
    engine_target_build(&g->t, &g->e);
    ck_assert_msg(engine_mtp_stepper_build(&g->mtp, &g->e, &err) == 0, "%s", err.msg);
    ck_assert_msg(g->t.mtp_verify_accept, "the CUDA engine drafts an MTP chain where its logits are");
    g->device = g->control = g->host = g->t;
    g->device.mtp_verify_accept = g->control.mtp_verify_accept = device_round;
    g->host.mtp_verify_accept = NULL;
    g->host.verify_accept = host_verify_accept;
    rig = g;
}

static void rig_close(mtp_rig *g) {
    g->mtp.release(&g->mtp);
    g->t.release(&g->t);
    engine_close(&g->e);
    fixture_model_close(&g->tf);
}

/* The tokens of one run (MAX_TOKENS, no stop at EOS), and the waits on the device of each round but the first
 * (whose count holds the prompt's) in waits[] when not NULL: *n_rounds of them. */
typedef struct {
    engine *e;
    long last, last_stalls;
    long *waits;
    int n;
    long stalls; /* the backend's stalls (backend.h) in the rounds counted */
} wait_log;

static void on_commit(const int *tokens, int n, void *user) {
    (void)tokens, (void)n;
    wait_log *w = user;
    if (w->last >= 0 && w->n < MAX_TOKENS) {
        w->waits[w->n++] = w->e->be.waits - w->last;
        w->stalls += w->e->be.stalls - w->last_stalls;
    }
    w->last = w->e->be.waits;
    w->last_stalls = w->e->be.stalls;
}

/* One run's output: its tokens and every draft of it. */
typedef struct {
    int tokens[MAX_TOKENS];
    int drafts[MAX_DRAFTS], n_drafts;
} run_output;

static int same_run(const run_output *a, const run_output *b) {
    return !memcmp(a->tokens, b->tokens, sizeof a->tokens) && a->n_drafts == b->n_drafts &&
           !memcmp(a->drafts, b->drafts, sizeof(int) * (size_t)a->n_drafts);
}

static void run(mtp_rig *g, decode_target *t, const char *flags, uint64_t seed, run_output *o, long *waits,
                int *n_rounds, long *stalls) {
    method_spec s = fixture_spec(flags);
    s.max_tokens = MAX_TOKENS;
    s.stop_at_eos = 0;
    s.seed = seed;
    const method_parts parts = {t, NULL, &g->mtp, NULL};
    method_built b;
    sp_error err;
    ck_assert_msg(method_build(&b, &s, &parts, &err) == 0, "%s: %s", flags, err.msg);
    long w[MAX_TOKENS];
    wait_log log = {&g->e, -1, 0, waits ? waits : w, 0, 0};
    b.options.on_commit = on_commit;
    b.options.user = &log;
    const int prompt[3] = {1, 5, 2};
    g->n_drafts = 0;
    decode_output out;
    ck_assert_msg(decode_batch_one(t, b.proposer, prompt, 3, &b.options, &out, &err) == 0, "%s, seed %llu: %s", flags,
                  (unsigned long long)seed, err.msg);
    ck_assert_int_eq(out.n, MAX_TOKENS);
    memcpy(o->tokens, out.tokens, sizeof o->tokens);
    memcpy(o->drafts, g->drafts, sizeof(int) * (size_t)g->n_drafts);
    o->n_drafts = g->n_drafts;
    if (n_rounds) *n_rounds = log.n;
    if (stalls) *stalls = log.stalls;
    if (waits)
        printf("mtp rounds, %s: %d counted, %.2f stalls a round\n", t == &g->host ? "host-drafted" : "device-drafted",
               log.n, log.n ? (double)log.stalls / log.n : 0.0);
    decode_output_free(&out);
    method_release(&b);
}

typedef struct {
    const char *flags;
    int slip; /* the control's slip for this kind of draft */
} drafting;

static const drafting draftings[] = {
    {"--method mtp --k 3 --mtp-sample --temperature 1", 1},
    {"--method mtp --tree-shape 1,1 --mtp-sample --temperature 0.8 --top-k 5", 1}, /* a chain as a tree's shape */
    {"--method mtp --k 3 --temperature 1", 2},                                     /* argmax drafts, sampled target */
};
#define N_DRAFTINGS (int)(sizeof draftings / sizeof draftings[0])

/* Both paths compute every distribution with the same kernels on the same inputs (the MTP module's hidden inputs
 * are the same floats, copied on the device instead of through the host; kn_probs is sampler_probs' twin, and the
 * race of kn_sample sampler_sample's), and draw at the same Philox sites. So for a fixed seed they give the same
 * tokens and the same drafts, bit for bit, not merely the same law, and the test asks for exactly that. Every
 * draft of every round is compared: on micro-tied the first draft is nearly always rejected, so the tokens alone
 * would hardly see the later drafts, which the chain steps on the device compute.
 *
 * Negative controls, which must break (nearly) every run: the device drawing its drafts at the next round's sites
 * (sampled drafts), and, for argmax drafts, which draw nothing, its acceptance at the next round's sites. Sampling
 * where the argmax belongs is no control on micro-tied: its MTP module's distributions are so peaked that the
 * sampled draft is the argmax, and the coupling hides the slip. The controls are the real op with one field of its
 * call changed by a wrapper target, so the code they exercise is the code under test. */
START_TEST(test_device_drafts_are_the_host_drafts) {
    static mtp_rig g;
    rig_open(&g);
    for (int m = 0; m < N_DRAFTINGS; m++) {
        int differ = 0, control_differ = 0;
        g.slip = draftings[m].slip;
        for (int i = 0; i < N_SEEDS; i++) {
            const uint64_t seed = 3000 + 29 * (uint64_t)i;
            run_output dev, host, control;
            run(&g, &g.device, draftings[m].flags, seed, &dev, NULL, NULL, NULL);
            run(&g, &g.host, draftings[m].flags, seed, &host, NULL, NULL, NULL);
            run(&g, &g.control, draftings[m].flags, seed, &control, NULL, NULL, NULL);
            ck_assert_msg(host.n_drafts >= MAX_TOKENS / 2, "%s: %d drafts in a run", draftings[m].flags, host.n_drafts);
            differ += !same_run(&dev, &host);
            control_differ += !same_run(&control, &host);
        }
        printf("mtp device drafting, %s: %d of %d runs (tokens and drafts) differ from the host-drafted path; "
               "control (%s) %d\n",
               draftings[m].flags, differ, N_SEEDS,
               g.slip == 1 ? "drafts at the next round's sites" : "acceptance at the next round's sites",
               control_differ);
        fflush(stdout);
        ck_assert_msg(differ == 0, "%s: %d of %d runs drafted on the device differ from the host-drafted path",
                      draftings[m].flags, differ, N_SEEDS);
        ck_assert_msg(control_differ >= N_SEEDS - 1, "%s: control: only %d of %d runs differ", draftings[m].flags,
                      control_differ, N_SEEDS);
    }
    rig_close(&g);
}
END_TEST

/* The backend counts every download and every sync with work queued (backend.h, waits): a device-drafted round
 * makes exactly one, the host-drafted one (k + 1 or more) several, which is the control that the counter sees. */
START_TEST(test_one_wait_per_mtp_round) {
    static mtp_rig g;
    rig_open(&g);
    for (int m = 0; m < N_DRAFTINGS; m++) {
        run_output o;
        int n_dev, n_host;
        long dev[MAX_TOKENS], host[MAX_TOKENS];
        long dev_stalls, host_stalls;
        run(&g, &g.device, draftings[m].flags, 77, &o, dev, &n_dev, &dev_stalls);
        run(&g, &g.host, draftings[m].flags, 77, &o, host, &n_host, &host_stalls);
        /* Between a round's passes the host does not drain the stream (each pass copies from pinned buffers of its
         * own: PASS_STAGES in backend_cuda.cu); what is left is the root token's upload, a synchronous copy of one
         * int behind the deferred real steps: at most one stall a round, where drafting on the host stalls more. */
        ck_assert_msg(dev_stalls <= n_dev, "%s: %ld stalls in %d device-drafted rounds", draftings[m].flags, dev_stalls,
                      n_dev);
        ck_assert_msg(host_stalls > dev_stalls,
                      "%s: control: host-drafted rounds stalled %ld times, device-drafted %ld", draftings[m].flags,
                      host_stalls, dev_stalls);
        ck_assert_msg(n_dev >= 2 && n_host >= 2, "%s: %d and %d rounds after the first", draftings[m].flags, n_dev,
                      n_host);
        for (int r = 0; r < n_dev; r++)
            ck_assert_msg(dev[r] == 1, "%s: a device-drafted round waited %ld times on the device", draftings[m].flags,
                          dev[r]);
        for (int r = 0; r < n_host; r++) /* the control: the counter sees the host-drafted round's waits */
            ck_assert_msg(host[r] > 1, "%s: a host-drafted round waited %ld times", draftings[m].flags, host[r]);
    }
    rig_close(&g);
}
END_TEST

/* Two sequences of a batch whose rounds are both handed to the target (each with its own proposer and MTP
 * stepper on the same engine): each gives what it gives alone, the other's rounds in between changing nothing
 * of what its module and its kept hidden states hold. */
START_TEST(test_a_batch_of_handed_rounds) {
    static mtp_rig g;
    rig_open(&g);
    stepper second;
    sp_error err;
    ck_assert_msg(engine_mtp_stepper_build(&second, &g.e, &err) == 0, "%s", err.msg);
    stepper *steppers[2] = {&g.mtp, &second};
    const int prompts[2][3] = {{1, 5, 2}, {7, 3}};
    const int n_prompt[2] = {3, 2};
    method_built b[2];
    decode_job jobs[2];
    int alone[2][MAX_TOKENS];
    for (int j = 0; j < 2; j++) {
        method_spec s = fixture_spec("--method mtp --k 3 --mtp-sample --temperature 1");
        s.max_tokens = MAX_TOKENS;
        s.stop_at_eos = 0;
        s.seed = 40 + (uint64_t)j;
        const method_parts parts = {&g.t, NULL, steppers[j], NULL}; /* the engine's own target, unrecorded */
        ck_assert_msg(method_build(&b[j], &s, &parts, &err) == 0, "%s", err.msg);
        decode_output out;
        ck_assert_msg(decode_run(&g.t, b[j].proposer, prompts[j], n_prompt[j], &b[j].options, &out, &err) == 0, "%s",
                      err.msg);
        ck_assert_int_eq(out.n, MAX_TOKENS);
        memcpy(alone[j], out.tokens, sizeof alone[j]);
        decode_output_free(&out);
        method_release(&b[j]); /* a proposer serves one run: a fresh one for the batch */
        ck_assert_msg(method_build(&b[j], &s, &parts, &err) == 0, "%s", err.msg);
        jobs[j] = (decode_job){b[j].proposer, prompts[j], n_prompt[j], b[j].options};
    }
    decode_batch_options bo = {0, 0, 0};
    decode_output out[2];
    ck_assert_msg(decode_batch_run(&g.t, jobs, 2, &bo, out, &err) == 0, "%s", err.msg);
    for (int j = 0; j < 2; j++) {
        ck_assert_msg(out[j].n == MAX_TOKENS && !memcmp(out[j].tokens, alone[j], sizeof alone[j]),
                      "sequence %d of the batch differs from its run alone", j);
        decode_output_free(&out[j]);
        method_release(&b[j]);
    }
    ck_assert_msg(bo.passes >= bo.rounds, "%ld passes in %ld rounds: a handed round is a pass", bo.passes, bo.rounds);
    second.release(&second);
    rig_close(&g);
}
END_TEST

Suite *mtp_device_suite(void) {
    Suite *s = suite_create("mtp_device");
    TCase *tc = harness_tcase("MTP chains drafted on the device", 600);
    tcase_add_test(tc, test_device_drafts_are_the_host_drafts);
    tcase_add_test(tc, test_one_wait_per_mtp_round);
    tcase_add_test(tc, test_a_batch_of_handed_rounds);
    suite_add_tcase(s, tc);
    return s;
}
