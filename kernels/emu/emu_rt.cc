/* emu_rt.cc — the runtime calls of emu_rt.h; a graph's nodes own copies of their parameters. One host thread, as
 * the engine's CUDA backend has, so thread-local and global capture modes act alike. What a capture forbids follows
 * the CUDA programming guide's rules on stream capture; the error codes are CUDA's. */
#include "emu.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define EMU_RT_ASAN 1
#else
#define EMU_RT_ASAN 0
#endif

enum { NODE_KERNEL, NODE_MEMCPY, NODE_MEMSET };

/* One node: a kernel launch (body over the grid, its own copy of the arguments in arg), or a copy, or a fill. */
struct emu_node {
    int kind;
    dim3 grid, block;
    size_t smem;
    void (*body)(void *);
    void *arg;
    void *(*clone)(const void *);
    void (*drop)(void *);
    void *dst;
    const void *src;
    size_t bytes;
    int value;
};

struct emu_graph {
    emu_node *nodes;
    size_t n, cap;
};

struct emu_graph_exec {
    emu_graph g; /* its own copies */
};

struct emu_stream {
    int capturing;   /* a capture is open */
    int invalidated; /* ... and something it could not take happened: EndCapture gives no graph */
    cudaStreamCaptureMode mode;
    emu_graph *graph;
    emu_stream *next_capturing;
};

static emu_stream *capturing_streams; /* every stream with an open capture */

/* ---- pinned host memory: the only host memory a captured copy may touch -------------------------------- */

typedef struct {
    const char *p;
    size_t bytes;
} pinned_range;
static pinned_range *pinned;
static size_t n_pinned, pinned_cap;

static int is_pinned(const void *p, size_t bytes) {
    const char *c = (const char *)p;
    for (size_t i = 0; i < n_pinned; i++)
        if (c >= pinned[i].p && c + bytes <= pinned[i].p + pinned[i].bytes) return 1;
    return 0;
}

/* ---- what a capture forbids ---------------------------------------------------------------------------- */

static void invalidate_all(void) {
    for (emu_stream *s = capturing_streams; s; s = s->next_capturing) s->invalidated = 1;
}

/* A call that waits for the device (or may: an allocation), made while captures are open: CUDA refuses it
 * and invalidates them. Relaxed captures allow what only may wait (allocations, `may_wait`). Returns the
 * error to give, or cudaSuccess. */
static cudaError_t capture_forbids(int may_wait_only) {
    int any = 0;
    for (emu_stream *s = capturing_streams; s; s = s->next_capturing)
        if (!may_wait_only || s->mode != cudaStreamCaptureModeRelaxed) any = 1;
    if (!any) return cudaSuccess;
    invalidate_all();
    return cudaErrorStreamCaptureUnsupported;
}

/* Work on stream s. The legacy stream (NULL) waits for every other stream: work there while a capture is open
 * would join the capture implicitly, which CUDA refuses. Returns 1 when s captures (the work is to be
 * recorded). */
static int work_on(cudaStream_t s, cudaError_t *err) {
    *err = cudaSuccess;
    if (!s) {
        if (capturing_streams) {
            invalidate_all();
            *err = cudaErrorStreamCaptureImplicit;
        }
        return 0;
    }
    if (s->capturing && s->invalidated) {
        *err = cudaErrorStreamCaptureInvalidated;
        return 1;
    }
    return s->capturing;
}

static emu_node *add_node(emu_graph *g) {
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 64;
        g->nodes = (emu_node *)realloc(g->nodes, g->cap * sizeof *g->nodes);
        if (!g->nodes) {
            fprintf(stderr, "emu: out of memory recording a graph\n");
            abort();
        }
    }
    emu_node *n = &g->nodes[g->n++];
    *n = emu_node{};
    return n;
}

static void clear_graph(emu_graph *g) {
    for (size_t i = 0; i < g->n; i++)
        if (g->nodes[i].kind == NODE_KERNEL) g->nodes[i].drop(g->nodes[i].arg);
    free(g->nodes);
    memset(g, 0, sizeof *g);
}

/* ---- memory ----------------------------------------------------------------------------------------- */

cudaError_t cudaMalloc(void **p, size_t bytes) {
    *p = NULL;
    cudaError_t e = capture_forbids(1);
    if (e != cudaSuccess) return e;
    *p = malloc(bytes ? bytes : 1);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFree(void *p) {
    cudaError_t e = capture_forbids(1);
    if (e != cudaSuccess) return e;
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMallocHost(void **p, size_t bytes) {
    *p = NULL;
    cudaError_t e = capture_forbids(1);
    if (e != cudaSuccess) return e;
    if (n_pinned == pinned_cap) {
        pinned_cap = pinned_cap ? 2 * pinned_cap : 16;
        pinned_range *grown = (pinned_range *)realloc(pinned, pinned_cap * sizeof *pinned);
        if (!grown) return cudaErrorMemoryAllocation;
        pinned = grown;
    }
    *p = malloc(bytes ? bytes : 1);
    if (!*p) return cudaErrorMemoryAllocation;
    pinned[n_pinned++] = pinned_range{(const char *)*p, bytes ? bytes : 1};
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p) {
    cudaError_t e = capture_forbids(1);
    if (e != cudaSuccess) return e;
    if (!p) return cudaSuccess;
    for (size_t i = 0; i < n_pinned; i++)
        if (pinned[i].p == p) {
            pinned[i] = pinned[--n_pinned];
            free(p);
            return cudaSuccess;
        }
    return cudaErrorInvalidValue;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
    (void)kind;
    cudaError_t e = capture_forbids(0);
    if (e != cudaSuccess) return e;
    memmove(dst, src, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemset(void *p, int value, size_t bytes) {
    cudaError_t e = capture_forbids(0);
    if (e != cudaSuccess) return e;
    memset(p, value, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
    cudaError_t e;
    if (!work_on(s, &e)) {
        if (e == cudaSuccess) memmove(dst, src, bytes);
        return e;
    }
    if (e != cudaSuccess) return e;
    /* a graph's copy reads and writes host memory when it runs: pageable memory cannot be captured */
    const int host_src = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyHostToHost;
    const int host_dst = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyHostToHost;
    if (kind == cudaMemcpyDefault || (host_src && !is_pinned(src, bytes)) || (host_dst && !is_pinned(dst, bytes))) {
        s->invalidated = 1;
        return cudaErrorStreamCaptureUnsupported;
    }
    emu_node *n = add_node(s->graph);
    n->kind = NODE_MEMCPY;
    n->dst = dst, n->src = src, n->bytes = bytes;
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s) {
    cudaError_t e;
    if (!work_on(s, &e)) {
        if (e == cudaSuccess) memset(p, value, bytes);
        return e;
    }
    if (e != cudaSuccess) return e;
    emu_node *n = add_node(s->graph);
    n->kind = NODE_MEMSET;
    n->dst = p, n->value = value, n->bytes = bytes;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
    cudaError_t e = capture_forbids(0);
    return e != cudaSuccess ? e : cudaSuccess;
}

/* ---- the device -------------------------------------------------------------------------------------- */

cudaError_t cudaGetDeviceCount(int *count) {
    *count = 1;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int dev) {
    if (dev != 0) return cudaErrorInvalidValue;
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "the CPU emulator of kernels/emu/emu.h");
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    prop->totalGlobalMem = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
    prop->sharedMemPerBlock = EMU_SMEM_DEFAULT;
    cudaDeviceGetAttribute(&prop->multiProcessorCount, cudaDevAttrMultiProcessorCount, 0);
    int optin = 0;
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
    prop->sharedMemPerBlockOptin = (size_t)optin;
    prop->sharedMemPerMultiprocessor = 228 * 1024; /* emu_occupancy's limits */
    prop->regsPerBlock = prop->regsPerMultiprocessor = 65536;
    prop->maxThreadsPerBlock = 1024;
    prop->maxThreadsPerMultiProcessor = 2048;
    prop->major = 9, prop->minor = 0;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *version) {
    *version = 0;
    return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int *version) {
    *version = 0;
    return cudaSuccess;
}

/* ---- streams and capture ------------------------------------------------------------------------------ */

cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
    (void)flags; /* every stream runs its work at once: blocking or not, the order is the issue order */
    *s = (emu_stream *)calloc(1, sizeof **s);
    return *s ? cudaSuccess : cudaErrorMemoryAllocation;
}

static void stop_capture(emu_stream *s) {
    for (emu_stream **p = &capturing_streams; *p; p = &(*p)->next_capturing)
        if (*p == s) {
            *p = s->next_capturing;
            break;
        }
    s->capturing = s->invalidated = 0;
    s->next_capturing = NULL;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
    if (!s) return cudaErrorInvalidResourceHandle;
    if (s->capturing) {
        clear_graph(s->graph);
        free(s->graph);
        stop_capture(s);
    }
    free(s);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    if (s && s->capturing) { /* waiting for work that is only being recorded */
        s->invalidated = 1;
        return cudaErrorStreamCaptureUnsupported;
    }
    return capture_forbids(s ? 1 : 0); /* the legacy stream waits for every stream, the capturing ones too */
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
    if (!s) return cudaErrorStreamCaptureUnsupported; /* the legacy stream cannot be captured */
    if (s->capturing) return cudaErrorIllegalState;
    if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
        mode != cudaStreamCaptureModeRelaxed)
        return cudaErrorInvalidValue;
    s->graph = (emu_graph *)calloc(1, sizeof *s->graph);
    if (!s->graph) return cudaErrorMemoryAllocation;
    s->capturing = 1;
    s->invalidated = 0;
    s->mode = mode;
    s->next_capturing = capturing_streams;
    capturing_streams = s;
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph) {
    *graph = NULL;
    if (!s || !s->capturing) return cudaErrorIllegalState;
    const int invalidated = s->invalidated;
    emu_graph *g = s->graph;
    s->graph = NULL;
    stop_capture(s);
    if (invalidated) {
        clear_graph(g);
        free(g);
        return cudaErrorStreamCaptureInvalidated;
    }
    *graph = g;
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus *status) {
    *status = !s || !s->capturing ? cudaStreamCaptureStatusNone
              : s->invalidated    ? cudaStreamCaptureStatusInvalidated
                                  : cudaStreamCaptureStatusActive;
    if (!s && capturing_streams) { /* asking about the legacy stream during a capture joins it */
        invalidate_all();
        return cudaErrorStreamCaptureImplicit;
    }
    return cudaSuccess;
}

/* ---- recording a launch ------------------------------------------------------------------------------- */

int emu_launch_recorded(cudaStream_t s, cudaError_t *err) { return work_on(s, err); }

/* The calling thread's stack, [lo, hi), read once. */
static void host_stack(uintptr_t *lo, uintptr_t *hi) {
    static __thread uintptr_t stack_lo, stack_hi;
    if (!stack_hi) {
        pthread_attr_t attr;
        void *addr = NULL;
        size_t size = 0;
        if (pthread_getattr_np(pthread_self(), &attr) == 0) {
            pthread_attr_getstack(&attr, &addr, &size);
            pthread_attr_destroy(&attr);
        }
        stack_lo = (uintptr_t)addr, stack_hi = (uintptr_t)addr + size;
    }
    *lo = stack_lo, *hi = stack_hi;
}

/* The word of arg that points into the live part of the host thread's stack (or AddressSanitizer's stand-in
 * frames for it), or 0. A kernel argument never legitimately does: the device cannot read the host's stack. Only
 * the frames above this one count (the stack grows down): a launcher's lambda that captured by reference holds
 * addresses in the launcher's frame, a caller of this one, while a closure's padding or a member left unset can
 * hold stale bytes, most often addresses in frames that have since returned, which are no sign of anything. */
static uintptr_t stack_pointer_in(const void *arg, size_t size) {
    uintptr_t lo, hi;
    host_stack(&lo, &hi);
    const uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    if (here > lo && here < hi) lo = here;
    for (size_t at = 0; at + sizeof(uintptr_t) <= size; at += sizeof(uintptr_t)) {
        uintptr_t w;
        memcpy(&w, (const char *)arg + at, sizeof w);
        if (w >= lo && w < hi) return w;
#if EMU_RT_ASAN
        void *fake = __asan_get_current_fake_stack();
        if (fake && __asan_addr_is_in_fake_stack(fake, (void *)w, NULL, NULL)) return w;
#endif
    }
    return 0;
}

cudaError_t emu_record_kernel(cudaStream_t s, dim3 grid, dim3 block, size_t smem, void (*body)(void *), void *arg,
                              size_t arg_size, void *(*clone)(const void *), void (*drop)(void *)) {
    cudaError_t e = emu_config_check(grid, block, smem);
    if (e == cudaSuccess) {
        const uintptr_t w = stack_pointer_in(arg, arg_size);
        if (w) {
            fprintf(stderr,
                    "emu: a kernel launched during stream capture has an argument pointing into the host stack "
                    "(%#lx): its replay would read a frame that is gone (a launcher lambda capturing by reference?)\n",
                    (unsigned long)w);
            s->invalidated = 1;
            e = cudaErrorInvalidValue;
        }
    }
    if (e != cudaSuccess) {
        drop(arg);
        return e;
    }
    emu_node *n = add_node(s->graph);
    n->kind = NODE_KERNEL;
    n->grid = grid, n->block = block, n->smem = smem;
    n->body = body, n->arg = arg, n->clone = clone, n->drop = drop;
    return cudaSuccess;
}

/* ---- graphs ---------------------------------------------------------------------------------------------- */

cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t *nodes, size_t *count) {
    if (!g || !count) return cudaErrorInvalidValue;
    if (!nodes) {
        *count = g->n;
        return cudaSuccess;
    }
    const size_t n = *count < g->n ? *count : g->n;
    for (size_t i = 0; i < n; i++) nodes[i] = &g->nodes[i];
    *count = n;
    return cudaSuccess;
}

/* dst's node i gets src's node i's parameters (a copy of its arguments). */
static void copy_params(emu_node *dst, const emu_node *src) {
    if (dst->kind == NODE_KERNEL && dst->arg) dst->drop(dst->arg);
    *dst = *src;
    if (src->kind == NODE_KERNEL) dst->arg = src->clone(src->arg);
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g, unsigned long long flags) {
    *exec = NULL;
    if (!g || flags) return cudaErrorInvalidValue; /* no instantiation flags emulated */
    emu_graph_exec *x = (emu_graph_exec *)calloc(1, sizeof *x);
    if (!x) return cudaErrorMemoryAllocation;
    for (size_t i = 0; i < g->n; i++) copy_params(add_node(&x->g), &g->nodes[i]);
    *exec = x;
    return cudaSuccess;
}

cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t g, cudaGraphExecUpdateResultInfo *info) {
    if (!exec || !g || !info) return cudaErrorInvalidValue;
    info->errorNode = info->errorFromNode = NULL;
    info->result = cudaGraphExecUpdateSuccess;
    if (exec->g.n != g->n) info->result = cudaGraphExecUpdateErrorTopologyChanged;
    for (size_t i = 0; i < g->n && info->result == cudaGraphExecUpdateSuccess; i++) {
        const emu_node *a = &exec->g.nodes[i], *b = &g->nodes[i];
        if (a->kind != b->kind)
            info->result = cudaGraphExecUpdateErrorNodeTypeChanged;
        else if (a->kind == NODE_KERNEL && a->body != b->body)
            info->result = cudaGraphExecUpdateErrorFunctionChanged;
        if (info->result != cudaGraphExecUpdateSuccess) {
            info->errorNode = &g->nodes[i];
            info->errorFromNode = &exec->g.nodes[i];
        }
    }
    if (info->result != cudaGraphExecUpdateSuccess) return cudaErrorGraphExecUpdateFailure;
    for (size_t i = 0; i < g->n; i++) copy_params(&exec->g.nodes[i], &g->nodes[i]);
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
    if (!exec) return cudaErrorInvalidValue;
    cudaError_t e;
    if (work_on(s, &e)) { /* a graph launched into a capture would be a child graph: not emulated */
        if (e == cudaSuccess) s->invalidated = 1;
        return e != cudaSuccess ? e : cudaErrorStreamCaptureUnsupported;
    }
    if (e != cudaSuccess) return e;
    for (size_t i = 0; i < exec->g.n; i++) {
        const emu_node *n = &exec->g.nodes[i];
        switch (n->kind) {
        case NODE_KERNEL: e = emu_run(n->grid, n->block, n->smem, n->body, n->arg); break;
        case NODE_MEMCPY: memmove(n->dst, n->src, n->bytes); break;
        default: memset(n->dst, n->value, n->bytes); break;
        }
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g) {
    if (!g) return cudaErrorInvalidValue;
    clear_graph(g);
    free(g);
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
    if (!exec) return cudaErrorInvalidValue;
    clear_graph(&exec->g);
    free(exec);
    return cudaSuccess;
}
