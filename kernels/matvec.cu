/* matvec.cu — bf16-weight linear layers for decode (m = 1) and for a verify
 * batch (m ≤ 16), fp32 activations and accumulation (kn_matvec.h). Batch-1
 * decode is bandwidth-bound: a version is judged by the fraction of the
 * copy bandwidth it reaches while reading W once. Numbered versions, the
 * llm.c dev/cuda way; each says what changed. */
#include "kn_common.cuh"
#include "kn_matvec.h"

#ifdef KN_HAVE_CUBLAS
#include <cublas_v2.h>
#endif

/* ---- decode, m = 1 -------------------------------------------------------- */

/* v1: one thread per output row, element loads (uncoalesced: neighbouring
 * threads read rows n_in apart). The correctness baseline. */
__global__ void matvec_v1(float *y, const uint16_t *W, const float *x, int n_out, int n_in) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n_out) return;
    const uint16_t *w = W + (size_t)row * n_in;
    float acc = 0.0f;
    for (int j = 0; j < n_in; j++) acc += kn_bf16(w[j]) * x[j];
    y[row] = acc;
}

/* v2: one warp per row: lanes read consecutive elements (coalesced 64-byte
 * warp loads) and a shuffle tree adds the 32 partial sums. */
__global__ void matvec_v2(float *y, const uint16_t *W, const float *x, int n_out, int n_in) {
    int lane = threadIdx.x % KN_WARP;
    int row = blockIdx.x * (blockDim.x / KN_WARP) + threadIdx.x / KN_WARP;
    if (row >= n_out) return;
    const uint16_t *w = W + (size_t)row * n_in;
    float acc = 0.0f;
    for (int j = lane; j < n_in; j += KN_WARP) acc += kn_bf16(w[j]) * x[j];
    acc = kn_warp_sum(acc);
    if (lane == 0) y[row] = acc;
}

/* v3: warp per row with 16-byte loads (8 weights per lane, 512 bytes per
 * warp load) and x read as float4 through the read-only cache. */
template <bool VEC> __global__ void matvec_v3(float *y, const uint16_t *W, const float *x, int n_out, int n_in) {
    int lane = threadIdx.x % KN_WARP;
    int row = blockIdx.x * (blockDim.x / KN_WARP) + threadIdx.x / KN_WARP;
    if (row >= n_out) return;
    const uint16_t *w = W + (size_t)row * n_in;
    float acc = 0.0f;
    if (VEC) {
        const uint4 *w4 = (const uint4 *)w;
        const float4 *x4 = (const float4 *)x;
        for (int j = lane; j < n_in / 8; j += KN_WARP)
            acc += kn_dot8(kn_ldg(w4 + j), kn_ldg(x4 + 2 * j), kn_ldg(x4 + 2 * j + 1));
    } else {
        for (int j = lane; j < n_in; j += KN_WARP) acc += kn_bf16(w[j]) * x[j];
    }
    acc = kn_warp_sum(acc);
    if (lane == 0) y[row] = acc;
}

/* v4: v3 with four 16-byte loads in flight per lane (2 KB per warp), the
 * streaming cache hint on W, x staged once per block in shared memory, and a
 * persistent grid (a few blocks per SM loop over the rows) so the staging is
 * paid once per block rather than once per row. */
template <bool VEC>
__global__ __launch_bounds__(256) void matvec_v4(float *y, const uint16_t *W, const float *x, int n_out, int n_in) {
    KN_DYN_SMEM(float, xs); /* [n_in] */
    for (int i = threadIdx.x; i < n_in; i += blockDim.x) xs[i] = x[i];
    __syncthreads();
    int lane = threadIdx.x % KN_WARP, warps = blockDim.x / KN_WARP;
    for (int row = blockIdx.x * warps + threadIdx.x / KN_WARP; row < n_out; row += gridDim.x * warps) {
        const uint16_t *w = W + (size_t)row * n_in;
        float acc = 0.0f;
        if (VEC) {
            const uint4 *w4 = (const uint4 *)w;
            const float4 *x4 = (const float4 *)xs;
            int n8 = n_in / 8, j = lane;
            for (; j + 3 * KN_WARP < n8; j += 4 * KN_WARP) {
                uint4 a0 = kn_ld_stream(w4 + j), a1 = kn_ld_stream(w4 + j + KN_WARP);
                uint4 a2 = kn_ld_stream(w4 + j + 2 * KN_WARP), a3 = kn_ld_stream(w4 + j + 3 * KN_WARP);
                acc += kn_dot8(a0, x4[2 * j], x4[2 * j + 1]);
                acc += kn_dot8(a1, x4[2 * (j + KN_WARP)], x4[2 * (j + KN_WARP) + 1]);
                acc += kn_dot8(a2, x4[2 * (j + 2 * KN_WARP)], x4[2 * (j + 2 * KN_WARP) + 1]);
                acc += kn_dot8(a3, x4[2 * (j + 3 * KN_WARP)], x4[2 * (j + 3 * KN_WARP) + 1]);
            }
            for (; j < n8; j += KN_WARP) acc += kn_dot8(kn_ld_stream(w4 + j), x4[2 * j], x4[2 * j + 1]);
        } else {
            for (int j = lane; j < n_in; j += KN_WARP) acc += kn_bf16(w[j]) * xs[j];
        }
        acc = kn_warp_sum(acc);
        if (lane == 0) y[row] = acc;
    }
}

/* v5: one row per block of 8 warps that split n_in, summed through shared
 * memory: for matrices with few rows (k/v projections, 1024 rows; in_proj_a/b,
 * 48) where a warp per row leaves most of the SMs without work. */
template <bool VEC>
__global__ __launch_bounds__(256) void matvec_v5(float *y, const uint16_t *W, const float *x, int n_out, int n_in) {
    __shared__ float scratch[32];
    int row = blockIdx.x;
    const uint16_t *w = W + (size_t)row * n_in;
    float acc = 0.0f;
    if (VEC) {
        const uint4 *w4 = (const uint4 *)w;
        const float4 *x4 = (const float4 *)x;
        for (int j = threadIdx.x; j < n_in / 8; j += blockDim.x)
            acc += kn_dot8(kn_ld_stream(w4 + j), kn_ldg(x4 + 2 * j), kn_ldg(x4 + 2 * j + 1));
    } else {
        for (int j = threadIdx.x; j < n_in; j += blockDim.x) acc += kn_bf16(w[j]) * x[j];
    }
    acc = kn_block_sum(acc, scratch);
    if (threadIdx.x == 0) y[row] = acc;
}

static int vec_ok(const uint16_t *W, const float *x, int n_in) {
    return n_in % 8 == 0 && ((uintptr_t)W % 16) == 0 && ((uintptr_t)x % 16) == 0;
}

static cudaError_t launch_v1(float *Y, const uint16_t *W, const float *X, int m, int n_out, int n_in, cudaStream_t s) {
    if (m != 1 || n_out < 1 || n_in < 1) return cudaErrorInvalidValue;
    return KN_LAUNCH(matvec_v1, kn_ceil_div(n_out, 128), 128, 0, s, Y, W, X, n_out, n_in);
}

static cudaError_t launch_v2(float *Y, const uint16_t *W, const float *X, int m, int n_out, int n_in, cudaStream_t s) {
    if (m != 1 || n_out < 1 || n_in < 1) return cudaErrorInvalidValue;
    return KN_LAUNCH(matvec_v2, kn_ceil_div(n_out, 8), 256, 0, s, Y, W, X, n_out, n_in);
}

static cudaError_t launch_v3(float *Y, const uint16_t *W, const float *X, int m, int n_out, int n_in, cudaStream_t s) {
    if (m != 1 || n_out < 1 || n_in < 1) return cudaErrorInvalidValue;
    void (*k)(float *, const uint16_t *, const float *, int, int) =
        vec_ok(W, X, n_in) ? matvec_v3<true> : matvec_v3<false>;
    return KN_LAUNCH(k, kn_ceil_div(n_out, 8), 256, 0, s, Y, W, X, n_out, n_in);
}

static cudaError_t launch_v4(float *Y, const uint16_t *W, const float *X, int m, int n_out, int n_in, cudaStream_t s) {
    if (m != 1 || n_out < 1 || n_in < 1) return cudaErrorInvalidValue;
    size_t smem = (size_t)n_in * sizeof(float);
    int dev = 0, smem_max = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (smem > (size_t)smem_max) return launch_v3(Y, W, X, m, n_out, n_in, s); /* x does not fit: no staging */
    void (*k)(float *, const uint16_t *, const float *, int, int) =
        vec_ok(W, X, n_in) ? matvec_v4<true> : matvec_v4<false>;
    cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess) return e;
    int per_sm = (int)((size_t)smem_max / (smem + 1024));
    if (per_sm > 8) per_sm = 8; /* 8 blocks of 256 threads fill an SM */
    if (per_sm < 1) per_sm = 1;
    int blocks = kn_ceil_div(n_out, 8);
    if (blocks > per_sm * kn_sm_count()) blocks = per_sm * kn_sm_count();
    return KN_LAUNCH(k, blocks, 256, smem, s, Y, W, X, n_out, n_in);
}

static cudaError_t launch_v5(float *Y, const uint16_t *W, const float *X, int m, int n_out, int n_in, cudaStream_t s) {
    if (m != 1 || n_out < 1 || n_in < 1) return cudaErrorInvalidValue;
    void (*k)(float *, const uint16_t *, const float *, int, int) =
        vec_ok(W, X, n_in) ? matvec_v5<true> : matvec_v5<false>;
    return KN_LAUNCH(k, n_out, 256, 0, s, Y, W, X, n_out, n_in);
}

/* ---- verify batch, m ≤ 16 ------------------------------------------------- */

/* b1: the v3 design with m accumulators per lane: each 16-byte weight load
 * is used for all m positions (fp32 FMAs on the CUDA cores, X fp32 through
 * the read-only cache). Simple, but X traffic grows with m. */
template <bool VEC> __global__ void matvec_b1(float *Y, const uint16_t *W, const float *X, int m, int n_out, int n_in) {
    int lane = threadIdx.x % KN_WARP;
    int row = blockIdx.x * (blockDim.x / KN_WARP) + threadIdx.x / KN_WARP;
    if (row >= n_out) return;
    const uint16_t *w = W + (size_t)row * n_in;
    float acc[KN_MATVEC_MAX_M];
#pragma unroll
    for (int p = 0; p < KN_MATVEC_MAX_M; p++) acc[p] = 0.0f;
    if (VEC) {
        const uint4 *w4 = (const uint4 *)w;
        for (int j = lane; j < n_in / 8; j += KN_WARP) {
            uint4 a = kn_ld_stream(w4 + j);
#pragma unroll
            for (int p = 0; p < KN_MATVEC_MAX_M; p++)
                if (p < m) {
                    const float4 *x4 = (const float4 *)(X + (size_t)p * n_in);
                    acc[p] += kn_dot8(a, kn_ldg(x4 + 2 * j), kn_ldg(x4 + 2 * j + 1));
                }
        }
    } else {
        for (int j = lane; j < n_in; j += KN_WARP) {
            float wj = kn_bf16(w[j]);
#pragma unroll
            for (int p = 0; p < KN_MATVEC_MAX_M; p++)
                if (p < m) acc[p] += wj * X[(size_t)p * n_in + j];
        }
    }
#pragma unroll
    for (int p = 0; p < KN_MATVEC_MAX_M; p++)
        if (p < m) {
            float s = kn_warp_sum(acc[p]);
            if (lane == 0) Y[(size_t)p * n_out + row] = s;
        }
}

/* The 8 weights W[row, k..k+7] as four bf16 pairs, zeros past the edges. */
template <bool VEC> __device__ __forceinline__ uint4 load_w8(const uint16_t *W, int row, int k, int n_out, int n_in) {
    uint4 r = {0u, 0u, 0u, 0u};
    if (row >= n_out) return r;
    const uint16_t *w = W + (size_t)row * n_in + k;
    if (VEC) {
        if (k < n_in) r = kn_ld_stream((const uint4 *)w);
    } else {
        uint32_t e[8];
#pragma unroll
        for (int j = 0; j < 8; j++) e[j] = k + j < n_in ? w[j] : 0u;
        r.x = e[0] | e[1] << 16, r.y = e[2] | e[3] << 16, r.z = e[4] | e[5] << 16, r.w = e[6] | e[7] << 16;
    }
    return r;
}

/* X[p, k..k+7] rounded to bf16 pairs: b[0..1] for k..k+3, b[2..3] for k+4..k+7. */
template <bool VEC>
__device__ __forceinline__ void load_x8(uint32_t b[4], const float *X, int p, int k, int m, int n_in) {
    float v[8];
#pragma unroll
    for (int j = 0; j < 8; j++) v[j] = 0.0f;
    if (p < m) {
        const float *x = X + (size_t)p * n_in + k;
        if (VEC) {
            if (k < n_in) {
                float4 x0 = kn_ldg((const float4 *)x), x1 = kn_ldg((const float4 *)x + 1);
                v[0] = x0.x, v[1] = x0.y, v[2] = x0.z, v[3] = x0.w, v[4] = x1.x, v[5] = x1.y, v[6] = x1.z, v[7] = x1.w;
            }
        } else {
#pragma unroll
            for (int j = 0; j < 8; j++)
                if (k + j < n_in) v[j] = x[j];
        }
    }
    b[0] = kn_pack_bf16(v[0], v[1]), b[1] = kn_pack_bf16(v[2], v[3]);
    b[2] = kn_pack_bf16(v[4], v[5]), b[3] = kn_pack_bf16(v[6], v[7]);
}

#define B2_WARPS 8
#define B2_UNROLL 4

/* b2: tensor cores. A block owns 16 rows of W and its 8 warps split n_in;
 * each lane loads 16 contiguous bytes of two rows per 32-wide k step and
 * feeds them to mma.m16n8k16 as the A operand, the positions (X rounded to
 * bf16) being the N = 8 columns (two tiles when m > 8). The k order inside a
 * step is permuted identically in A and B, which a dot product allows, so
 * every load stays 16 bytes wide. Four steps in flight per warp; the warps'
 * partial tiles are summed through shared memory. */
template <int NT, bool VEC>
__global__ __launch_bounds__(256) void matvec_b2(float *Y, const uint16_t *W, const float *X, int m, int n_out,
                                                 int n_in) {
    __shared__ float part[B2_WARPS][NT * 4][KN_WARP];
    int lane = threadIdx.x % KN_WARP, warp = threadIdx.x / KN_WARP;
    int g = lane / 4, t = lane % 4;
    int ra = blockIdx.x * 16 + g, rb = ra + 8;
    float d[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; nt++) d[nt][0] = d[nt][1] = d[nt][2] = d[nt][3] = 0.0f;
    int n_steps = (n_in + 31) / 32;
    int s = warp;
    for (; s + (B2_UNROLL - 1) * B2_WARPS < n_steps; s += B2_UNROLL * B2_WARPS) {
        uint4 wa[B2_UNROLL], wb[B2_UNROLL];
#pragma unroll
        for (int u = 0; u < B2_UNROLL; u++) {
            int k = (s + u * B2_WARPS) * 32 + 8 * t;
            wa[u] = load_w8<VEC>(W, ra, k, n_out, n_in);
            wb[u] = load_w8<VEC>(W, rb, k, n_out, n_in);
        }
#pragma unroll
        for (int u = 0; u < B2_UNROLL; u++) {
            int k = (s + u * B2_WARPS) * 32 + 8 * t;
            uint32_t a0[4] = {wa[u].x, wb[u].x, wa[u].y, wb[u].y};
            uint32_t a1[4] = {wa[u].z, wb[u].z, wa[u].w, wb[u].w};
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                uint32_t b[4];
                load_x8<VEC>(b, X, nt * 8 + g, k, m, n_in);
                kn_mma_bf16(d[nt], a0, b);
                kn_mma_bf16(d[nt], a1, b + 2);
            }
        }
    }
    for (; s < n_steps; s += B2_WARPS) {
        int k = s * 32 + 8 * t;
        uint4 wa = load_w8<VEC>(W, ra, k, n_out, n_in), wb = load_w8<VEC>(W, rb, k, n_out, n_in);
        uint32_t a0[4] = {wa.x, wb.x, wa.y, wb.y};
        uint32_t a1[4] = {wa.z, wb.z, wa.w, wb.w};
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            uint32_t b[4];
            load_x8<VEC>(b, X, nt * 8 + g, k, m, n_in);
            kn_mma_bf16(d[nt], a0, b);
            kn_mma_bf16(d[nt], a1, b + 2);
        }
    }
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int i = 0; i < 4; i++) part[warp][nt * 4 + i][lane] = d[nt][i];
    __syncthreads();
    if (warp == 0) {
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                float sum = 0.0f;
                for (int w = 0; w < B2_WARPS; w++) sum += part[w][nt * 4 + i][lane];
                int row = i < 2 ? ra : rb, p = nt * 8 + 2 * t + (i & 1);
                if (row < n_out && p < m) Y[(size_t)p * n_out + row] = sum;
            }
    }
}

static int batch_args_ok(int m, int n_out, int n_in) {
    return m >= 1 && m <= KN_MATVEC_MAX_M && n_out >= 1 && n_in >= 1;
}

static cudaError_t launch_b1(float *Y, const uint16_t *W, const float *X, int m, int n_out, int n_in, cudaStream_t s) {
    if (!batch_args_ok(m, n_out, n_in)) return cudaErrorInvalidValue;
    void (*k)(float *, const uint16_t *, const float *, int, int, int) =
        vec_ok(W, X, n_in) ? matvec_b1<true> : matvec_b1<false>;
    return KN_LAUNCH(k, kn_ceil_div(n_out, 8), 256, 0, s, Y, W, X, m, n_out, n_in);
}

static cudaError_t launch_b2(float *Y, const uint16_t *W, const float *X, int m, int n_out, int n_in, cudaStream_t s) {
    if (!batch_args_ok(m, n_out, n_in)) return cudaErrorInvalidValue;
    int vec = vec_ok(W, X, n_in);
    void (*k)(float *, const uint16_t *, const float *, int, int, int) =
        m <= 8 ? (vec ? matvec_b2<1, true> : matvec_b2<1, false>) : (vec ? matvec_b2<2, true> : matvec_b2<2, false>);
    return KN_LAUNCH(k, kn_ceil_div(n_out, 16), B2_WARPS * KN_WARP, 0, s, Y, W, X, m, n_out, n_in);
}

__global__ void f32_to_bf16_kernel(uint16_t *out, const float *in, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        out[i] = kn_to_bf16(in[i]);
}

cudaError_t kn_f32_to_bf16(uint16_t *out, const float *in, long n, cudaStream_t s) {
    if (n < 1) return cudaErrorInvalidValue;
    long blocks = (n + 255) / 256;
    if (blocks > 4096) blocks = 4096;
    return KN_LAUNCH(f32_to_bf16_kernel, (unsigned)blocks, 256, 0, s, out, in, n);
}

#ifdef KN_HAVE_CUBLAS
/* cuBLAS baseline: X is rounded to bf16 by a small kernel (cublasGemmEx
 * needs A and B of one type), then one GEMM with bf16 inputs, fp32 output
 * and CUBLAS_COMPUTE_32F. The conversion is part of the timed call. */
static cublasHandle_t cublas_handle;
static uint16_t *cublas_xb;
static size_t cublas_xb_elems;

static cudaError_t launch_cublas(float *Y, const uint16_t *W, const float *X, int m, int n_out, int n_in,
                                 cudaStream_t s) {
    if (!batch_args_ok(m, n_out, n_in)) return cudaErrorInvalidValue;
    if (!cublas_handle && cublasCreate(&cublas_handle) != CUBLAS_STATUS_SUCCESS) return cudaErrorNotSupported;
    size_t need = (size_t)m * n_in;
    if (need > cublas_xb_elems) {
        cudaFree(cublas_xb);
        cublas_xb = NULL;
        cudaError_t e = cudaMalloc((void **)&cublas_xb, need * sizeof(uint16_t));
        if (e != cudaSuccess) return e;
        cublas_xb_elems = need;
    }
    cudaError_t e = kn_f32_to_bf16(cublas_xb, X, (long)need, s);
    if (e != cudaSuccess) return e;
    if (cublasSetStream(cublas_handle, s) != CUBLAS_STATUS_SUCCESS) return cudaErrorNotSupported;
    const float alpha = 1.0f, beta = 0.0f;
    /* column-major view: Yᵀ[n_out, m] = op(W)[n_out, n_in] · Xᵀ[n_in, m] */
    cublasStatus_t st =
        cublasGemmEx(cublas_handle, CUBLAS_OP_T, CUBLAS_OP_N, n_out, m, n_in, &alpha, W, CUDA_R_16BF, n_in, cublas_xb,
                     CUDA_R_16BF, n_in, &beta, Y, CUDA_R_32F, n_out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    return st == CUBLAS_STATUS_SUCCESS ? cudaGetLastError() : cudaErrorUnknown;
}
#endif

static const kn_matvec_version versions[] = {
    {"v1", "thread per row, element loads", launch_v1, 1, 0},
    {"v2", "warp per row, coalesced element loads, shuffle reduction", launch_v2, 1, 0},
    {"v3", "warp per row, 16-byte weight loads, float4 x via read-only cache", launch_v3, 1, 0},
    {"v4", "v3 + 4 loads in flight, streaming hint, x in shared memory, persistent grid", launch_v4, 1, 0},
    {"v5", "block of 8 warps per row, n_in split across the warps (for matrices with few rows)", launch_v5, 1, 0},
    {"b1", "batch: warp per row, each 16-byte load used for all m positions (CUDA cores)", launch_b1, KN_MATVEC_MAX_M,
     0},
    {"b2-xbf16", "batch: mma.m16n8k16 tensor cores, 16 rows per block, 8 warps split K", launch_b2, KN_MATVEC_MAX_M, 1},
#ifdef KN_HAVE_CUBLAS
    {"cublas-xbf16", "baseline: X to bf16, then cublasGemmEx bf16 in, fp32 out, COMPUTE_32F", launch_cublas,
     KN_MATVEC_MAX_M, 1},
#endif
};

const kn_matvec_version *kn_matvec_versions(int *count) {
    *count = (int)(sizeof versions / sizeof versions[0]);
    return versions;
}

cudaError_t kn_matvec(float *Y, const uint16_t *W, const float *X, int m, int n_out, int n_in, cudaStream_t s) {
    return m == 1 ? launch_v4(Y, W, X, m, n_out, n_in, s) : launch_b2(Y, W, X, m, n_out, n_in, s);
}
