/* mtp_device.cu — the CUDA backend's ops for an MTP chain drafted on the device (backend.h: embed_drawn, draft,
 * accept_drawn). Each draft's distribution and draw stay on the device, where the next MTP step embeds the token
 * and acceptance reads the q rows; the round's result and drafts come back in one download. */
#include <stdlib.h>

#include "cuda_backend.h"
#include "kn_common.cuh"
#include "kn_engine_ops.h"
#include "kn_sample.h"

struct cuda_mtp {
    void *probs, *work; /* the target's processed distributions [n, V] and kn_probs' scratch (doubles) */
    size_t probs_cap, work_cap;
};

static cuda_mtp *state(engine_backend *b) { return *cuda_mtp_of(b); }

/* What the next step embeds: the draw, or token 0 for a draw from an all-zero q (−1, which the host reports
 * after the round's download: no step reads past the embedding for it). */
__global__ void embeddable_kernel(int *token, const int *drawn) { *token = *drawn < 0 ? 0 : *drawn; }

/* One of a pass's ops (the verify pass's embedding, after begin_pass: in its graph) or of the MTP step's, before
 * its pass: the tokens are already on the device, so nothing is staged. */
static void c_embed_drawn(engine_backend *b, float *x, const eweight *E, const int *tokens, int m, int D) {
    cuda_check(b, kn_embed_bf16(x, (const uint16_t *)E->data, tokens, m, D, cuda_stream(b)), "embed");
}

/* kn_probs' scratch for m rows. */
static double *probs_work(engine_backend *b, int m, int V) {
    cuda_mtp *s = state(b);
    return (double *)cuda_scratch(b, &s->work, &s->work_cap, kn_probs_work_doubles(m, V) * sizeof(double),
                                  "probs scratch");
}

/* q by kn_probs; the draw by kn_sample, sampler_sample's race at the proposer's Philox site (RNG_DRAFT, index). */
static void c_draft(engine_backend *b, int *token, int *drawn, float *q, const float *logits, int V,
                    const sampler_params *sp, uint64_t seed, uint64_t index) {
    cuda_flush(b); /* not one of a pass's ops: after the pass's graph */
    const cudaStream_t st = cuda_stream(b);
    double *work = probs_work(b, 1, V);
    cuda_check(b, kn_probs(q, logits, 1, V, *sp, work, state(b)->work_cap / sizeof(double), st), "probs");
    cuda_check(b, kn_sample(drawn, q, 1, V, seed, RNG_DRAFT, index, st), "sample");
    cuda_check(b, KN_LAUNCH(embeddable_kernel, 1, 1, 0, st, token, drawn), "draw");
}

static void c_accept_drawn(engine_backend *b, int *out, int *record, int n_record, const float *logits, const float *q,
                           const int *token, int n, int V, const sampler_params *sp, uint64_t seed, uint64_t round,
                           int base_position) {
    cuda_flush(b);
    cuda_mtp *s = state(b);
    const cudaStream_t st = cuda_stream(b);
    float *p =
        (float *)cuda_scratch(b, &s->probs, &s->probs_cap, (size_t)n * V * sizeof(float), "processed distributions");
    double *work = probs_work(b, n, V);
    cuda_check(b, kn_probs(p, logits, n, V, *sp, work, s->work_cap / sizeof(double), st), "probs");
    cuda_check(b, kn_accept_chain(record, p, q, token + 1, n - 1, V, seed, round, base_position, st), "accept_chain");
    b->download(b, out, record, (size_t)n_record * sizeof(int));
}

void cuda_mtp_install(engine_backend *b) {
    *cuda_mtp_of(b) = (cuda_mtp *)sp_xcalloc(1, sizeof(cuda_mtp), "MTP drafting scratch");
    b->embed_drawn = c_embed_drawn;
    b->draft = c_draft;
    b->accept_drawn = c_accept_drawn;
}

void cuda_mtp_release(engine_backend *b) {
    cuda_mtp *s = state(b);
    if (!s) return;
    if (s->probs) kn_dev_free(s->probs);
    if (s->work) kn_dev_free(s->work);
    free(s);
    *cuda_mtp_of(b) = NULL;
}
