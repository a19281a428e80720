/* norm.cu — RMSNorm (zero-centred), the DeltaNet gated output norm and
 * SwiGLU (kn_norm.h). Small, latency-bound ops at batch 1: the versions
 * trade threads per row and access width. Each follows the reference's
 * expression order (x·r·(1+w), z/(1+e^−z)) so only the reduction order differs. */
#include "kn_common.cuh"
#include "kn_norm.h"

__device__ __forceinline__ float silu(float z) { return z / (1.0f + expf(-z)); }

/* ---- rmsnorm ---------------------------------------------------------------- */

/* v1: one block of 256 per row: a strided pass for Σx², a block reduction,
 * then a second pass that scales. */
__global__ void rmsnorm_v1(float *out, const float *x, const float *w, int n, float eps) {
    __shared__ float scratch[32];
    const float *xr = x + (size_t)blockIdx.x * n;
    float *o = out + (size_t)blockIdx.x * n;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += xr[i] * xr[i];
    ss = kn_block_sum(ss, scratch);
    float r = 1.0f / sqrtf(ss / (float)n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) o[i] = xr[i] * r * (1.0f + w[i]);
}

/* v2: 1024 threads per row and float4 accesses (n % 4 == 0, aligned rows):
 * a row of 5120 is five loads per thread, so the single row of a decode step
 * finishes in a few memory latencies. */
__global__ __launch_bounds__(1024) void rmsnorm_v2(float *out, const float *x, const float *w, int n, float eps) {
    __shared__ float scratch[32];
    const float4 *xr = (const float4 *)(x + (size_t)blockIdx.x * n);
    float4 *o = (float4 *)(out + (size_t)blockIdx.x * n);
    const float4 *w4 = (const float4 *)w;
    int n4 = n / 4;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < n4; i += blockDim.x) {
        float4 v = xr[i];
        ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
    ss = kn_block_sum(ss, scratch);
    float r = 1.0f / sqrtf(ss / (float)n + eps);
    for (int i = threadIdx.x; i < n4; i += blockDim.x) {
        float4 v = xr[i], g = kn_ldg(w4 + i);
        o[i] =
            make_float4(v.x * r * (1.0f + g.x), v.y * r * (1.0f + g.y), v.z * r * (1.0f + g.z), v.w * r * (1.0f + g.w));
    }
}

static int aligned4(const void *a, const void *b, const void *c, int n) {
    return n % 4 == 0 && (uintptr_t)a % 16 == 0 && (uintptr_t)b % 16 == 0 && (uintptr_t)c % 16 == 0;
}

static cudaError_t launch_rms_v1(float *out, const float *x, const float *w, int rows, int n, float eps,
                                 cudaStream_t s) {
    if (rows < 1 || n < 1) return cudaErrorInvalidValue;
    return KN_LAUNCH(rmsnorm_v1, rows, 256, 0, s, out, x, w, n, eps);
}

static cudaError_t launch_rms_v2(float *out, const float *x, const float *w, int rows, int n, float eps,
                                 cudaStream_t s) {
    if (rows < 1 || n < 1) return cudaErrorInvalidValue;
    if (!aligned4(out, x, w, n)) return launch_rms_v1(out, x, w, rows, n, eps, s);
    return KN_LAUNCH(rmsnorm_v2, rows, 1024, 0, s, out, x, w, n, eps);
}

static const kn_rmsnorm_version rms_versions[] = {
    {"v1", "block of 256 per row, two strided passes", launch_rms_v1},
    {"v2", "block of 1024 per row, float4 accesses", launch_rms_v2},
};

const kn_rmsnorm_version *kn_rmsnorm_versions(int *count) {
    *count = (int)(sizeof rms_versions / sizeof rms_versions[0]);
    return rms_versions;
}

/* ---- gated norm ---------------------------------------------------------------- */

/* v1: one block of 128 per row (one value head), as rmsnorm_v1. */
__global__ void gatednorm_v1(float *out, const float *x, const float *w, const float *z, int n, float eps) {
    __shared__ float scratch[32];
    size_t base = (size_t)blockIdx.x * n;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += x[base + i] * x[base + i];
    ss = kn_block_sum(ss, scratch);
    float r = 1.0f / sqrtf(ss / (float)n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[base + i] = x[base + i] * r * w[i] * silu(z[base + i]);
}

/* v2: one warp per row, eight rows per block: the 48 heads of a position
 * are six blocks and the reduction is shuffles only. */
__global__ void gatednorm_v2(float *out, const float *x, const float *w, const float *z, int rows, int n, float eps) {
    int lane = threadIdx.x % KN_WARP, row = blockIdx.x * (blockDim.x / KN_WARP) + threadIdx.x / KN_WARP;
    if (row >= rows) return;
    size_t base = (size_t)row * n;
    float ss = 0.0f;
    for (int i = lane; i < n; i += KN_WARP) ss += x[base + i] * x[base + i];
    ss = kn_warp_sum(ss);
    float r = 1.0f / sqrtf(ss / (float)n + eps);
    for (int i = lane; i < n; i += KN_WARP) out[base + i] = x[base + i] * r * w[i] * silu(z[base + i]);
}

static cudaError_t launch_gn_v1(float *out, const float *x, const float *w, const float *z, int rows, int n, float eps,
                                cudaStream_t s) {
    if (rows < 1 || n < 1) return cudaErrorInvalidValue;
    return KN_LAUNCH(gatednorm_v1, rows, 128, 0, s, out, x, w, z, n, eps);
}

static cudaError_t launch_gn_v2(float *out, const float *x, const float *w, const float *z, int rows, int n, float eps,
                                cudaStream_t s) {
    if (rows < 1 || n < 1) return cudaErrorInvalidValue;
    return KN_LAUNCH(gatednorm_v2, kn_ceil_div(rows, 8), 256, 0, s, out, x, w, z, rows, n, eps);
}

static const kn_gatednorm_version gn_versions[] = {
    {"v1", "block of 128 per row", launch_gn_v1},
    {"v2", "warp per row, shuffle reduction, 8 rows per block", launch_gn_v2},
};

const kn_gatednorm_version *kn_gatednorm_versions(int *count) {
    *count = (int)(sizeof gn_versions / sizeof gn_versions[0]);
    return gn_versions;
}

/* ---- swiglu ---------------------------------------------------------------------- */

/* v1: grid-stride, one element per thread per step. */
__global__ void swiglu_v1(float *out, const float *gate, const float *up, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        out[i] = silu(gate[i]) * up[i];
}

/* v2: float4 accesses (aligned, n % 4 == 0). */
__global__ void swiglu_v2(float4 *out, const float4 *gate, const float4 *up, long n4) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += (long)gridDim.x * blockDim.x) {
        float4 g = gate[i], u = up[i];
        out[i] = make_float4(silu(g.x) * u.x, silu(g.y) * u.y, silu(g.z) * u.z, silu(g.w) * u.w);
    }
}

static unsigned grid_for(long n, int per_block) {
    long b = (n + per_block - 1) / per_block;
    return (unsigned)(b < 1 ? 1 : b > 8192 ? 8192 : b);
}

static cudaError_t launch_sw_v1(float *out, const float *gate, const float *up, long n, cudaStream_t s) {
    if (n < 1) return cudaErrorInvalidValue;
    return KN_LAUNCH(swiglu_v1, grid_for(n, 256), 256, 0, s, out, gate, up, n);
}

static cudaError_t launch_sw_v2(float *out, const float *gate, const float *up, long n, cudaStream_t s) {
    if (n < 1) return cudaErrorInvalidValue;
    if (n % 4 || (uintptr_t)out % 16 || (uintptr_t)gate % 16 || (uintptr_t)up % 16)
        return launch_sw_v1(out, gate, up, n, s);
    return KN_LAUNCH(swiglu_v2, grid_for(n / 4, 256), 256, 0, s, (float4 *)out, (const float4 *)gate,
                     (const float4 *)up, n / 4);
}

static const kn_swiglu_version sw_versions[] = {
    {"v1", "grid-stride, one element per thread", launch_sw_v1},
    {"v2", "float4 accesses", launch_sw_v2},
};

const kn_swiglu_version *kn_swiglu_versions(int *count) {
    *count = (int)(sizeof sw_versions / sizeof sw_versions[0]);
    return sw_versions;
}
