/* gc_util.cu — checked memory calls, fills, rows and the family registry of
 * the kernel harness (gc.cuh), for the GPU and for the emulator. */
#include <string.h>

#include "gc.cuh"

void gc_cuda_check(cudaError_t e, const char *what, const char *file, int line) {
    if (e == cudaSuccess) return;
    fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, what, cudaGetErrorString(e));
    fflush(stdout);
    exit(3);
}

#ifdef KN_EMU
void *gc_dmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1); /* exact size: AddressSanitizer sees every overrun */
    if (!p) {
        fprintf(stderr, "gc_dmalloc: out of memory for %zu bytes\n", bytes);
        exit(3);
    }
    return p;
}
void gc_dfree(void *p) { free(p); }
void gc_h2d(void *dst, const void *src, size_t bytes) { memcpy(dst, src, bytes); }
void gc_d2h(void *dst, const void *src, size_t bytes) { memcpy(dst, src, bytes); }
void gc_d2d(void *dst, const void *src, size_t bytes) { memcpy(dst, src, bytes); }
void gc_poison(void *p, size_t bytes) { memset(p, 0xff, bytes); }
void gc_sync(const char *after) {
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        fprintf(stderr, "emulated kernel failed after %s: %s\n", after, cudaGetErrorString(e));
        exit(3);
    }
}
#else
void *gc_dmalloc(size_t bytes) {
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        fprintf(stderr, "cudaMalloc(%zu bytes) failed: %s\n", bytes, cudaGetErrorString(e));
        exit(3);
    }
    return p;
}
void gc_dfree(void *p) { GC_CUDA(cudaFree(p)); }
void gc_h2d(void *dst, const void *src, size_t bytes) { GC_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice)); }
void gc_d2h(void *dst, const void *src, size_t bytes) { GC_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost)); }
void gc_d2d(void *dst, const void *src, size_t bytes) {
    GC_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
}
void gc_poison(void *p, size_t bytes) { GC_CUDA(cudaMemset(p, 0xff, bytes)); }
void gc_sync(const char *after) {
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e != cudaSuccess) {
        fprintf(stderr, "device fault after %s: %s\n", after, cudaGetErrorString(e));
        fflush(stdout);
        exit(3);
    }
}
#endif

void *gc_hmalloc(size_t bytes) {
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "gc_hmalloc: out of memory for %zu bytes\n", bytes);
        exit(3);
    }
    return p;
}

gc_rot gc_rot_make(const gc_ctx *c, const size_t *sizes, int n_bufs) {
    gc_rot r;
    memset(&r, 0, sizeof r);
    if (n_bufs < 1 || n_bufs > GC_ROT_MAX_BUFS) {
        fprintf(stderr, "gc_rot_make: %d buffers (1 to %d)\n", n_bufs, GC_ROT_MAX_BUFS);
        exit(3);
    }
    r.n_bufs = n_bufs;
    for (int b = 0; b < n_bufs; b++) {
        r.off[b] = r.set_bytes;
        r.set_bytes += (sizes[b] + 255) / 256 * 256;
    }
    if (r.set_bytes == 0) r.set_bytes = 256;
    if (c->emu || c->small) { /* one copy, each buffer exact-size (no timing wants more; the checkers see overruns) */
        r.n_sets = 1;
        for (int b = 0; b < n_bufs; b++) r.own[b] = (char *)gc_dmalloc(sizes[b]);
        return r;
    }
    r.n_sets = gc_rotation_sets(r.set_bytes, c->l2_bytes, GC_ROT_MAX_SETS);
    r.base = (char *)gc_dmalloc(r.set_bytes * (size_t)r.n_sets);
    return r;
}

void *gc_rot_buf(const gc_rot *r, int set, int buf) {
    if (r->own[buf]) return r->own[buf];
    return r->base + (size_t)set * r->set_bytes + r->off[buf];
}

void gc_rot_free(gc_rot *r) {
    for (int b = 0; b < r->n_bufs; b++)
        if (r->own[b]) gc_dfree(r->own[b]), r->own[b] = NULL;
    if (r->base) gc_dfree(r->base);
    r->base = NULL;
}

/* splitmix64: a good 64-bit mix, the same on host and device. */
static inline __host__ __device__ uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
static inline __host__ __device__ float hash_uniform(uint64_t seed, uint64_t stream, size_t i, float lo, float hi) {
    uint64_t h = mix64(seed ^ mix64(stream * 0x632be59bd9b4e019ull + (uint64_t)i));
    float u = (float)(h >> 40) * (1.0f / 16777216.0f); /* 24 bits: [0, 1) */
    return lo + (hi - lo) * u;
}

#ifndef KN_EMU
__global__ void fill_f32_kernel(float *d, size_t n, float lo, float hi, uint64_t seed, uint64_t stream) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        d[i] = hash_uniform(seed, stream, i, lo, hi);
}
__global__ void fill_bf16_kernel(uint16_t *d, size_t n, float lo, float hi, uint64_t seed, uint64_t stream) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        d[i] = kn_to_bf16(hash_uniform(seed, stream, i, lo, hi));
}
#endif

void gc_fill_f32(const gc_ctx *c, float *d, size_t n, float lo, float hi, uint64_t stream) {
#ifdef KN_EMU
    for (size_t i = 0; i < n; i++) d[i] = hash_uniform(c->seed, stream, i, lo, hi);
#else
    fill_f32_kernel<<<1024, 256>>>(d, n, lo, hi, c->seed, stream);
    GC_CUDA(cudaGetLastError());
#endif
}

void gc_fill_bf16(const gc_ctx *c, uint16_t *d, size_t n, float lo, float hi, uint64_t stream) {
#ifdef KN_EMU
    for (size_t i = 0; i < n; i++) d[i] = kn_to_bf16(hash_uniform(c->seed, stream, i, lo, hi));
#else
    fill_bf16_kernel<<<1024, 256>>>(d, n, lo, hi, c->seed, stream);
    GC_CUDA(cudaGetLastError());
#endif
}

double gc_compare_f32(const float *dev, const float *ref, size_t n, char *note, size_t note_size) {
    float *got = (float *)gc_hmalloc(n * sizeof(float));
    gc_d2h(got, dev, n * sizeof(float));
    size_t nan = gc_count_nan(got, n);
    double err = gc_rel_error(got, ref, n);
    if (nan) {
        snprintf(note, note_size, "%zu of %zu outputs never written (NaN)", nan, n);
        err = INFINITY;
    }
    free(got);
    return err;
}

int gc_status_for(double err, double bound) { return (isfinite(err) && err <= bound) ? GC_OK : GC_FAIL; }

gc_row *gc_record(gc_ctx *c, const char *op, const char *version, const char *shape, int m, double err, double bound,
                  double us, double bytes, double flops, const char *note) {
    gc_row *r = gc_results_add(c->res);
    snprintf(r->op, sizeof r->op, "%s", op);
    snprintf(r->version, sizeof r->version, "%s", version);
    snprintf(r->shape, sizeof r->shape, "%s", shape);
    r->m = m;
    r->err = err;
    r->bound = bound;
    r->status = note && !strncmp(note, "skip", 4) ? GC_SKIP : gc_status_for(err, bound);
    if (r->status == GC_FAIL && note && !note[0]) note = "error above bound";
    snprintf(r->note, sizeof r->note, "%s", note ? note : "");
    r->us = us;
    r->bytes = bytes;
    r->flops = flops;
    if (r->status == GC_FAIL) c->n_fail++;
    if (c->tsv) {
        double cg = c->res->copy_gbs, rg = c->res->read_gbs;
        if (!isnan(cg) && !(cg == c->tsv_copy_gbs)) gc_results_write_ceilings(c->tsv, cg, NAN), c->tsv_copy_gbs = cg;
        if (!isnan(rg) && !(rg == c->tsv_read_gbs)) gc_results_write_ceilings(c->tsv, NAN, rg), c->tsv_read_gbs = rg;
        gc_results_write_row(c->tsv, r);
        fflush(c->tsv);
    }
    if (!c->emu) { /* the unit tests stay quiet; they report failed rows themselves */
        char line[512];
        gc_format_row(line, sizeof line, r, c->res->copy_gbs);
        printf("%s\n", line);
        fflush(stdout);
    }
    return r;
}

static const gc_family families[] = {
    {"copy", gc_family_copy, "device-to-device copy bandwidth (the ceiling)"},
    {"matvec", gc_family_matvec, "bf16 matrix-vector / verify-batch products, cuBLAS baseline"},
    {"norm", gc_family_norm, "RMSNorm, gated RMSNorm, SwiGLU"},
    {"rope_kv", gc_family_rope_kv, "q/k norm + partial RoPE + paged KV write"},
    {"attention", gc_family_attention, "paged decode / tree attention, split-K"},
    {"kv_quant", gc_family_kv_quant, "q8 / q4 KV cache: rows byte for byte kv_row_store's, attention over them"},
    {"deltanet", gc_family_deltanet, "causal conv step and gated delta rule over chains and trees"},
    {"sample", gc_family_sample, "processed distribution, exponential race, chain and tree acceptance"},
    {"graph", gc_family_graph, "stream capture and CUDA graphs as the engine uses them, with their controls"},
};

const gc_family *gc_families(int *count) {
    *count = (int)(sizeof families / sizeof families[0]);
    return families;
}

#ifdef KN_EMU /* the unit tests' entry: the emulator build alone */
extern "C" int gc_emu_run(const char *family, uint64_t seed, int sm_count, int *n_rows, char *msg, size_t msg_size) {
    emu_set_order_seed(seed);
    if (sm_count > 0) emu_set_sm_count(sm_count);
    const int sms = emu_set_sm_count(0); /* 0 leaves the count as it is */
    int n = 0;
    const gc_family *f = gc_families(&n);
    gc_results res;
    gc_results_init(&res);
    gc_ctx c;
    memset(&c, 0, sizeof c);
    c.emu = 1;
    c.small = 1;
    c.validate_only = 1;
    c.seed = seed;
    c.l2_bytes = 1 << 20;
    c.res = &res;
    int found = 0;
    for (int i = 0; i < n; i++)
        if (!strcmp(f[i].name, family)) {
            f[i].run(&c);
            found = 1;
        }
    size_t used = (size_t)snprintf(msg, msg_size, "seed %llu (inputs and thread order), %d SMs:\n",
                                   (unsigned long long)seed, sms);
    if (used >= msg_size) used = msg_size - 1;
    for (int i = 0; i < res.n && found; i++)
        if (res.rows[i].status == GC_FAIL && used + 1 < msg_size) {
            char line[512];
            gc_format_row(line, sizeof line, &res.rows[i], NAN);
            used += (size_t)snprintf(msg + used, msg_size - used, "%s\n", line);
            if (used >= msg_size) used = msg_size - 1;
        }
    *n_rows = res.n;
    int fails = found ? c.n_fail : -1;
    gc_results_free(&res);
    return fails;
}
#endif
