/* emu_plants.cc — the planted kernels of emu_plants.h: each the smallest kernel that breaks one rule, and a runner
 * that launches it on the emulator and reports what the emulator made of it. Compiled for the emulator only. */
#include "emu_plants.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kn_common.cuh"

/* ---- the debug mode names a refused launch ----------------------------------------------------------------- */

__global__ void plant_oversized_block(float *out) { out[threadIdx.x] = 1.0f; }

static cudaError_t launch_oversized_block(float *out) { return KN_LAUNCH(plant_oversized_block, 1, 2048, 0, 0, out); }

int emu_plant_refused_launch_named(char *msg, size_t msg_size) {
    float out[1];
    kn_launch_failure_clear();
    const int was = kn_debug_launches(1);
    const cudaError_t e = launch_oversized_block(out);
    kn_debug_launches(was);
    const char *named = kn_launch_failure();
    snprintf(msg, msg_size, "launch: %s; named: \"%s\"", cudaGetErrorString(e), named);
    const int ok = e != cudaSuccess && strstr(named, "launch_oversized_block: plant_oversized_block<<<") &&
                   strstr(named, "block (2048,1,1)") && strstr(named, cudaGetErrorString(e));
    kn_launch_failure_clear();
    return ok ? 0 : 1;
}

/* ---- one plant per rule -------------------------------------------------------------------------------------- */

/* EMU_RULE_ORDER: each thread reads its lower neighbour's write with no barrier between (256 threads). Index order
 * runs the neighbour first, always. Every launch writes values of its own (base), so a value left by an earlier
 * launch is wrong too, poisoned or not. */
__global__ void plant_missing_barrier(float *out, float base) {
    __shared__ float s[256];
    const int t = threadIdx.x;
    s[t] = base + (float)t;
    out[t] = t ? s[t - 1] - base + 1.0f : 0.0f; /* right: out[t] = t */
}

/* EMU_RULE_SHARED: a block sum whose second step reads all 32 slots of its scratch though only 4 warps wrote
 * theirs (128 threads, each adding 1). Zeroed once, the unwritten slots add nothing. */
__global__ void plant_unwritten_scratch(float *out) {
    __shared__ float scratch[32];
    const int lane = threadIdx.x % KN_WARP, warp = threadIdx.x / KN_WARP;
    float v = kn_warp_sum(1.0f);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = kn_warp_sum(scratch[lane]); /* right: lane < n_warps ? scratch[lane] : 0 */
        if (lane == 0) out[0] = v;      /* right: 128 */
    }
}

/* EMU_RULE_MASK: a warp's sum whose mask names half the warp while its first step reads the other half. */
__global__ void plant_partial_mask(float *out) {
    float v = (float)(threadIdx.x + 1);
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0x0000ffffu, v, o); /* right: 0xffffffff */
    if (threadIdx.x == 0) out[0] = v;                                          /* right: 528 */
}

/* EMU_RULE_BARRIER: each half of the block waits at a __syncthreads of its own branch (64 threads). Counted, not
 * placed, the 64 arrivals make one barrier. */
__global__ void plant_divergent_barrier(float *out) {
    __shared__ float s[64];
    const int t = threadIdx.x;
    if (t < 32) {
        s[t] = 1.0f;
        __syncthreads();
        out[t] = s[63 - t]; /* right: 2 */
    } else {
        s[t] = 2.0f;
        __syncthreads();
        out[t] = s[63 - t] + 10.0f; /* right: 11 */
    }
}

/* EMU_RULE_SMEM_OPTIN: 64 KB of dynamic shared memory, never asked for with cudaFuncSetAttribute (256 threads). */
#define PLANT_SMEM_FLOATS (16 * 1024)
__global__ void plant_big_smem(float *out) {
    KN_DYN_SMEM(float, s);
    const int t = threadIdx.x;
    for (int i = t; i < PLANT_SMEM_FLOATS; i += blockDim.x) s[i] = 1.0f;
    __syncthreads();
    float v = 0.0f;
    for (int i = t; i < PLANT_SMEM_FLOATS; i += blockDim.x) v += s[i];
    out[t] = v; /* right: 64 */
}

/* EMU_RULE_BOUNDS: a block of 512 threads for a kernel without __launch_bounds__, and for one bounded to 256; and
 * the same body bounded to 512 (a macro, as the project's bounds often are). */
#define PLANT_BOUND 512
__global__ void plant_unbounded_block(float *out) { out[threadIdx.x] = (float)threadIdx.x; }
__global__ __launch_bounds__(256) void plant_small_bound(float *out) { out[threadIdx.x] = (float)threadIdx.x; }
__global__ __launch_bounds__(PLANT_BOUND, 1) void plant_bounded_block(float *out) {
    out[threadIdx.x] = (float)threadIdx.x;
}

static cudaError_t launch_missing_barrier(float *out) {
    static float base;
    base += 1000.0f;
    return KN_LAUNCH(plant_missing_barrier, 1, 256, 0, 0, out, base);
}
static cudaError_t launch_unwritten_scratch(float *out) {
    return KN_LAUNCH(plant_unwritten_scratch, 1, 128, 0, 0, out);
}
static cudaError_t launch_partial_mask(float *out) { return KN_LAUNCH(plant_partial_mask, 1, 32, 0, 0, out); }
static cudaError_t launch_divergent_barrier(float *out) { return KN_LAUNCH(plant_divergent_barrier, 1, 64, 0, 0, out); }
static cudaError_t launch_big_smem(float *out) {
    return KN_LAUNCH(plant_big_smem, 1, 256, PLANT_SMEM_FLOATS * sizeof(float), 0, out);
}
static cudaError_t launch_unbounded_block(float *out) { return KN_LAUNCH(plant_unbounded_block, 1, 512, 0, 0, out); }
static cudaError_t launch_past_bound(float *out) { return KN_LAUNCH(plant_small_bound, 1, 512, 0, 0, out); }
static cudaError_t launch_bounded_block(float *out) { return KN_LAUNCH(plant_bounded_block, 1, 512, 0, 0, out); }

static float right_missing_barrier(int i) { return (float)i; }
static float right_unwritten_scratch(int i) { return i ? 0.0f : 128.0f; }
static float right_partial_mask(int i) { return i ? 0.0f : 528.0f; }
static float right_divergent_barrier(int i) { return i < 32 ? 2.0f : 11.0f; }
static float right_big_smem(int i) { return 64.0f + 0.0f * (float)i; }
static float right_thread_index(int i) { return (float)i; }

static const struct {
    const char *name;
    unsigned rule;
    cudaError_t (*launch)(float *out);
    int n_out;             /* outputs checked */
    float (*right)(int i); /* what a correct kernel writes to out[i] */
} plants[] = {
    {"a read of another thread's write without a barrier", EMU_RULE_ORDER, launch_missing_barrier, 256,
     right_missing_barrier},
    {"a block sum reading scratch slots no warp wrote", EMU_RULE_SHARED, launch_unwritten_scratch, 1,
     right_unwritten_scratch},
    {"a shuffle reading lanes outside its mask", EMU_RULE_MASK, launch_partial_mask, 1, right_partial_mask},
    {"__syncthreads in both branches of a divergent if", EMU_RULE_BARRIER, launch_divergent_barrier, 64,
     right_divergent_barrier},
    {"64 KB of dynamic shared memory without cudaFuncSetAttribute", EMU_RULE_SMEM_OPTIN, launch_big_smem, 256,
     right_big_smem},
    {"a block of 512 threads without __launch_bounds__", EMU_RULE_BOUNDS, launch_unbounded_block, 512,
     right_thread_index},
    {"a block of 512 threads for __launch_bounds__(256)", EMU_RULE_BOUNDS, launch_past_bound, 512, right_thread_index},
};
#define N_PLANTS (int)(sizeof plants / sizeof plants[0])

int emu_plant_count(void) { return N_PLANTS; }
unsigned emu_plant_all_rules(void) { return EMU_RULES_ALL; }
const char *emu_plant_name(int i) { return i >= 0 && i < N_PLANTS ? plants[i].name : "?"; }
unsigned emu_plant_rule(int i) { return i >= 0 && i < N_PLANTS ? plants[i].rule : 0; }
int emu_plant_checked(int i) { return !(emu_plant_rule(i) == EMU_RULE_SHARED && !EMU_SHARED_POISONED); }

/* Runs launch under `rules`: 1 when it succeeded and out[0..n) is right, else 0 with the first wrong output. */
static int passes(cudaError_t (*launch)(float *), int n, float (*right)(int), unsigned rules, char *msg,
                  size_t msg_size) {
    float *out = (float *)malloc(512 * sizeof(float));
    for (int i = 0; i < 512; i++) out[i] = -1.0f;
    const unsigned was = emu_set_rules(rules);
    const cudaError_t e = launch(out);
    emu_set_rules(was);
    int ok = e == cudaSuccess;
    snprintf(msg, msg_size, "launch: %s", cudaGetErrorString(e));
    for (int i = 0; ok && i < n; i++)
        if (!(out[i] == right(i))) {
            snprintf(msg, msg_size, "out[%d] = %g, right: %g", i, out[i], right(i));
            ok = 0;
        }
    free(out);
    return ok;
}

int emu_plant_run(int i, unsigned rules, char *msg, size_t msg_size) {
    if (i < 0 || i >= N_PLANTS) {
        snprintf(msg, msg_size, "no plant %d", i);
        return 0;
    }
    return passes(plants[i].launch, plants[i].n_out, plants[i].right, rules, msg, msg_size);
}

int emu_plant_bounded_block(char *msg, size_t msg_size) {
    return passes(launch_bounded_block, 512, right_thread_index, EMU_RULES_ALL, msg, msg_size);
}

int emu_plant_smem_opted_in(char *msg, size_t msg_size) {
    const cudaError_t e = cudaFuncSetAttribute(plant_big_smem, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               (int)(PLANT_SMEM_FLOATS * sizeof(float)));
    if (e != cudaSuccess) {
        snprintf(msg, msg_size, "cudaFuncSetAttribute: %s", cudaGetErrorString(e));
        return 0;
    }
    return passes(launch_big_smem, 256, right_big_smem, EMU_RULES_ALL, msg, msg_size);
}

/* ---- grid sizing at a real SM count ---------------------------------------------------------------------------- */

#define PLANT_MAX_PARTIALS 16 /* the planted assumption: "a GPU has at most 8 SMs" */

/* Grid-stride sum of x[n] into one partial per block; blocks past the partials' room drop theirs. */
__global__ void plant_partial_sums(float *partial, const float *x, int n) {
    __shared__ float scratch[32];
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
    v = kn_block_sum(v, scratch);
    if (threadIdx.x == 0 && blockIdx.x < PLANT_MAX_PARTIALS) partial[blockIdx.x] = v;
}

int emu_plant_grid_sized_by_sms(int sm_count, char *msg, size_t msg_size) {
    emu_set_sm_count(sm_count);
    enum { N = 4096 };
    float *x = (float *)malloc(N * sizeof(float)), *partial = (float *)calloc(PLANT_MAX_PARTIALS, sizeof(float));
    for (int i = 0; i < N; i++) x[i] = 1.0f;
    const int blocks = 2 * kn_sm_count(); /* two blocks an SM, as the project's persistent grids are sized */
    const cudaError_t e = KN_LAUNCH(plant_partial_sums, blocks, 64, 0, 0, partial, x, N);
    float sum = 0.0f;
    for (int b = 0; b < PLANT_MAX_PARTIALS && b < blocks; b++) sum += partial[b];
    free(x), free(partial);
    snprintf(msg, msg_size, "%d SMs, %d blocks: launch %s, sum %g (right: %d)", kn_sm_count(), blocks,
             cudaGetErrorString(e), sum, N);
    return e == cudaSuccess && sum == (float)N;
}
