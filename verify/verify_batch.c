/* verify_batch.c — the batched rows (verify_batch.h). */
#include "verify_batch.h"

#include <stdlib.h>
#include <string.h>

#include "decode_batch.h"
#include "engine_mtp.h"
#include "planted_batch.h"
#include "reference_target.h"
#include "registry.h"
#include "target_stepper.h"

/* Four prompts over the small world's three tokens: long and short, so the jobs' rows start at uneven offsets. */
static const int prompt0[] = {0, 2, 1, 0, 2}, prompt1[] = {1, 2}, prompt2[] = {2, 0, 1}, prompt3[] = {1, 1, 0};
static const int *const prompts[VERIFY_BATCH_JOBS] = {prompt0, prompt1, prompt2, prompt3};
static const int prompt_lengths[VERIFY_BATCH_JOBS] = {5, 2, 3, 3};

void verify_batch_prompt(int j, const int **ids, int *n) {
    *ids = prompts[j];
    *n = prompt_lengths[j];
}

/* The seed is a hash (verify_run_seed), so its high bits pick the job uniformly and apart from the jobs' own
 * seeds below. */
int verify_batch_reported(uint64_t seed) { return (int)((seed >> 40) % VERIFY_BATCH_JOBS); }

/* Job j's seed: distinct for every job of a draw, and from every other draw's. */
static uint64_t job_seed(uint64_t seed, int j) { return seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(j + 1)); }

void verify_batch_cells(const verify_case *c, const verify_world *w, int *V, int *L) {
    const int v = w->target->cfg.vocab_size;
    *V = v > VERIFY_BATCH_JOBS ? v : VERIFY_BATCH_JOBS;
    *L = c->L + 1;
}

int verify_batch_exact(const verify_case *c, const verify_world *w, enum_table *t, sp_error *err) {
    memset(t, 0, sizeof *t);
    int Vb, Lb;
    verify_batch_cells(c, w, &Vb, &Lb);
    const int64_t cells = enumerate_cells(Vb, Lb);
    if (cells < 0) return sp_fail(err, "case \"%s\": %d tagged tokens over %d symbols are too many cells", c->name, Lb, Vb);
    double *joint = sp_xcalloc((size_t)cells, sizeof *joint, "the batch's law");
    int tagged[ENUM_MAX_LENGTH + 1];
    for (int j = 0; j < VERIFY_BATCH_JOBS; j++) {
        const int *ids;
        int n;
        verify_batch_prompt(j, &ids, &n);
        enum_table one;
        if (verify_world_enumerate(w, 0, ids, n, &c->spec.sampling, c->L, &one, err)) {
            free(joint);
            return -1;
        }
        tagged[0] = j;
        for (int64_t i = 0; i < one.cells; i++) {
            enumerate_tokens(i, c->L, one.V, tagged + 1);
            joint[enumerate_index(tagged, Lb, Vb)] = one.joint[i] / VERIFY_BATCH_JOBS;
        }
        enumerate_free(&one);
    }
    t->V = Vb, t->L = Lb, t->cells = cells, t->joint = joint;
    return 0;
}

/* The methods of jobs 1 … B − 1 (job 0 runs the row's): plain sampling, a draft tree drawn without replacement,
 * MTP — each with the row's sampling, so that one verify call takes them all. */
static const char *const other_jobs[VERIFY_BATCH_JOBS - 1] = {
    "--method sample", "--method spec --tree-shape 2,1 --rule exact-norepl", "--method mtp --k 2"};
static const char *const other_labels[VERIFY_BATCH_JOBS - 1] = {"plain sampling", "spec tree 2,1 without replacement",
                                                                 "mtp chain k=2"};

const char *verify_batch_job_label(int j) { return j >= 1 && j < VERIFY_BATCH_JOBS ? other_labels[j - 1] : "?"; }

/* Job j's method: the row's spec, or another method with the row's sampling, budget and seed. */
static int job_spec(const method_spec *row, int j, method_spec *out, sp_error *err) {
    if (j == 0) {
        *out = *row;
        return 0;
    }
    *out = method_spec_defaults();
    if (method_spec_parse(out, other_jobs[j - 1], err)) return -1;
    out->sampling = row->sampling;
    out->max_tokens = row->max_tokens;
    out->stop_at_eos = row->stop_at_eos;
    out->seed = row->seed;
    return 0;
}

/* A job's own draft stepper and method: proposers and steppers hold one sequence's state. */
typedef struct {
    stepper st;
    int have_st;
    method_built m;
} batch_job;

static int job_build(batch_job *b, const verify_world *w, const method_spec *s, decode_target *target, sp_error *err) {
    memset(b, 0, sizeof *b);
    method_parts parts = w->parts;
    parts.target = target;
    if (method_has(s, METHOD_MTP_MODULE)) {
        if (w->engine ? engine_mtp_stepper_build(&b->st, w->engine, err)
                      : reference_mtp_stepper_build(&b->st, w->target, err))
            return -1;
        parts.mtp = &b->st;
        b->have_st = 1;
    } else if (method_has(s, METHOD_DRAFT_MODEL)) {
        if (w->engine) {
            if (target_stepper_build(&b->st, (decode_target *)&w->draft_if, err)) return -1;
        } else {
            reference_draft_stepper_build(&b->st, w->draft);
        }
        parts.draft = &b->st;
        b->have_st = 1;
    } else if (method_has(s, METHOD_PROPOSES)) {
        return sp_fail(err, "a batched row runs plain sampling, a draft model or MTP (got --method %s)",
                       method_name(s));
    }
    if (method_build(&b->m, s, &parts, err)) {
        if (b->have_st) b->st.release(&b->st);
        return -1;
    }
    return 0;
}

static void job_release(batch_job *b) {
    method_release(&b->m);
    if (b->have_st) b->st.release(&b->st);
}

int verify_batch_draw(const verify_case *c, const verify_world *w, const method_spec *s, int control, int *tokens,
                      long *rounds, long *drafted, sp_error *err) {
    decode_target slipped, *target = w->parts.target;
    if (control) {
        planted_batch_target_build(&slipped, target);
        target = &slipped;
    }
    batch_job built[VERIFY_BATCH_JOBS];
    decode_job jobs[VERIFY_BATCH_JOBS];
    decode_output out[VERIFY_BATCH_JOBS];
    int n_built = 0, rc = 0;
    for (; n_built < VERIFY_BATCH_JOBS; n_built++) {
        method_spec sj;
        if ((rc = job_spec(s, n_built, &sj, err))) break;
        sj.seed = job_seed(s->seed, n_built);
        if ((rc = job_build(&built[n_built], w, &sj, target, err))) break;
        jobs[n_built] = (decode_job){built[n_built].m.proposer, NULL, 0, built[n_built].m.options};
        verify_batch_prompt(n_built, &jobs[n_built].prompt, &jobs[n_built].n_prompt);
    }
    if (!rc) rc = decode_batch_run(target, jobs, VERIFY_BATCH_JOBS, NULL, out, err);
    for (int j = 0; j < n_built; j++) job_release(&built[j]);
    if (control) slipped.release(&slipped);
    if (rc) return sp_wrap(err, "case \"%s\": ", c->name);
    const int r = verify_batch_reported(s->seed);
    if (out[r].n < c->L)
        rc = sp_fail(err, "case \"%s\": job %d emitted %d tokens, the check compares %d", c->name, r, out[r].n, c->L);
    else
        tokens[0] = r, memcpy(tokens + 1, out[r].tokens, (size_t)c->L * sizeof(int));
    *rounds += out[r].acc.target_passes;
    *drafted += out[r].acc.proposed[1];
    for (int j = 0; j < VERIFY_BATCH_JOBS; j++) decode_output_free(&out[j]);
    return rc ? -1 : 0;
}
