/* kn_engine_ops.h — what the engine's CUDA backend needs around the other kernels: device memory (host memory on
 * the emulator, so the backend's host code is the same for both) and a few small ops. Launchers are asynchronous
 * on `stream`; the memory calls synchronise the device before they return, so host buffers may be reused. */
#ifndef SPECULA_KN_ENGINE_OPS_H
#define SPECULA_KN_ENGINE_OPS_H

#include "kn_api.h"

KN_API cudaError_t kn_dev_alloc(void **p, size_t bytes); /* zeroed */
KN_API cudaError_t kn_dev_free(void *p);
KN_API cudaError_t kn_dev_upload(void *dst, const void *src, size_t bytes);
KN_API cudaError_t kn_dev_download(void *dst, const void *src, size_t bytes);
KN_API cudaError_t kn_dev_copy(void *dst, const void *src, size_t bytes, cudaStream_t stream);
KN_API cudaError_t kn_dev_zero(void *p, size_t bytes, cudaStream_t stream);
/* The first CUDA device, ready: cudaErrorNoDevice-like failure when none. */
KN_API cudaError_t kn_dev_open(char *name, size_t name_size);
KN_API cudaError_t kn_dev_sync(void);

/* x[m, D] = rows tokens[0..m) of the bf16 embedding E[V, D], as float32 (tokens: device memory). */
KN_API cudaError_t kn_embed_bf16(float *x, const uint16_t *E, const int *tokens, int m, int D, cudaStream_t stream);
/* x[n] += y[n] */
KN_API cudaError_t kn_add(float *x, const float *y, long n, cudaStream_t stream);
/* d[n] uniform in [lo, hi) from a counter-based hash of (seed, i), the same on every device. */
KN_API cudaError_t kn_fill_f32(float *d, size_t n, float lo, float hi, uint64_t seed, cudaStream_t stream);
KN_API cudaError_t kn_fill_bf16(uint16_t *d, size_t n, float lo, float hi, uint64_t seed, cudaStream_t stream);
/* dst[r, 0..width) = src[r, 0..width) for r < rows, each with its own row pitch (floats). */
KN_API cudaError_t kn_copy_rows(float *dst, long dst_pitch, const float *src, long src_pitch, int width, int rows,
                                cudaStream_t stream);

#endif
