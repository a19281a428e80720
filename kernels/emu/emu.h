/* emu.h — a small CPU emulator of the CUDA execution model, so the kernels run without a GPU (CI,
 * AddressSanitizer) on small shapes. Each CUDA thread is a fiber and blocks run one after another. Assumes kernels
 * written with kn_common.cuh's vocabulary, full warps, and blocks that never wait on other blocks. It checks
 * semantics, never speed, and holds kernels to the rules below that a GPU would break them on. */
#ifndef SPECULA_KN_EMU_H
#define SPECULA_KN_EMU_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct uint3 {
    unsigned x, y, z;
};
struct alignas(16) float4 {
    float x, y, z, w;
};
struct alignas(8) float2 {
    float x, y;
};
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};
struct alignas(8) uint2 {
    unsigned x, y;
};
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
static inline float2 make_float2(float x, float y) { return float2{x, y}; }

/* The subset of the runtime's error codes that the launchers use. */
typedef int cudaError_t;
enum {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorLaunchOutOfResources = 701,
    cudaErrorLaunchFailure = 719,
    cudaErrorNotSupported = 801
};
typedef struct emu_stream *cudaStream_t;
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount = 16, cudaDevAttrMaxSharedMemoryPerBlockOptin = 97 };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
/* The rules a GPU holds kernels to that an emulator running threads in index order would let pass. All are on
 * unless a test turns one off to show what it catches: each has a planted kernel (kernels/emu/emu_plants.cc) that
 * passes without it and fails with it. */
enum {
    EMU_RULE_ORDER = 1u << 0,      /* between barriers a block's threads run in an order drawn from the order seed,
                                    * new at every barrier, not by index (a read of another thread's write that
                                    * no barrier orders comes out wrong for some seed) */
    EMU_RULE_SHARED = 1u << 1,     /* static __shared__ memory starts every block as poison (0xff bytes: NaN, −1),
                                    * not zeroed once and kept from the last block */
    EMU_RULE_MASK = 1u << 2,       /* a shuffle that reads a lane outside its mask reads poison; a ballot counts
                                    * only the lanes of its mask */
    EMU_RULE_BARRIER = 1u << 3,    /* the threads that meet at a __syncthreads called it from one place in the
                                    * code, not from two branches that each hold one */
    EMU_RULE_SMEM_OPTIN = 1u << 4, /* more than 48 KB of dynamic shared memory only for a kernel that asked for it
                                    * with cudaFuncSetAttribute */
    EMU_RULE_BOUNDS = 1u << 5,     /* no more threads a block than a kernel's __launch_bounds__, and without
                                    * bounds no more than 256: ptxas fits a bounded kernel's registers to its
                                    * bound, but may give an unbounded one 255 a thread, and 255 × 257 passes an
                                    * SM's 65536 (a GPU refuses such launches: too many resources requested) */
    EMU_RULES_ALL = (1u << 6) - 1
};
unsigned emu_set_rules(unsigned rules);     /* returns the rules before */
uint64_t emu_set_order_seed(uint64_t seed); /* the seed of EMU_RULE_ORDER's orders (1 at start); returns the last */
/* The multiprocessors the device reports (cudaDevAttrMultiProcessorCount): 4 at start, so that grids sized by it
 * stay cheap to emulate; 132 sizes them as on an H200. Set it before the first launch: kernels/kn_common.cuh's
 * kn_device reads it once. Returns the count before (n < 1 leaves it as it is). */
int emu_set_sm_count(int n);

const char *cudaGetErrorString(cudaError_t e);
cudaError_t cudaGetLastError(void);
cudaError_t cudaGetDevice(int *dev);
cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int dev);
/* What a kernel is known by: its address (a launch names it, cudaFuncSetAttribute sets its limits). */
template <class F> static inline const void *emu_kernel_id(F *kernel) { return reinterpret_cast<const void *>(kernel); }
cudaError_t emu_func_set_attribute(const void *kernel, cudaFuncAttribute attr, int value);
/* The dynamic shared memory a launch of `kernel` may take: 48 KB, or what cudaFuncSetAttribute raised it to. */
size_t emu_func_smem_limit(const void *kernel);
template <class F> static inline cudaError_t cudaFuncSetAttribute(F *kernel, cudaFuncAttribute attr, int value) {
    return emu_func_set_attribute(emu_kernel_id(kernel), attr, value);
}
/* Blocks of `threads` threads and `smem` dynamic shared-memory bytes that fit
 * on one multiprocessor, by Hopper's per-SM limits (2048 threads, 32 blocks,
 * 228 KB of shared memory with 1 KB reserved per block) and, the emulator
 * knowing no register counts, an assumed 64 registers per thread (65536 per
 * SM): plausible, so the launchers' grid sizing runs as on a GPU. */
cudaError_t emu_occupancy(int *blocks, int threads, size_t smem);
template <class F>
static inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, F, int threads, size_t smem) {
    return emu_occupancy(blocks, threads, smem);
}

#define EMU_MAX_SMEM (227 * 1024)
#define EMU_SMEM_DEFAULT (48 * 1024) /* dynamic shared memory a kernel gets without cudaFuncSetAttribute */

/* Coordinates of the running thread and block. */
extern uint3 emu_block_idx;
extern dim3 emu_block_dim, emu_grid_dim;
const uint3 &emu_thread_idx(void);
#define threadIdx (emu_thread_idx())
#define blockIdx emu_block_idx
#define blockDim emu_block_dim
#define gridDim emu_grid_dim

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
/* The emulator keeps a kernel's launch bound (the first argument, its value once macros are expanded) as the linker
 * section the kernel lies in, emu_bounds_N (EMU_RULE_BOUNDS); emu.cc knows the bounds 32 … 1024 of emu_bounds. g++
 * leaves template instantiations out of named sections: a template kernel counts as unbounded (256 threads). */
#define __launch_bounds__(...) EMU_BOUNDS_FIRST(__VA_ARGS__, 0)
#define EMU_BOUNDS_FIRST(n, ...) EMU_BOUNDS_SECTION(n)
#define EMU_BOUNDS_SECTION(n) __attribute__((section("emu_bounds_" #n)))
/* Blocks run one at a time, so one static copy per kernel is the block's. Every such copy lies in the section
 * emu_shared, which each block starts by poisoning (EMU_RULE_SHARED). Not under AddressSanitizer, which leaves a
 * named section's variables without redzones: that build keeps them instrumented, to catch overruns instead. */
#if defined(__SANITIZE_ADDRESS__)
#define __shared__ static
#define EMU_SHARED_POISONED 0
#else
#define __shared__ static __attribute__((section("emu_shared")))
#define EMU_SHARED_POISONED 1
#endif

void __syncthreads(void);
void __syncwarp(unsigned mask = 0xffffffffu);
static inline void __threadfence(void) {}

/* Collective among the live lanes of the caller's warp: every lane offers a
 * 64-bit word and receives the word of lane `src` (its own when src is out of
 * range; poison when src is outside `mask`, EMU_RULE_MASK). */
uint64_t emu_warp_exchange(uint64_t mine, int src, unsigned mask);
int emu_lane(void);

template <class T> static inline T emu_from_bits(uint64_t b) {
    T v;
    memcpy(&v, &b, sizeof v);
    return v;
}
template <class T> static inline uint64_t emu_to_bits(T v) {
    static_assert(sizeof(T) <= 8, "shuffle of more than 8 bytes");
    uint64_t b = 0;
    memcpy(&b, &v, sizeof v);
    return b;
}
template <class T> static inline T __shfl_sync(unsigned members, T v, int src, int width = 32) {
    int lane = emu_lane();
    int base = lane / width * width;
    return emu_from_bits<T>(emu_warp_exchange(emu_to_bits(v), base + ((src % width) + width) % width, members));
}
template <class T> static inline T __shfl_xor_sync(unsigned members, T v, int mask, int width = 32) {
    int lane = emu_lane();
    int src = lane ^ mask;
    if (src / width != lane / width) src = lane;
    return emu_from_bits<T>(emu_warp_exchange(emu_to_bits(v), src, members));
}
template <class T> static inline T __shfl_down_sync(unsigned members, T v, unsigned delta, int width = 32) {
    int lane = emu_lane();
    int src = lane + (int)delta;
    if (src / width != lane / width) src = lane;
    return emu_from_bits<T>(emu_warp_exchange(emu_to_bits(v), src, members));
}
unsigned __ballot_sync(unsigned mask, int pred);
/* The live lanes whose value equals the caller's. */
unsigned emu_match_any(uint64_t value);
template <class T> static inline unsigned __match_any_sync(unsigned, T value) {
    return emu_match_any(emu_to_bits(value));
}
static inline int __popc(unsigned x) { return __builtin_popcount(x); }

/* Fibers never run concurrently, so a plain read-modify-write is atomic. */
template <class T> static inline T atomicAdd(T *p, T v) {
    T old = *p;
    *p = old + v;
    return old;
}
template <class T> static inline T atomicMax(T *p, T v) {
    T old = *p;
    if (v > old) *p = v;
    return old;
}
template <class T> static inline T atomicMin(T *p, T v) {
    T old = *p;
    if (v < old) *p = v;
    return old;
}

static inline unsigned __float_as_uint(float f) {
    unsigned u;
    memcpy(&u, &f, 4);
    return u;
}
static inline float __uint_as_float(unsigned u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline int __float_as_int(float f) { return (int)__float_as_uint(f); }
static inline long long __double_as_longlong(double d) {
    long long u;
    memcpy(&u, &d, 8);
    return u;
}
static inline double __longlong_as_double(long long u) {
    double d;
    memcpy(&d, &u, 8);
    return d;
}
static inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }

/* The warp-wide tensor-core product d = a·b + c of mma.m16n8k16 with bf16
 * operands and fp32 accumulation, fragments laid out as the PTX ISA defines
 * them (see kn_mma_bf16 in kn_common.cuh). */
void emu_mma_bf16_16816(float d[4], const uint32_t a[4], const uint32_t b[2], const float c[4]);

#include "emu_rt.h"

/* Runs body() once per thread of every block of the grid. */
typedef void (*emu_body_fn)(void *);
cudaError_t emu_run(dim3 grid, dim3 block, size_t smem, emu_body_fn fn, void *arg);
/* cudaErrorInvalidConfiguration for a grid or block the emulator (and a GPU) cannot run, else cudaSuccess. */
cudaError_t emu_config_check(dim3 grid, dim3 block, size_t smem);
/* What a GPU refuses at a launch of `kernel` (NULL: a body launched directly, not checked) that emu_config_check
 * does not see: more dynamic shared memory than it may take (EMU_RULE_SMEM_OPTIN, cudaErrorInvalidValue), more
 * than 256 threads without launch bounds (EMU_RULE_BOUNDS, cudaErrorLaunchOutOfResources). With a message. */
cudaError_t emu_kernel_check(const void *kernel, dim3 block, size_t smem);
void *emu_dyn_smem(void);
/* A launch on stream s: run now, or, while s captures, recorded with its own copy of body (KN_LAUNCH's lambda
 * holds the kernel's arguments by value, as CUDA copies them at launch). One body type, one kernel: the
 * identity cudaGraphExecUpdate compares. */
template <class F>
static inline cudaError_t emu_launch(const void *kernel, dim3 grid, dim3 block, size_t smem, cudaStream_t s, F body) {
    cudaError_t e = emu_config_check(grid, block, smem); /* a GPU checks the shape first */
    if (e == cudaSuccess) e = emu_kernel_check(kernel, block, smem);
    if (e != cudaSuccess) return e;
    if (emu_launch_recorded(s, &e)) {
        if (e != cudaSuccess) return e;
        return emu_record_kernel(
            s, grid, block, smem, [](void *p) { (*(F *)p)(); }, new F(body), sizeof(F),
            [](const void *p) -> void * { return new F(*(const F *)p); }, [](void *p) { delete (F *)p; });
    }
    if (e != cudaSuccess) return e;
    return emu_run(
        grid, block, smem, [](void *p) { (*(F *)p)(); }, &body);
}

#endif
