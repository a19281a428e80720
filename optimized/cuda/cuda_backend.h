/* cuda_backend.h — what the files of the CUDA backend share beyond backend.h: its state and its memory helpers.
 * Every file compiles with nvcc for a GPU and with the C++ compiler against the kernels' CPU emulator (-DKN_EMU).
 * Internal to optimized/cuda. */
#ifndef SPECULA_CUDA_BACKEND_H
#define SPECULA_CUDA_BACKEND_H

extern "C" {
#include "backend.h"
#include "kv_cache.h"
}

#include "graph_cache.h"
#include "kn_api.h"
#include "kn_attention.h"
#include "kn_deltanet.h"
#include "kn_norm.h"

typedef struct cuda_mtp cuda_mtp;

/* One sequence of a pass as its own launches of the per-sequence kernels take it (c_begin_pass): the attention
 * kernels read one block table, one context and one tree mask a call, the DeltaNet kernels one committed state. */
typedef struct {
    int first, n, base; /* its nodes [first, first + n) of the pass, after its base committed positions */
    int n_blocks;       /* its block table's length */
    size_t tables;      /* its [La, n_blocks] block tables in the pass arrays: an offset in ints */
} cuda_seq;

/* The pinned buffers a pass's first nodes copy to the device: its arrays (c_begin_pass) and its token ids (c_embed).
 * A ring of them, one set per pass. A pass rewrites the set of the pass PASS_STAGES before it, whose copies have
 * run if the stream has been waited on since; a round waits once, so its passes follow each other without the host
 * draining the stream. */
#define PASS_STAGES 8
typedef struct {
    int *table, *tokens;
    size_t table_cap, tokens_cap;
    int used;
    unsigned long staged_at; /* cuda_impl.syncs when its last copy was queued */
} pass_stage;

typedef struct {
    cudaStream_t stream;
    char device[160];
    char failure[512]; /* the first failed launch since the last status call ("" none) */
    /* device scratch, grown as passes grow; mask .. state_slot point into `table`, the pass's arrays (c_begin_pass) */
    int *tokens, *table, *pos, *slot, *parent, *state_slot, *result;
    uint64_t *mask;
    size_t tokens_cap, table_cap, result_cap;
    cuda_seq *seqs; /* [n_seqs] the pass's sequences (host memory, seqs_cap of room) */
    int n_seqs, seqs_cap;
    const int *host_parent; /* [m] the pass's parents, sequence-relative, in its stage's table */
    float *q_rot, *att_work, *dq, *dk, *dv, *probs, *accept_work;
    double *probs_work;
    size_t q_rot_cap, att_work_cap, dq_cap, dk_cap, dv_cap, probs_cap, probs_work_cap, accept_work_cap;
    pass_stage stages[PASS_STAGES];
    int stage;           /* the pass's, in stages */
    int tokens_staged;   /* the pass's stage already holds token ids queued for a copy */
    unsigned long syncs; /* waits on the whole stream so far (drain, the synchronous copies, status) */
    graph_cache graphs;
    /* the version of each kernel family the engine runs */
    kn_rmsnorm_fn rmsnorm;
    kn_gatednorm_fn gatednorm;
    kn_swiglu_fn swiglu;
    kn_rope_kv_fn rope_kv;
    kn_attention_fn attention;
    kn_conv_fn conv;
    kn_delta_fn delta;
    int queued;    /* work launched since the last wait */
    int debug;     /* backend_cuda_debug turned the launches' debug mode on */
    cuda_mtp *mtp; /* the MTP chain's scratch (mtp_device.cu) */
} cuda_impl;

static inline cuda_impl *impl(engine_backend *b) { return (cuda_impl *)b->impl; }

/* backend_cuda.cu: backend memory and the stream's waits */
/* Records the first failure (the pass goes on; its results are discarded when status reports it). */
void cuda_check(engine_backend *b, cudaError_t e, const char *what);
/* Ends a pass's open capture and launches its graph (graph_cache.h): first thing in an op that is not a pass's. */
void cuda_flush(engine_backend *b);
/* Waits until the stream has run what was issued: a pinned buffer the issued work reads may then be rewritten. */
void cuda_drain(engine_backend *b);
void *cuda_alloc(engine_backend *b, size_t bytes, const char *what); /* backend.h's alloc */
void cuda_free(engine_backend *b, void *p);
void cuda_upload(engine_backend *b, void *dst, const void *src, size_t bytes);
void cuda_download(engine_backend *b, void *dst, const void *src, size_t bytes);
cudaStream_t cuda_stream(engine_backend *b);
/* Device scratch of at least `bytes`, grown (never shrunk) in *p of capacity *cap bytes. */
void *cuda_scratch(engine_backend *b, void **p, size_t *cap, size_t bytes, const char *what);
/* The mtp_device.cu state of b. */
cuda_mtp **cuda_mtp_of(engine_backend *b);

/* *p holds at least `count` elements of device scratch. A pass's scratch is reserved before its capture opens
 * (cuda_pass.cu: reserve_pass); growing it during one ends the capture there (cuda_free, cuda_alloc), the rest of
 * the pass launched op by op: a recorded graph never holds a buffer that was freed. */
template <class T> static inline T *scratch(engine_backend *b, T **p, size_t *cap, size_t count, const char *what) {
    if (count > *cap) {
        if (*p) cuda_free(b, *p);
        const size_t grown = count > 2 * *cap ? count : 2 * *cap;
        *p = (T *)cuda_alloc(b, grown * sizeof(T), what);
        *cap = grown;
    }
    return *p;
}

/* Each file's ops into b. */
void cuda_weights_install(engine_backend *b); /* cuda_weights.cu: place_weights, free_weights, synthesize_weights */
void cuda_pass_install(engine_backend *b);    /* cuda_pass.cu: begin_pass and the ops of a pass */
void cuda_accept_install(engine_backend *b);  /* cuda_accept.cu: probs, accept */
void cuda_mtp_install(engine_backend *b);     /* mtp_device.cu: embed_drawn, draft, accept_drawn */
void cuda_pass_release(engine_backend *b);    /* the pinned pass buffers */
void cuda_mtp_release(engine_backend *b);

#endif
