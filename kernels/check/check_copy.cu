/* check_copy.cu — the ceilings every bandwidth figure is compared with: a large device-to-device copy (bytes read
 * plus bytes written), and a read-only stream, the ceiling of a kernel that only reads, as a matrix-vector product
 * does. The emulator has no such figures. */
#include "gc.cuh"

#define COPY_BYTES ((size_t)1 << 30) /* 1 GiB each way: ~20× the L2 */
#define READ_THREADS 256
#define READ_UNROLL 4

/* XOR of every 32-bit word of src[n4] (uint4s), one partial per block: 16-byte loads, READ_UNROLL in flight per
 * thread, nothing written but one word per block. Exact and order-free, so the result validates the read, and the
 * compiler cannot drop the loads. */
__global__ __launch_bounds__(READ_THREADS) void read_xor(unsigned *partial, const uint4 *src, size_t n4) {
    __shared__ unsigned scratch[READ_THREADS / KN_WARP];
    unsigned acc = 0;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + (READ_UNROLL - 1) * stride < n4; i += READ_UNROLL * stride) {
        uint4 a[READ_UNROLL];
#pragma unroll
        for (int u = 0; u < READ_UNROLL; u++) a[u] = kn_ld_stream(src + i + u * stride);
#pragma unroll
        for (int u = 0; u < READ_UNROLL; u++) acc ^= a[u].x ^ a[u].y ^ a[u].z ^ a[u].w;
    }
    for (; i < n4; i += stride) {
        uint4 a = kn_ld_stream(src + i);
        acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    for (int o = 16; o > 0; o >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
    if (threadIdx.x % KN_WARP == 0) scratch[threadIdx.x / KN_WARP] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned t = 0;
        for (int w = 0; w < READ_THREADS / KN_WARP; w++) t ^= scratch[w];
        partial[blockIdx.x] = t;
    }
}

#ifndef KN_EMU
static void read_only_row(gc_ctx *c, const char *src) {
    int blocks = 0;
    GC_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, read_xor, READ_THREADS, 0));
    blocks *= kn_sm_count();
    unsigned *partial = (unsigned *)gc_dmalloc((size_t)blocks * sizeof(unsigned));
    size_t n4 = COPY_BYTES / 16;
    /* validation: the XOR of the first 1 MiB, on the device and here */
    const size_t check_bytes = (size_t)1 << 20;
    GC_CUDA(KN_LAUNCH(read_xor, blocks, READ_THREADS, 0, 0, partial, (const uint4 *)src, check_bytes / 16));
    gc_sync("read_xor");
    unsigned *part_h = (unsigned *)gc_hmalloc((size_t)blocks * sizeof(unsigned));
    unsigned *words = (unsigned *)gc_hmalloc(check_bytes);
    gc_d2h(part_h, partial, (size_t)blocks * sizeof(unsigned));
    gc_d2h(words, src, check_bytes);
    unsigned got = 0, want = 0;
    for (int b = 0; b < blocks; b++) got ^= part_h[b];
    for (size_t i = 0; i < check_bytes / 4; i++) want ^= words[i];
    double err = got == want ? 0.0 : INFINITY;
    double us = NAN;
    if (err == 0.0)
        us = gc_time_us(c, [&](int it) {
            (void)it; /* 1 GiB is ~20× the L2: no rotation needed */
            return KN_LAUNCH(read_xor, blocks, READ_THREADS, 0, 0, partial, (const uint4 *)src, n4);
        });
    c->res->read_gbs = (double)COPY_BYTES / (us * 1e-6) / 1e9;
    gc_record(c, "copy", "read-only", "1 GiB read, 16-byte loads", 1, err, 0.0, us, (double)COPY_BYTES, 0.0,
              err == 0.0 ? "" : "XOR of the first MiB differs");
    gc_dfree(partial);
    free(part_h), free(words);
}
#endif

void gc_family_copy(gc_ctx *c) {
#ifdef KN_EMU
    (void)c;
#else
    char *src = (char *)gc_dmalloc(COPY_BYTES), *dst = (char *)gc_dmalloc(COPY_BYTES);
    gc_fill_f32(c, (float *)src, COPY_BYTES / 4, -1.0f, 1.0f, 1);
    gc_sync("fill");
    double us = gc_time_us(c, [&](int it) {
        (void)it;
        return cudaMemcpyAsync(dst, src, COPY_BYTES, cudaMemcpyDeviceToDevice, 0);
    });
    double bytes = 2.0 * COPY_BYTES;
    c->res->copy_gbs = bytes / (us * 1e-6) / 1e9;
    /* the copy is its own validation: compare a few words */
    float a[4], b[4];
    gc_d2h(a, src + COPY_BYTES / 2, sizeof a);
    gc_d2h(b, dst + COPY_BYTES / 2, sizeof b);
    double err = (a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3]) ? 0.0 : INFINITY;
    gc_record(c, "copy", "memcpy", "1 GiB d2d", 1, err, 0.0, us, bytes, 0.0, "");
    read_only_row(c, src);
    gc_dfree(src), gc_dfree(dst);
#endif
}
