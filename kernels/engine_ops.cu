/* engine_ops.cu — device memory and the engine's small ops (see
 * kn_engine_ops.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kn_common.cuh"
#include "kn_engine_ops.h"

/* ---- device memory ------------------------------------------------------------- */

/* The same calls on a GPU and on the emulator (emu_rt.h), whose runtime refuses what a GPU refuses during a
 * stream capture: a copy or an allocation there fails as it would on the device. */
cudaError_t kn_dev_alloc(void **p, size_t bytes) {
    cudaError_t e = cudaMalloc(p, bytes ? bytes : 1);
    if (e == cudaSuccess) e = cudaMemset(*p, 0, bytes ? bytes : 1);
    return e;
}
cudaError_t kn_dev_free(void *p) { return cudaFree(p); }
cudaError_t kn_dev_upload(void *dst, const void *src, size_t bytes) {
    return cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
}
cudaError_t kn_dev_download(void *dst, const void *src, size_t bytes) {
    return cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
}
cudaError_t kn_dev_copy(void *dst, const void *src, size_t bytes, cudaStream_t s) {
    return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s);
}
cudaError_t kn_dev_zero(void *p, size_t bytes, cudaStream_t s) { return cudaMemsetAsync(p, 0, bytes, s); }
cudaError_t kn_dev_sync(void) {
    cudaError_t e = cudaDeviceSynchronize();
    return e != cudaSuccess ? e : cudaGetLastError();
}
#ifdef KN_EMU
cudaError_t kn_dev_open(char *name, size_t name_size) {
    snprintf(name, name_size, "the CPU emulator of kernels/emu/emu.h");
    return cudaSuccess;
}
#else
cudaError_t kn_dev_open(char *name, size_t name_size) {
    /* Before the first CUDA call: every module loads with the context, none on its first launch, which may fall
     * inside a stream capture (a kernel chosen by context length, first needed deep into a run). A user's own
     * setting stands. */
    setenv("CUDA_MODULE_LOADING", "EAGER", 0);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) return e;
    if (n < 1) return cudaErrorNoDevice;
    cudaDeviceProp prop;
    if ((e = cudaSetDevice(0)) != cudaSuccess || (e = cudaGetDeviceProperties(&prop, 0)) != cudaSuccess) return e;
    snprintf(name, name_size, "%s", prop.name);
    return cudaSuccess;
}
#endif

/* ---- ops ------------------------------------------------------------------------- */

/* Block per row, threads over its columns. */
__global__ void embed_bf16(float *x, const uint16_t *E, const int *tokens, int D) {
    const size_t from = (size_t)tokens[blockIdx.x] * D, to = (size_t)blockIdx.x * D;
    for (int j = threadIdx.x; j < D; j += blockDim.x) x[to + j] = kn_bf16(E[from + j]);
}

cudaError_t kn_embed_bf16(float *x, const uint16_t *E, const int *tokens, int m, int D, cudaStream_t s) {
    if (m < 1 || D < 1) return cudaErrorInvalidValue;
    return KN_LAUNCH(embed_bf16, m, 256, 0, s, x, E, tokens, D);
}

__global__ void add_f32(float *x, const float *y, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) x[i] += y[i];
}

static unsigned grid_for(long n, int per_block) {
    long b = (n + per_block - 1) / per_block;
    return (unsigned)(b < 1 ? 1 : b > 8192 ? 8192 : b);
}

cudaError_t kn_add(float *x, const float *y, long n, cudaStream_t s) {
    if (n < 1) return cudaErrorInvalidValue;
    return KN_LAUNCH(add_f32, grid_for(n, 256), 256, 0, s, x, y, n);
}

/* Block per row. */
__global__ void copy_rows(float *dst, long dst_pitch, const float *src, long src_pitch, int width) {
    const float *from = src + (size_t)blockIdx.x * src_pitch;
    float *to = dst + (size_t)blockIdx.x * dst_pitch;
    for (int j = threadIdx.x; j < width; j += blockDim.x) to[j] = from[j];
}

cudaError_t kn_copy_rows(float *dst, long dst_pitch, const float *src, long src_pitch, int width, int rows,
                         cudaStream_t s) {
    if (rows < 1 || width < 1 || dst_pitch < width || src_pitch < width) return cudaErrorInvalidValue;
    return KN_LAUNCH(copy_rows, rows, 256, 0, s, dst, dst_pitch, src, src_pitch, width);
}

/* 24 bits of (key, i) → [0, 1), in 32-bit integer arithmetic only: a 27B's synthetic weights are 2.7e10 values,
 * and 64-bit multiplies, several 32-bit ones each on a GPU, would make the fill cost seconds instead of
 * milliseconds. A multiply-xorshift mix of a Weyl sequence (i · the golden ratio), keyed per tensor; the high word of
 * i is folded into the key, so no two elements of a tensor below 2⁶⁴ share an input. Fine for random weights, not
 * for statistics. */
__device__ __forceinline__ float unit_hash(uint32_t key, size_t i) {
    uint32_t x = (uint32_t)i * 0x9e3779b9u + (key ^ ((uint32_t)(i >> 32) * 0x85ebca6bu));
    x = (x ^ (x >> 16)) * 0x7feb352du;
    x = (x ^ (x >> 15)) * 0x846ca68bu;
    x ^= x >> 16;
    return (float)(x >> 8) * (1.0f / 16777216.0f);
}

/* The per-tensor key from the caller's 64-bit seed, folded once on the host. */
static uint32_t fill_key(uint64_t seed) {
    seed = (seed ^ (seed >> 33)) * 0xff51afd7ed558ccdull;
    seed ^= seed >> 33;
    return (uint32_t)seed ^ (uint32_t)(seed >> 32);
}

__global__ void fill_f32(float *d, size_t n, float lo, float hi, uint32_t key) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        d[i] = lo + (hi - lo) * unit_hash(key, i);
}

__global__ void fill_bf16(uint16_t *d, size_t n, float lo, float hi, uint32_t key) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        d[i] = kn_to_bf16(lo + (hi - lo) * unit_hash(key, i));
}

cudaError_t kn_fill_f32(float *d, size_t n, float lo, float hi, uint64_t seed, cudaStream_t s) {
    if (n < 1) return cudaErrorInvalidValue;
    return KN_LAUNCH(fill_f32, grid_for((long)(n < (1u << 30) ? n : (1u << 30)), 256), 256, 0, s, d, n, lo, hi,
                     fill_key(seed));
}

cudaError_t kn_fill_bf16(uint16_t *d, size_t n, float lo, float hi, uint64_t seed, cudaStream_t s) {
    if (n < 1) return cudaErrorInvalidValue;
    return KN_LAUNCH(fill_bf16, grid_for((long)(n < (1u << 30) ? n : (1u << 30)), 256), 256, 0, s, d, n, lo, hi,
                     fill_key(seed));
}
