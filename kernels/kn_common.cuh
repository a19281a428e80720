/* kn_common.cuh — the device vocabulary every kernel file shares: bf16 as raw 16-bit words, warp and block
 * reductions, streaming loads, the bf16 tensor-core product and a launch macro. The same source compiles with nvcc
 * and against the CPU emulator (emu.h, -DKN_EMU). Assumes blockDim.x a multiple of 32. */
#ifndef SPECULA_KN_COMMON_CUH
#define SPECULA_KN_COMMON_CUH

#include <stddef.h>
#include <stdint.h>

#include "kn_launch.h"

/* KN_LAUNCH returns the launch's cudaError_t through kn_launch_result (kn_launch.h), which names the first launch
 * that fails (its launcher, the kernel, grid, block and shared memory) and in debug mode waits for each. */
#ifdef KN_EMU
#include "emu.h"
#define KN_LAUNCH(kernel, grid, block, smem, stream, ...)                                                              \
    kn_launch_result(                                                                                                  \
        __func__, #kernel, dim3(grid), dim3(block), (smem), (stream),                                                  \
        emu_launch(emu_kernel_id(kernel), (grid), (block), (smem), (stream), [=] { kernel(__VA_ARGS__); }))
#define KN_DYN_SMEM(T, name) T *name = (T *)emu_dyn_smem()
#else
#include <cuda_runtime.h>
#define KN_LAUNCH(kernel, grid, block, smem, stream, ...)                                                              \
    (kernel<<<(grid), (block), (smem), (stream)>>>(__VA_ARGS__),                                                       \
     kn_launch_result(__func__, #kernel, dim3(grid), dim3(block), (smem), (stream), cudaGetLastError()))
#define KN_DYN_SMEM(T, name)                                                                                           \
    extern __shared__ __align__(16) unsigned char kn_dyn_smem_[];                                                      \
    T *name = (T *)kn_dyn_smem_
#endif

#define KN_WARP 32

/* bf16 → f32 is exact: the bf16 word is the top half of the float. */
__device__ __forceinline__ float kn_bf16(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
__device__ __forceinline__ float kn_bf16_lo(uint32_t pair) { return __uint_as_float(pair << 16); }
__device__ __forceinline__ float kn_bf16_hi(uint32_t pair) { return __uint_as_float(pair & 0xffff0000u); }

/* f32 → bf16, round to nearest even, quiet NaN: bit for bit f32_to_bf16 of
 * reference/dtype.h. */
__device__ __forceinline__ uint16_t kn_to_bf16(float f) {
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
/* Two floats as one register of two bf16, lo in the low half (memory order). */
__device__ __forceinline__ uint32_t kn_pack_bf16(float lo, float hi) {
    return (uint32_t)kn_to_bf16(lo) | ((uint32_t)kn_to_bf16(hi) << 16);
}

/* Σ of the 8 bf16 of w (memory order) times x[0..7]. */
__device__ __forceinline__ float kn_dot8(uint4 w, float4 x0, float4 x1) {
    float acc = kn_bf16_lo(w.x) * x0.x;
    acc += kn_bf16_hi(w.x) * x0.y;
    acc += kn_bf16_lo(w.y) * x0.z;
    acc += kn_bf16_hi(w.y) * x0.w;
    acc += kn_bf16_lo(w.z) * x1.x;
    acc += kn_bf16_hi(w.z) * x1.y;
    acc += kn_bf16_lo(w.w) * x1.z;
    acc += kn_bf16_hi(w.w) * x1.w;
    return acc;
}

/* A 16-byte load of weights read once: streaming hint, so a pass over a large
 * matrix does not evict the activations and the KV cache from L2. */
__device__ __forceinline__ uint4 kn_ld_stream(const uint4 *p) {
#ifdef KN_EMU
    return *p;
#else
    return __ldcs(p);
#endif
}
/* A read-only load through the non-coherent cache (inputs the kernel never writes). */
template <class T> __device__ __forceinline__ T kn_ldg(const T *p) {
#ifdef KN_EMU
    return *p;
#else
    return __ldg(p);
#endif
}

__device__ __forceinline__ float kn_warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ double kn_warp_sum_d(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float kn_warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Sum over the block; every thread gets the total. scratch: 32 floats of
 * shared memory, reusable after the call returns. */
__device__ __forceinline__ float kn_block_sum(float v, float *scratch) {
    int lane = threadIdx.x % KN_WARP, warp = threadIdx.x / KN_WARP, n_warps = blockDim.x / KN_WARP;
    v = kn_warp_sum(v);
    __syncthreads(); /* scratch may still be read from a previous call */
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float t = lane < n_warps ? scratch[lane] : 0.0f;
    return kn_warp_sum(t);
}
__device__ __forceinline__ double kn_block_sum_d(double v, double *scratch) {
    int lane = threadIdx.x % KN_WARP, warp = threadIdx.x / KN_WARP, n_warps = blockDim.x / KN_WARP;
    v = kn_warp_sum_d(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    double t = lane < n_warps ? scratch[lane] : 0.0;
    return kn_warp_sum_d(t);
}
__device__ __forceinline__ float kn_block_max(float v, float *scratch) {
    int lane = threadIdx.x % KN_WARP, warp = threadIdx.x / KN_WARP, n_warps = blockDim.x / KN_WARP;
    v = kn_warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float t = lane < n_warps ? scratch[lane] : -INFINITY;
    return kn_warp_max(t);
}

/* d += a·b on the tensor cores: mma.m16n8k16, bf16 operands, fp32 accumulate.
 * Fragments (PTX ISA), with g = lane/4 and t = lane%4:
 *   a[0] = A[g][2t..2t+1]   a[1] = A[g+8][2t..2t+1]
 *   a[2] = A[g][2t+8..+9]   a[3] = A[g+8][2t+8..+9]
 *   b[0] = B[2t..2t+1][g]   b[1] = B[2t+8..2t+9][g]
 *   d[0..1] = D[g][2t..2t+1]  d[2..3] = D[g+8][2t..2t+1] */
__device__ __forceinline__ void kn_mma_bf16(float d[4], const uint32_t a[4], const uint32_t b[2]) {
#ifdef KN_EMU
    float c[4] = {d[0], d[1], d[2], d[3]};
    emu_mma_bf16_16816(d, a, b, c);
#else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

/* The current device's attributes the launchers size grids with, read once
 * per device and cached (cudaDeviceGetAttribute is not free on a hot path:
 * a decode step makes hundreds of launches). Benign race: two threads that
 * miss at once both store the same values. */
#define KN_MAX_DEVICES 16
typedef struct {
    int ready;
    int sm_count;   /* multiprocessors */
    int smem_optin; /* dynamic shared memory a block may opt in to, bytes */
} kn_device_info;

static inline const kn_device_info *kn_device(void) {
    static kn_device_info cache[KN_MAX_DEVICES];
    static kn_device_info fallback = {1, 1, 48 * 1024};
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= KN_MAX_DEVICES) return &fallback;
    kn_device_info *d = &cache[dev];
    if (!__atomic_load_n(&d->ready, __ATOMIC_ACQUIRE)) {
        int n = 0, smem = 0;
        if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n < 1) n = 1;
        if (cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess || smem < 1)
            smem = 48 * 1024;
        d->sm_count = n, d->smem_optin = smem;
        __atomic_store_n(&d->ready, 1, __ATOMIC_RELEASE);
    }
    return d;
}

/* The device's multiprocessor count (grids of persistent kernels). */
static inline int kn_sm_count(void) { return kn_device()->sm_count; }

static inline int kn_ceil_div(long a, long b) { return (int)((a + b - 1) / b); }

#endif
