/* backend_cuda.cu — the engine's CUDA backend (backend.h) over the kernels of kernels/: its set-up, backend memory,
 * the stream's waits, status and release. The weights, activations, KV cache (bf16) and DeltaNet state slots all
 * live on the device. */
extern "C" {
#include "dtype.h"
}
#include "cuda_backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kn_engine_ops.h"
#include "kn_launch.h"

void cuda_check(engine_backend *b, cudaError_t e, const char *what) {
    cuda_impl *c = impl(b);
    c->queued = 1;
    if (e == cudaSuccess || c->failure[0]) return;
    const char *launch = kn_launch_failure(); /* the kernel, when a launch failed (at once in debug mode) */
    snprintf(c->failure, sizeof c->failure, "cuda engine: %s failed on %s: %s%s%s%s", what, c->device,
             cudaGetErrorString(e), launch[0] ? " (the first failed launch: " : "", launch, launch[0] ? ")" : "");
}

void cuda_flush(engine_backend *b) {
    cuda_impl *c = impl(b);
    cuda_check(b, graph_end(&c->graphs, c->stream), "a pass's CUDA graph");
}

void cuda_drain(engine_backend *b) {
    cuda_impl *c = impl(b);
    const int queued = c->queued;
    cuda_flush(b);
    cuda_check(b, cudaStreamSynchronize(c->stream), "a wait on the stream");
    b->stalls += queued; /* no result comes back: a stall, not a wait (backend.h) */
    c->queued = 0;
    c->syncs++;
}

void *cuda_alloc(engine_backend *b, size_t bytes, const char *what) {
    cuda_flush(b);
    void *p = NULL;
    cudaError_t e = kn_dev_alloc(&p, bytes);
    if (e != cudaSuccess) { /* as sp_xcalloc on the host: nothing sensible can go on */
        fprintf(stderr, "specula: out of device memory allocating %zu bytes for %s on %s (%s)\n", bytes, what,
                impl(b)->device, cudaGetErrorString(e));
        exit(2);
    }
    return p;
}
void cuda_free(engine_backend *b, void *p) {
    cuda_flush(b);
    cuda_check(b, kn_dev_free(p), "cudaFree");
}
void cuda_upload(engine_backend *b, void *dst, const void *src, size_t bytes) {
    const int queued = impl(b)->queued;
    cuda_flush(b);
    cuda_check(b, kn_dev_upload(dst, src, bytes), "a copy to the device");
    b->stalls += queued; /* the synchronous copy waits for the work queued before it */
    impl(b)->queued = 0;
    impl(b)->syncs++;
}
void cuda_download(engine_backend *b, void *dst, const void *src, size_t bytes) {
    cuda_flush(b);
    cuda_check(b, kn_dev_download(dst, src, bytes), "a copy from the device");
    b->waits++; /* the copy waits for the work queued before it */
    impl(b)->queued = 0;
    impl(b)->syncs++;
}
static void c_copy(engine_backend *b, void *dst, const void *src, size_t bytes) {
    cuda_flush(b);
    cuda_check(b, kn_dev_copy(dst, src, bytes, impl(b)->stream), "a copy on the device");
}
static void c_zero(engine_backend *b, void *p, size_t bytes) {
    cuda_flush(b);
    cuda_check(b, kn_dev_zero(p, bytes, impl(b)->stream), "cudaMemset");
}

/* ---- status and set-up ---------------------------------------------------------------- */

static int c_status(engine_backend *b, sp_error *err) {
    cuda_impl *c = impl(b);
    const int queued = c->queued; /* read first: flush's check marks work queued even when no graph was open */
    cuda_flush(b);
    cuda_check(b, kn_dev_sync(), "a kernel");
    b->waits += queued; /* a sync with nothing queued returns at once */
    c->queued = 0;
    c->syncs++;
    if (!c->failure[0]) return 0;
    sp_fail(err, "%s", c->failure);
    c->failure[0] = 0;
    return -1;
}

static void c_release(engine_backend *b) {
    cuda_impl *c = impl(b);
    cuda_flush(b);
    kn_dev_sync();
    graph_cache_free(&c->graphs);
    void *bufs[] = {c->tokens, c->table, c->q_rot,      c->att_work, c->dq,         c->dk,
                    c->dv,     c->probs, c->probs_work, c->result,   c->accept_work};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) kn_dev_free(bufs[i]);
    cuda_mtp_release(b);
    cuda_pass_release(b);
    if (c->stream) cudaStreamDestroy(c->stream);
    if (c->debug) kn_debug_launches(0); /* the mode is the launches' (process-wide): it ends with its backend */
    free(c->seqs);
    free(c);
    b->impl = NULL;
}

/* The shapes the kernels take (their contracts in kn_*.h), or why not. */
static int shapes_ok(const model_config *c, sp_error *err) {
    const char *why = NULL;
    char buf[160];
    if (c->head_dim % 32 || c->head_dim > 1024)
        snprintf(buf, sizeof buf, "head_dim a multiple of 32 up to 1024 (this model's is %d)", c->head_dim), why = buf;
    else if (c->rotary_dim % 2)
        snprintf(buf, sizeof buf, "an even number of rotary dimensions (this model rotates %d)", c->rotary_dim),
            why = buf;
    else if (c->num_heads % c->num_kv_heads)
        snprintf(buf, sizeof buf, "query heads a multiple of the KV heads (%d, %d)", c->num_heads, c->num_kv_heads),
            why = buf;
    else if (c->conv_kernel > KN_CONV_MAX_K)
        snprintf(buf, sizeof buf, "a convolution of at most %d taps (this model's has %d)", KN_CONV_MAX_K,
                 c->conv_kernel),
            why = buf;
    else if (c->lin_k_dim > 1024 || c->lin_v_dim > 1024)
        snprintf(buf, sizeof buf, "DeltaNet heads of at most 1024 dimensions"), why = buf;
    return why ? sp_fail(err, "cuda engine: the CUDA kernels need %s", why) : 0;
}

/* The newest version of a family: its last entry. */
template <class V> static const V *newest(const V *(*list)(int *)) {
    int n = 0;
    const V *versions = list(&n);
    return &versions[n - 1];
}

int backend_cuda_build(engine_backend *b, const model_config *cfg, sp_error *err) {
    memset(b, 0, sizeof *b);
    if (shapes_ok(cfg, err)) return -1;
    cuda_impl *c = (cuda_impl *)sp_xcalloc(1, sizeof *c, "cuda backend");
    cudaError_t e = kn_dev_open(c->device, sizeof c->device);
    if (e != cudaSuccess) {
        free(c);
        return sp_fail(err, "--backend cuda: no usable CUDA device (%s)", cudaGetErrorString(e));
    }
    /* a stream of its own: the legacy stream cannot be captured; a blocking one, so that the synchronous copies
     * (on the legacy stream) stay ordered with the pass's launches as before */
    if ((e = cudaStreamCreate(&c->stream)) != cudaSuccess) {
        free(c);
        return sp_fail(err, "--backend cuda: cannot create a stream (%s)", cudaGetErrorString(e));
    }
    graph_cache_init(&c->graphs);
    c->rmsnorm = newest(kn_rmsnorm_versions)->fn;
    c->gatednorm = newest(kn_gatednorm_versions)->fn;
    c->swiglu = newest(kn_swiglu_versions)->fn;
    c->rope_kv = newest(kn_rope_kv_versions)->fn;
    c->attention = newest(kn_attention_versions)->fn;
    c->conv = newest(kn_conv_versions)->fn;
    c->delta = newest(kn_delta_versions)->fn;
    b->name = "cuda";
    b->device = c->device;
    b->threads = 1;
    b->kv_bf16 = 1;
    b->max_tree_nodes = KN_TREE_MAX;
    b->multi_seq = 1; /* the attention and DeltaNet kernels run once per sequence of a pass (c_begin_pass) */
    b->cfg = cfg;
    b->impl = c;
    b->alloc = cuda_alloc;
    b->free = cuda_free;
    b->upload = cuda_upload;
    b->download = cuda_download;
    b->copy = c_copy;
    b->zero = c_zero;
    b->status = c_status;
    b->release = c_release;
    cuda_weights_install(b);
    cuda_pass_install(b);
    cuda_accept_install(b);
    cuda_mtp_install(b);
    return 0;
}

/* b is a CUDA backend (a test may have wrapped some of its ops, never its release). */
static int is_cuda(const engine_backend *b) { return b->impl && b->release == c_release; }

int backend_cuda_graphs(engine_backend *b, int mode) {
    if (!is_cuda(b) || (mode != CUDA_GRAPHS_OFF && mode != CUDA_GRAPHS_ON && mode != CUDA_GRAPHS_STALE)) return -1;
    cuda_flush(b);
    cuda_impl *c = impl(b);
    const int old = c->graphs.mode;
    c->graphs.mode = mode;
    return old;
}

int backend_cuda_debug(engine_backend *b) {
    if (!is_cuda(b)) return -1;
    backend_cuda_graphs(b, CUDA_GRAPHS_OFF); /* a capture cannot be waited on */
    kn_debug_launches(1);
    impl(b)->debug = 1;
    return 0;
}

int backend_cuda_graph_segments(engine_backend *b, int norms) {
    if (!is_cuda(b) || norms < 1) return -1;
    cuda_flush(b);
    cuda_impl *c = impl(b);
    const int old = c->graphs.marks_per_segment;
    c->graphs.marks_per_segment = norms;
    return old;
}

cuda_graph_stats backend_cuda_graph_stats(const engine_backend *b) {
    if (!is_cuda(b)) return cuda_graph_stats{0, 0, 0, 0, 0};
    return ((const cuda_impl *)b->impl)->graphs.stats;
}

/* ---- for the other files of the backend (cuda_backend.h) ----------------------------- */

cudaStream_t cuda_stream(engine_backend *b) { return impl(b)->stream; }
void *cuda_scratch(engine_backend *b, void **p, size_t *cap, size_t bytes, const char *what) {
    return scratch(b, (unsigned char **)p, cap, bytes, what);
}
cuda_mtp **cuda_mtp_of(engine_backend *b) { return &impl(b)->mtp; }

int backend_cuda_on_device(void) {
#ifdef KN_EMU
    return 0; /* the emulator is the slowest backend there is */
#else
    char name[160];
    return kn_dev_open(name, sizeof name) == cudaSuccess;
#endif
}
