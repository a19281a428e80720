/* plant_registers.cu — planted kernels for tools/ptxas-check.sh (tests/parts/ptxas-check.sh), never linked: one
 * kernel body that keeps PLANT_LIVE accumulators live across a loop (ptxas gives it well over 64 registers a thread
 * when nothing bounds it), launched three ways. Compiled by nvcc to PTX only; assumes nothing else. */
#include "kn_common.cuh"

#define PLANT_LIVE 96 /* accumulators live through the loop: at least 96 registers a thread, unbounded */

__device__ __forceinline__ void plant_body(float *out, const float *x, int n) {
    float acc[PLANT_LIVE];
#pragma unroll
    for (int j = 0; j < PLANT_LIVE; j++) acc[j] = x[j * blockDim.x + threadIdx.x];
    for (int i = 0; i < n; i++) {
        float xi = x[i];
#pragma unroll
        for (int j = 0; j < PLANT_LIVE; j++) acc[j] = fmaf(acc[j], xi, (float)j);
    }
#pragma unroll
    for (int j = 0; j < PLANT_LIVE; j++) out[j * blockDim.x + threadIdx.x] = acc[j];
}

/* The plant: no __launch_bounds__, so ptxas is free to give it every register it wants, and a launch of 1024
 * threads a block, which needs more than the SM's 65536 registers: a GPU refuses it (too many resources requested). */
__global__ void plant_unbounded(float *out, const float *x, int n) { plant_body(out, x, n); }

/* The control: the same body declaring its 1024 threads, so ptxas fits it in 64 registers (spilling if it must). */
__global__ __launch_bounds__(1024) void plant_bounded(float *out, const float *x, int n) { plant_body(out, x, n); }

/* The second plant: bounded at 256 threads, launched at 512 (the bound broken at the launch). */
__global__ __launch_bounds__(256) void plant_overbound(float *out, const float *x, int n) { plant_body(out, x, n); }

cudaError_t plant_launch_unbounded(float *out, const float *x, int n, cudaStream_t s) {
    return KN_LAUNCH(plant_unbounded, 1, 1024, 0, s, out, x, n);
}
cudaError_t plant_launch_bounded(float *out, const float *x, int n, cudaStream_t s) {
    return KN_LAUNCH(plant_bounded, 1, 1024, 0, s, out, x, n);
}
cudaError_t plant_launch_overbound(float *out, const float *x, int n, cudaStream_t s) {
    return KN_LAUNCH(plant_overbound, 1, 512, 0, s, out, x, n);
}
