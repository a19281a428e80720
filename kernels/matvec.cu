/* matvec.cu — bf16-weight linear layers for decode (m = 1) and a verify batch (m ≤ 16), fp32 activations and
 * accumulation (kn_matvec.h). Decode is bandwidth-bound, so a version is judged by the share of the copy bandwidth
 * it reaches while reading W once. Numbered versions, llm.c style; each says what changed. */
#include <string.h>

#include "kn_common.cuh"
#include "kn_matvec.h"

/* Every kernel writes output (position p, row) through kn_mv_store: into the part of a group the row falls in
 * (kn_matvec_out), at the same place Y[p · n_out + row] would be for one part. Where a value goes is all it
 * changes: the sums are the same whatever the parts. */
__device__ __forceinline__ void kn_mv_store(const kn_matvec_out &o, int p, int row, float v) {
    float *y = o.Y[0];
    int start = 0, n = o.end[0];
#pragma unroll
    for (int i = 1; i < KN_MATVEC_MAX_PARTS; i++) /* constant indices only: the parts stay in the parameter bank */
        if (i < o.n_parts && row >= o.end[i - 1]) y = o.Y[i], start = o.end[i - 1], n = o.end[i] - o.end[i - 1];
    y[(size_t)p * n + (row - start)] = v;
}

static kn_matvec_out whole(float *Y, int n_out) {
    kn_matvec_out o;
    memset(&o, 0, sizeof o);
    o.n_parts = 1, o.end[0] = n_out, o.Y[0] = Y;
    return o;
}

/* ---- decode, m = 1 -------------------------------------------------------- */

/* v1: one thread per output row, element loads (uncoalesced: neighbouring
 * threads read rows n_in apart). The correctness baseline. */
__global__ void matvec_v1(kn_matvec_out y, const uint16_t *W, const float *x, int n_out, int n_in) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n_out) return;
    const uint16_t *w = W + (size_t)row * n_in;
    float acc = 0.0f;
    for (int j = 0; j < n_in; j++) acc += kn_bf16(w[j]) * x[j];
    kn_mv_store(y, 0, row, acc);
}

/* v2: one warp per row: lanes read consecutive elements (coalesced 64-byte
 * warp loads) and a shuffle tree adds the 32 partial sums. */
__global__ void matvec_v2(kn_matvec_out y, const uint16_t *W, const float *x, int n_out, int n_in) {
    int lane = threadIdx.x % KN_WARP;
    int row = blockIdx.x * (blockDim.x / KN_WARP) + threadIdx.x / KN_WARP;
    if (row >= n_out) return;
    const uint16_t *w = W + (size_t)row * n_in;
    float acc = 0.0f;
    for (int j = lane; j < n_in; j += KN_WARP) acc += kn_bf16(w[j]) * x[j];
    acc = kn_warp_sum(acc);
    if (lane == 0) kn_mv_store(y, 0, row, acc);
}

/* v3: warp per row with 16-byte loads (8 weights per lane, 512 bytes per
 * warp load) and x read as float4 through the read-only cache. */
template <bool VEC> __global__ void matvec_v3(kn_matvec_out y, const uint16_t *W, const float *x, int n_out, int n_in) {
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
    if (lane == 0) kn_mv_store(y, 0, row, acc);
}

/* v4: v3 with eight 16-byte loads in flight per lane (4 KB per warp), the
 * streaming cache hint on W, x staged once per block in shared memory with
 * 16-byte loads, and a persistent grid sized by the occupancy calculator
 * (the blocks that fit on an SM times the SMs, both cached per device) so
 * the staging is paid once per block rather than once per row. A lane adds
 * its products in v3's order (j ascending, one kn_dot8 each), so a row is
 * bit for bit v3's, b1's and b3's (numerics class KN_MV_WARP_LANES). */
#define V4_UNROLL 8
template <bool VEC>
__global__ __launch_bounds__(256) void matvec_v4(kn_matvec_out y, const uint16_t *W, const float *x, int n_out,
                                                 int n_in) {
    KN_DYN_SMEM(float, xs); /* [n_in] */
    if (VEC) {
        const float4 *x4 = (const float4 *)x;
        float4 *xs4 = (float4 *)xs;
        for (int i = threadIdx.x; i < n_in / 4; i += blockDim.x) xs4[i] = kn_ldg(x4 + i);
    } else {
        for (int i = threadIdx.x; i < n_in; i += blockDim.x) xs[i] = x[i];
    }
    __syncthreads();
    int lane = threadIdx.x % KN_WARP, warps = blockDim.x / KN_WARP;
    for (int row = blockIdx.x * warps + threadIdx.x / KN_WARP; row < n_out; row += gridDim.x * warps) {
        const uint16_t *w = W + (size_t)row * n_in;
        float acc = 0.0f;
        if (VEC) {
            const uint4 *w4 = (const uint4 *)w;
            const float4 *x4 = (const float4 *)xs;
            const uint4 zero = {0u, 0u, 0u, 0u};
            int n8 = n_in / 8;
            for (int j = lane; j < n8; j += V4_UNROLL * KN_WARP) {
                uint4 a[V4_UNROLL];
#pragma unroll
                for (int u = 0; u < V4_UNROLL; u++) {
                    int k = j + u * KN_WARP;
                    a[u] = k < n8 ? kn_ld_stream(w4 + k) : zero;
                }
#pragma unroll
                for (int u = 0; u < V4_UNROLL; u++) {
                    int k = j + u * KN_WARP;
                    if (k < n8) acc += kn_dot8(a[u], x4[2 * k], x4[2 * k + 1]);
                }
            }
        } else {
            for (int j = lane; j < n_in; j += KN_WARP) acc += kn_bf16(w[j]) * xs[j];
        }
        acc = kn_warp_sum(acc);
        if (lane == 0) kn_mv_store(y, 0, row, acc);
    }
}

/* v5: one row per block of 8 warps that split n_in: for matrices with few
 * rows (k/v projections, 1024 rows; in_proj_a/b, 48) where a warp per row
 * leaves most of the SMs without work. Written once for M positions (b5 is
 * the same kernel with M = 16): each thread adds its kn_dot8 terms (j =
 * thread, thread + 256, …) per position, the 256 partials of a position go
 * through shared memory, and warp p % 8 sums them in a fixed order (8 per
 * lane in sequence, then the shuffle tree) — so a row of a batch is bit for
 * bit the m = 1 product (numerics class KN_MV_BLOCK_LANES). */
#define V5_THREADS 256
template <int M, bool VEC>
__global__ __launch_bounds__(V5_THREADS) void matvec_rows_block(kn_matvec_out Y, const uint16_t *W, const float *X,
                                                                int m, int n_out, int n_in) {
    __shared__ float part[M][V5_THREADS];
    int row = blockIdx.x, tid = threadIdx.x;
    const uint16_t *w = W + (size_t)row * n_in;
    float acc[M];
#pragma unroll
    for (int p = 0; p < M; p++) acc[p] = 0.0f;
    if (VEC) {
        const uint4 *w4 = (const uint4 *)w;
        for (int j = tid; j < n_in / 8; j += V5_THREADS) {
            uint4 a = kn_ld_stream(w4 + j);
#pragma unroll
            for (int p = 0; p < M; p++)
                if (p < m) {
                    const float4 *x4 = (const float4 *)(X + (size_t)p * n_in);
                    acc[p] += kn_dot8(a, kn_ldg(x4 + 2 * j), kn_ldg(x4 + 2 * j + 1));
                }
        }
    } else {
        for (int j = tid; j < n_in; j += V5_THREADS) {
            float wj = kn_bf16(w[j]);
#pragma unroll
            for (int p = 0; p < M; p++)
                if (p < m) acc[p] += wj * X[(size_t)p * n_in + j];
        }
    }
#pragma unroll
    for (int p = 0; p < M; p++)
        if (p < m) part[p][tid] = acc[p];
    __syncthreads();
    int lane = tid % KN_WARP, warp = tid / KN_WARP;
    for (int p = warp; p < m; p += V5_THREADS / KN_WARP) {
        float t = part[p][lane];
        for (int i = 1; i < V5_THREADS / KN_WARP; i++) t += part[p][lane + i * KN_WARP];
        t = kn_warp_sum(t);
        if (lane == 0) kn_mv_store(Y, p, row, t);
    }
}

static int vec_ok(const uint16_t *W, const float *x, int n_in) {
    return n_in % 8 == 0 && ((uintptr_t)W % 16) == 0 && ((uintptr_t)x % 16) == 0;
}

static cudaError_t launch_v1(kn_matvec_out Y, const uint16_t *W, const float *X, int m, int n_out, int n_in,
                             cudaStream_t s) {
    if (m != 1 || n_out < 1 || n_in < 1) return cudaErrorInvalidValue;
    return KN_LAUNCH(matvec_v1, kn_ceil_div(n_out, 128), 128, 0, s, Y, W, X, n_out, n_in);
}

static cudaError_t launch_v2(kn_matvec_out Y, const uint16_t *W, const float *X, int m, int n_out, int n_in,
                             cudaStream_t s) {
    if (m != 1 || n_out < 1 || n_in < 1) return cudaErrorInvalidValue;
    return KN_LAUNCH(matvec_v2, kn_ceil_div(n_out, 8), 256, 0, s, Y, W, X, n_out, n_in);
}

static cudaError_t launch_v3(kn_matvec_out Y, const uint16_t *W, const float *X, int m, int n_out, int n_in,
                             cudaStream_t s) {
    if (m != 1 || n_out < 1 || n_in < 1) return cudaErrorInvalidValue;
    void (*k)(kn_matvec_out, const uint16_t *, const float *, int, int) =
        vec_ok(W, X, n_in) ? matvec_v3<true> : matvec_v3<false>;
    return KN_LAUNCH(k, kn_ceil_div(n_out, 8), 256, 0, s, Y, W, X, n_out, n_in);
}

typedef void (*matvec1_kernel)(kn_matvec_out, const uint16_t *, const float *, int, int);

/* v4's blocks per SM for (device, VEC, dynamic shared bytes): the occupancy
 * calculator's answer, asked once and cached. The first call for a kernel on
 * a device also raises its dynamic shared-memory limit to the device's
 * opt-in maximum, once. Callers on several host threads may each fill an
 * entry (the same answer); an entry is read only after it is complete. */
#define V4_CACHE 64
static int v4_blocks_per_sm(int vec, size_t smem) {
    static struct {
        int dev, vec, blocks, ready;
        size_t smem;
    } cache[V4_CACHE];
    static int n_claimed;
    static int raised[KN_MAX_DEVICES][2];
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= KN_MAX_DEVICES) return -1;
    int n = __atomic_load_n(&n_claimed, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n && i < V4_CACHE; i++)
        if (__atomic_load_n(&cache[i].ready, __ATOMIC_ACQUIRE) && cache[i].dev == dev && cache[i].vec == vec &&
            cache[i].smem == smem)
            return cache[i].blocks;
    matvec1_kernel k = vec ? matvec_v4<true> : matvec_v4<false>;
    if (!__atomic_load_n(&raised[dev][vec], __ATOMIC_ACQUIRE)) {
        if (cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kn_device()->smem_optin) !=
            cudaSuccess)
            return -1;
        __atomic_store_n(&raised[dev][vec], 1, __ATOMIC_RELEASE);
    }
    int blocks = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k, 256, smem) != cudaSuccess) return -1;
    int i = __atomic_fetch_add(&n_claimed, 1, __ATOMIC_ACQ_REL);
    if (i < V4_CACHE) {
        cache[i].dev = dev, cache[i].vec = vec, cache[i].smem = smem, cache[i].blocks = blocks;
        __atomic_store_n(&cache[i].ready, 1, __ATOMIC_RELEASE);
    }
    return blocks;
}

static cudaError_t launch_v4(kn_matvec_out Y, const uint16_t *W, const float *X, int m, int n_out, int n_in,
                             cudaStream_t s) {
    if (m != 1 || n_out < 1 || n_in < 1) return cudaErrorInvalidValue;
    const kn_device_info *d = kn_device();
    size_t smem = (size_t)n_in * sizeof(float);
    if (smem > (size_t)d->smem_optin) return launch_v3(Y, W, X, m, n_out, n_in, s); /* x does not fit: no staging */
    int vec = vec_ok(W, X, n_in);
    int per_sm = v4_blocks_per_sm(vec, smem);
    if (per_sm < 1) return launch_v3(Y, W, X, m, n_out, n_in, s); /* no block fits (registers): v3, same bits */
    matvec1_kernel k = vec ? matvec_v4<true> : matvec_v4<false>;
    int blocks = kn_ceil_div(n_out, 8);
    if (blocks > per_sm * d->sm_count) blocks = per_sm * d->sm_count;
    return KN_LAUNCH(k, blocks, 256, smem, s, Y, W, X, n_out, n_in);
}

static cudaError_t launch_v5(kn_matvec_out Y, const uint16_t *W, const float *X, int m, int n_out, int n_in,
                             cudaStream_t s) {
    if (m != 1 || n_out < 1 || n_in < 1) return cudaErrorInvalidValue;
    void (*k)(kn_matvec_out, const uint16_t *, const float *, int, int, int) =
        vec_ok(W, X, n_in) ? matvec_rows_block<1, true> : matvec_rows_block<1, false>;
    return KN_LAUNCH(k, n_out, V5_THREADS, 0, s, Y, W, X, 1, n_out, n_in);
}

/* ---- verify batch, m ≤ 16 ------------------------------------------------- */

/* b1: the v3 design with m accumulators per lane: each 16-byte weight load
 * is used for all m positions (fp32 FMAs on the CUDA cores, X fp32 through
 * the read-only cache). Simple, but X traffic grows with m. A row is v3's
 * bits (class KN_MV_WARP_LANES). */
template <bool VEC>
__global__ void matvec_b1(kn_matvec_out Y, const uint16_t *W, const float *X, int m, int n_out, int n_in) {
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
            if (lane == 0) kn_mv_store(Y, p, row, s);
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
__global__ __launch_bounds__(256) void matvec_b2(kn_matvec_out Y, const uint16_t *W, const float *X, int m, int n_out,
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
                if (row < n_out && p < m) kn_mv_store(Y, p, row, sum);
            }
    }
}

static int batch_args_ok(int m, int n_out, int n_in) {
    return m >= 1 && m <= KN_MATVEC_MAX_M && n_out >= 1 && n_in >= 1;
}

static cudaError_t launch_b1(kn_matvec_out Y, const uint16_t *W, const float *X, int m, int n_out, int n_in,
                             cudaStream_t s) {
    if (!batch_args_ok(m, n_out, n_in)) return cudaErrorInvalidValue;
    void (*k)(kn_matvec_out, const uint16_t *, const float *, int, int, int) =
        vec_ok(W, X, n_in) ? matvec_b1<true> : matvec_b1<false>;
    return KN_LAUNCH(k, kn_ceil_div(n_out, 8), 256, 0, s, Y, W, X, m, n_out, n_in);
}

static cudaError_t launch_b2(kn_matvec_out Y, const uint16_t *W, const float *X, int m, int n_out, int n_in,
                             cudaStream_t s) {
    if (!batch_args_ok(m, n_out, n_in)) return cudaErrorInvalidValue;
    int vec = vec_ok(W, X, n_in);
    void (*k)(kn_matvec_out, const uint16_t *, const float *, int, int, int) =
        m <= 8 ? (vec ? matvec_b2<1, true> : matvec_b2<1, false>) : (vec ? matvec_b2<2, true> : matvec_b2<2, false>);
    return KN_LAUNCH(k, kn_ceil_div(n_out, 16), B2_WARPS * KN_WARP, 0, s, Y, W, X, m, n_out, n_in);
}

/* b3: the fp32-activation batch with v4's numerics: R rows per warp (a
 * load of X is used for R rows, so X's traffic through L1 is m/R times W's
 * rather than m times), each lane walking j = lane, lane + 32, … and adding
 * one kn_dot8 per step per (row, position) in that order, then the same
 * shuffle tree: row r of position p is bit for bit v4's product of X[p]
 * (class KN_MV_WARP_LANES). Two steps of R 16-byte loads in flight; M is
 * the accumulator count (m ≤ M), R rows per warp chosen so the grid still
 * covers the SMs. */
template <int M, int R, bool VEC>
__global__ __launch_bounds__(256) void matvec_b3(kn_matvec_out Y, const uint16_t *W, const float *X, int m, int n_out,
                                                 int n_in) {
    int lane = threadIdx.x % KN_WARP;
    int row0 = (blockIdx.x * (blockDim.x / KN_WARP) + threadIdx.x / KN_WARP) * R;
    if (row0 >= n_out) return;
    const uint16_t *w[R];
#pragma unroll
    for (int r = 0; r < R; r++)
        w[r] = W + (size_t)(row0 + r < n_out ? row0 + r : row0) * n_in; /* past the end: a copy of row0, never stored */
    float acc[R][M];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int p = 0; p < M; p++) acc[r][p] = 0.0f;
    if (VEC) {
        int n8 = n_in / 8;
        const uint4 zero = {0u, 0u, 0u, 0u};
        for (int j = lane; j < n8; j += 2 * KN_WARP) {
            int j2 = j + KN_WARP;
            uint4 a[R], b[R];
#pragma unroll
            for (int r = 0; r < R; r++) {
                a[r] = kn_ld_stream((const uint4 *)w[r] + j);
                b[r] = j2 < n8 ? kn_ld_stream((const uint4 *)w[r] + j2) : zero;
            }
#pragma unroll
            for (int p = 0; p < M; p++)
                if (p < m) {
                    const float4 *x4 = (const float4 *)(X + (size_t)p * n_in);
                    float4 x0 = kn_ldg(x4 + 2 * j), x1 = kn_ldg(x4 + 2 * j + 1);
#pragma unroll
                    for (int r = 0; r < R; r++) acc[r][p] += kn_dot8(a[r], x0, x1);
                    if (j2 < n8) {
                        float4 y0 = kn_ldg(x4 + 2 * j2), y1 = kn_ldg(x4 + 2 * j2 + 1);
#pragma unroll
                        for (int r = 0; r < R; r++) acc[r][p] += kn_dot8(b[r], y0, y1);
                    }
                }
        }
    } else {
        for (int j = lane; j < n_in; j += KN_WARP) {
            float wj[R];
#pragma unroll
            for (int r = 0; r < R; r++) wj[r] = kn_bf16(w[r][j]);
#pragma unroll
            for (int p = 0; p < M; p++)
                if (p < m) {
                    float xv = X[(size_t)p * n_in + j];
#pragma unroll
                    for (int r = 0; r < R; r++) acc[r][p] += wj[r] * xv;
                }
        }
    }
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int p = 0; p < M; p++)
            if (p < m && row0 + r < n_out) { /* warp-uniform: every lane takes part in the shuffles */
                float sum = kn_warp_sum(acc[r][p]);
                if (lane == 0) kn_mv_store(Y, p, row0 + r, sum);
            }
}

typedef void (*matvec_kernel)(kn_matvec_out, const uint16_t *, const float *, int, int, int);

template <int M> static matvec_kernel b3_kernel(int rows, int vec) {
    if (rows >= 4) return vec ? matvec_b3<M, 4, true> : matvec_b3<M, 4, false>;
    if (rows == 2) return vec ? matvec_b3<M, 2, true> : matvec_b3<M, 2, false>;
    return vec ? matvec_b3<M, 1, true> : matvec_b3<M, 1, false>;
}

static cudaError_t launch_b3(kn_matvec_out Y, const uint16_t *W, const float *X, int m, int n_out, int n_in,
                             cudaStream_t s) {
    if (!batch_args_ok(m, n_out, n_in)) return cudaErrorInvalidValue;
    int vec = vec_ok(W, X, n_in), sms = kn_sm_count();
    int rows = 4; /* rows per warp: fewer when the grid would leave SMs idle */
    while (rows > 1 && kn_ceil_div(n_out, 8 * rows) < 2 * sms) rows /= 2;
    matvec_kernel k = m <= 4 ? b3_kernel<4>(rows, vec) : b3_kernel<KN_MATVEC_MAX_M>(rows, vec);
    return KN_LAUNCH(k, kn_ceil_div(n_out, 8 * rows), 256, 0, s, Y, W, X, m, n_out, n_in);
}

static cudaError_t launch_b5(kn_matvec_out Y, const uint16_t *W, const float *X, int m, int n_out, int n_in,
                             cudaStream_t s) {
    if (!batch_args_ok(m, n_out, n_in)) return cudaErrorInvalidValue;
    /* b5: v5 with M = 16 accumulators (class KN_MV_BLOCK_LANES) */
    matvec_kernel k =
        vec_ok(W, X, n_in) ? matvec_rows_block<KN_MATVEC_MAX_M, true> : matvec_rows_block<KN_MATVEC_MAX_M, false>;
    return KN_LAUNCH(k, n_out, V5_THREADS, 0, s, Y, W, X, m, n_out, n_in);
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

/* The versions' kn_matvec_fn: a plain product is a group of one part. */
#define KN_MV_WHOLE(name)                                                                                              \
    static cudaError_t name##_whole(float *Y, const uint16_t *W, const float *X, int m, int n_out, int n_in,           \
                                    cudaStream_t s) {                                                                  \
        return name(whole(Y, n_out), W, X, m, n_out, n_in, s);                                                         \
    }
KN_MV_WHOLE(launch_v1)
KN_MV_WHOLE(launch_v2)
KN_MV_WHOLE(launch_v3)
KN_MV_WHOLE(launch_v4)
KN_MV_WHOLE(launch_v5)
KN_MV_WHOLE(launch_b1)
KN_MV_WHOLE(launch_b2)
KN_MV_WHOLE(launch_b3)
KN_MV_WHOLE(launch_b5)

static const kn_matvec_version versions[] = {
    {"v1", "thread per row, element loads", launch_v1_whole, 1, 0, KN_MV_ALONE, launch_v1},
    {"v2", "warp per row, coalesced element loads, shuffle reduction", launch_v2_whole, 1, 0, KN_MV_ALONE, launch_v2},
    {"v3", "warp per row, 16-byte weight loads, float4 x via read-only cache", launch_v3_whole, 1, 0, KN_MV_WARP_LANES,
     launch_v3},
    {"v4", "v3 + 8 loads in flight, streaming hint, x staged in shared memory (16-byte), occupancy-sized grid",
     launch_v4_whole, 1, 0, KN_MV_WARP_LANES, launch_v4},
    {"v5", "block of 8 warps per row, n_in split across the warps (for matrices with few rows)", launch_v5_whole, 1, 0,
     KN_MV_BLOCK_LANES, launch_v5},
    {"b1", "batch: warp per row, each 16-byte load used for all m positions (CUDA cores)", launch_b1_whole,
     KN_MATVEC_MAX_M, 0, KN_MV_WARP_LANES, launch_b1},
    {"b2-xbf16", "batch: mma.m16n8k16 tensor cores, 16 rows per block, 8 warps split K", launch_b2_whole,
     KN_MATVEC_MAX_M, 1, KN_MV_MMA_XBF16, launch_b2},
    {"b3", "batch: b1 with up to 4 rows per warp (X loads shared by the rows), 2 steps of loads in flight",
     launch_b3_whole, KN_MATVEC_MAX_M, 0, KN_MV_WARP_LANES, launch_b3},
    {"b5", "batch: v5's block per row with m accumulators (few-row matrices)", launch_b5_whole, KN_MATVEC_MAX_M, 0,
     KN_MV_BLOCK_LANES, launch_b5},
};

#define N_VERSIONS (int)(sizeof versions / sizeof versions[0])

const kn_matvec_version *kn_matvec_versions(int *count) {
    *count = N_VERSIONS;
    return versions;
}

static const kn_matvec_version *version_named(const char *name) {
    for (int i = 0; name && i < N_VERSIONS; i++)
        if (!strcmp(versions[i].name, name)) return &versions[i];
    return NULL;
}

/* ---- dispatch ------------------------------------------------------------------ */

/* The table kn_matvec_select fills: per shape, the decode and the batch
 * version (one numerics class). Written by the host before the engine
 * launches (at start-up), read by every kn_matvec. */
static struct {
    int n_out, n_in;
    const kn_matvec_version *decode, *batch;
} table[KN_MATVEC_TABLE];
static int table_n;

int kn_matvec_select(int n_out, int n_in, const char *decode_version, const char *batch_version) {
    const kn_matvec_version *d = version_named(decode_version), *b = version_named(batch_version);
    if (!d || !b || n_out < 1 || n_in < 1 || b->max_m < KN_MATVEC_MAX_M) return -1;
    if (d->numerics == KN_MV_ALONE || d->numerics != b->numerics) return -1; /* decode and verify must agree */
    int i = 0;
    while (i < table_n && (table[i].n_out != n_out || table[i].n_in != n_in)) i++;
    if (i == table_n) {
        if (table_n == KN_MATVEC_TABLE) return -1;
        table_n++;
    }
    table[i].n_out = n_out, table[i].n_in = n_in, table[i].decode = d, table[i].batch = b;
    return 0;
}

void kn_matvec_select_reset(void) { table_n = 0; }

const kn_matvec_version *kn_matvec_dispatch(int m, int n_out, int n_in) {
    for (int i = 0; i < table_n; i++)
        if (table[i].n_out == n_out && table[i].n_in == n_in) return m == 1 ? table[i].decode : table[i].batch;
    /* the default: fp32 activations; a block per row when the rows are too
     * few to give every SM a warp-per-row block */
    if (n_out < 4 * kn_sm_count()) return version_named(m == 1 ? "v5" : "b5");
    return version_named(m == 1 ? "v4" : "b3");
}

/* Runs the pair (decode, batch) of one numerics class that the table names for the shape, so a verify pass rounds
 * exactly as decoding does. */
cudaError_t kn_matvec(float *Y, const uint16_t *W, const float *X, int m, int n_out, int n_in, cudaStream_t s) {
    if (!batch_args_ok(m, n_out, n_in)) return cudaErrorInvalidValue;
    return kn_matvec_dispatch(m, n_out, n_in)->fn(Y, W, X, m, n_out, n_in, s);
}

cudaError_t kn_matvec_group(const kn_matvec_out *out, const uint16_t *W, const float *X, int m, int n_in,
                            cudaStream_t s) {
    if (!out || out->n_parts < 1 || out->n_parts > KN_MATVEC_MAX_PARTS) return cudaErrorInvalidValue;
    for (int j = 0; j < out->n_parts; j++)
        if (!out->Y[j] || out->end[j] <= (j ? out->end[j - 1] : 0)) return cudaErrorInvalidValue;
    const int n_out = out->end[out->n_parts - 1];
    if (!batch_args_ok(m, n_out, n_in)) return cudaErrorInvalidValue;
    const kn_matvec_version *v = kn_matvec_dispatch(m, n_out, n_in);
    if (!v->group) return cudaErrorNotSupported; /* every version has its group form today */
    return v->group(*out, W, X, m, n_out, n_in, s);
}
