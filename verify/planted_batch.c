/* planted_batch.c — the batched row's control (planted_batch.h): the third job of a verify call gets the second
 * job's distributions. Everything else is the inner target's. */
#include "planted_batch.h"

#include <stdlib.h>
#include <string.h>

static decode_target *inner(const decode_target *t) { return t->impl; }

static int b_seq_open(decode_target *t, sp_error *err) { return inner(t)->seq_open(inner(t), err); }
static int b_seq_fork(decode_target *t, int src, sp_error *err) { return inner(t)->seq_fork(inner(t), src, err); }
static void b_seq_close(decode_target *t, int seq) { inner(t)->seq_close(inner(t), seq); }
static int b_prefill(decode_target *t, int seq, const int *tokens, int n, float *logits, float *hidden, sp_error *err) {
    return inner(t)->prefill(inner(t), seq, tokens, n, logits, hidden, err);
}
static int b_commit(decode_target *t, int seq, int node, sp_error *err) {
    return inner(t)->commit(inner(t), seq, node, err);
}
static int b_position(const decode_target *t, int seq) { return inner(t)->position(inner(t), seq); }
static void b_memory(const decode_target *t, const int *seqs, int n, target_memory *out) {
    inner(t)->memory(inner(t), seqs, n, out);
}

static int b_verify(decode_target *t, const target_job *jobs, int n_jobs, const sampler_params *sp, sp_error *err) {
    if (inner(t)->verify(inner(t), jobs, n_jobs, sp, err)) return -1;
    if (n_jobs >= 3) { /* PLANTED: the third sequence's rows read one sequence early */
        const int rows = jobs[1].tree->n < jobs[2].tree->n ? jobs[1].tree->n : jobs[2].tree->n;
        memcpy(jobs[2].p, jobs[1].p, (size_t)rows * t->cfg->vocab_size * sizeof(float));
    }
    return 0;
}

static void b_release(decode_target *t) { t->impl = NULL; }

void planted_batch_target_build(decode_target *outer, decode_target *in) {
    *outer = *in;
    outer->seq_open = b_seq_open;
    outer->seq_fork = b_seq_fork;
    outer->seq_close = b_seq_close;
    outer->prefill = b_prefill;
    outer->verify = b_verify;
    outer->verify_accept = NULL; /* every round through verify, none handed whole to the inner target */
    outer->mtp_verify_accept = NULL;
    outer->commit = b_commit;
    outer->position = b_position;
    outer->memory = b_memory;
    outer->release = b_release;
    outer->impl = in;
}
