/* check_graph.cu — stream capture and CUDA graphs, the calls the engine's CUDA backend makes, checked as rows: on a
 * GPU against the driver and on the emulator (kernels/emu/emu_rt.h) against the same expectations, so that the
 * emulator's rules are the device's. */
#include <string.h>

#include "gc.cuh"

#define GRAPH_N 256

/* y[i] = a·x[i] + b */
__global__ void graph_axpb(float *y, const float *x, float a, float b, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b;
}

static cudaError_t axpb(float *y, const float *x, float a, float b, cudaStream_t s) {
    return KN_LAUNCH(graph_axpb, GRAPH_N / 128, 128, 0, s, y, x, a, b, GRAPH_N);
}

typedef struct {
    cudaStream_t s;
    float *x, *y, *pinned, *host;
} graph_bufs;

static void row(gc_ctx *c, const char *case_name, int ok, const char *why) {
    gc_record(c, "graph", case_name, "256 floats", 1, ok ? 0.0 : INFINITY, 0.0, NAN, 0.0, 0.0, ok ? "" : why);
}

/* 1 when every y[i] is a·i + b (x[i] = i). */
static int y_is(const graph_bufs *g, float a, float b) {
    gc_d2h(g->host, g->y, GRAPH_N * sizeof(float));
    for (int i = 0; i < GRAPH_N; i++)
        if (g->host[i] != a * (float)i + b) return 0;
    return 1;
}

/* Ends the capture on g->s: the graph, or NULL with the error in *e. */
static cudaGraph_t end_capture(const graph_bufs *g, cudaError_t *e) {
    cudaGraph_t graph = NULL;
    *e = cudaStreamEndCapture(g->s, &graph);
    return graph;
}

/* A capture runs nothing; its graph holds the launches and copies in order and replays them with the values
 * the arguments had at the launch; an update gives the executable graph a later capture's values; a graph never
 * updated keeps its first values (what a stale graph in an engine would compute). */
static void capture_and_update(gc_ctx *c, graph_bufs *g) {
    for (int i = 0; i < GRAPH_N; i++) g->pinned[i] = (float)i;
    GC_CUDA(cudaMemset(g->x, 0, GRAPH_N * sizeof(float)));
    GC_CUDA(cudaMemset(g->y, 0, GRAPH_N * sizeof(float)));
    float a = 2.0f;
    GC_CUDA(cudaStreamBeginCapture(g->s, cudaStreamCaptureModeGlobal));
    cudaStreamCaptureStatus st;
    GC_CUDA(cudaStreamIsCapturing(g->s, &st));
    GC_CUDA(cudaMemcpyAsync(g->x, g->pinned, GRAPH_N * sizeof(float), cudaMemcpyHostToDevice, g->s));
    GC_CUDA(cudaMemsetAsync(g->y, 0xff, GRAPH_N * sizeof(float), g->s));
    GC_CUDA(axpb(g->y, g->x, a, 1.0f, g->s));
    a = 100.0f; /* after the launch: not what the graph holds */
    cudaError_t e;
    cudaGraph_t graph = end_capture(g, &e);
    GC_CUDA(e);
    size_t n_nodes = 0;
    GC_CUDA(cudaGraphGetNodes(graph, NULL, &n_nodes));
    row(c, "capture records", st == cudaStreamCaptureStatusActive && n_nodes == 3 && y_is(g, 0.0f, 0.0f),
        "the capture was not active, did not hold 3 nodes, or ran them");
    cudaGraphExec_t exec = NULL, stale = NULL;
    GC_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    GC_CUDA(cudaGraphInstantiate(&stale, graph, 0));
    GC_CUDA(cudaGraphDestroy(graph)); /* the executable graphs keep their own copies */
    GC_CUDA(cudaGraphLaunch(exec, g->s));
    GC_CUDA(cudaStreamSynchronize(g->s));
    row(c, "replay, arguments by value", y_is(g, 2.0f, 1.0f), "the replay did not compute 2·x + 1");

    /* a second capture of the same topology with other arguments and pinned contents */
    for (int i = 0; i < GRAPH_N; i++) g->pinned[i] = (float)(2 * i);
    GC_CUDA(cudaStreamBeginCapture(g->s, cudaStreamCaptureModeGlobal));
    GC_CUDA(cudaMemcpyAsync(g->x, g->pinned, GRAPH_N * sizeof(float), cudaMemcpyHostToDevice, g->s));
    GC_CUDA(cudaMemsetAsync(g->y, 0xff, GRAPH_N * sizeof(float), g->s));
    GC_CUDA(axpb(g->y, g->x, a, 3.0f, g->s));
    graph = end_capture(g, &e);
    GC_CUDA(e);
    cudaGraphExecUpdateResultInfo info;
    e = cudaGraphExecUpdate(exec, graph, &info);
    GC_CUDA(cudaGraphDestroy(graph));
    GC_CUDA(cudaGraphLaunch(exec, g->s));
    GC_CUDA(cudaStreamSynchronize(g->s));
    row(c, "update takes the new arguments", e == cudaSuccess && y_is(g, 200.0f, 3.0f),
        "the updated graph did not compute 100·(2i) + 3");
    GC_CUDA(cudaGraphLaunch(stale, g->s));
    GC_CUDA(cudaStreamSynchronize(g->s));
    row(c, "control: a graph never updated is stale", y_is(g, 4.0f, 1.0f),
        "the graph never updated did not compute 2·(2i) + 1 (the copy reads the pinned buffer at replay)");

    /* another topology (one more launch): refused, the executable graph as it was */
    GC_CUDA(cudaStreamBeginCapture(g->s, cudaStreamCaptureModeGlobal));
    GC_CUDA(axpb(g->y, g->x, 1.0f, 0.0f, g->s));
    GC_CUDA(axpb(g->y, g->x, 1.0f, 0.0f, g->s));
    graph = end_capture(g, &e);
    GC_CUDA(e);
    e = cudaGraphExecUpdate(exec, graph, &info);
    (void)cudaGetLastError(); /* the refused update's error is also the last error: not the next call's */
    GC_CUDA(cudaGraphDestroy(graph));
    GC_CUDA(cudaGraphLaunch(exec, g->s));
    GC_CUDA(cudaStreamSynchronize(g->s));
    row(c, "update of another topology refused",
        e == cudaErrorGraphExecUpdateFailure && info.result != cudaGraphExecUpdateSuccess && y_is(g, 200.0f, 3.0f),
        "an update from 3 nodes to 2 was taken, or the refused update changed the graph");
    GC_CUDA(cudaGraphExecDestroy(exec));
    GC_CUDA(cudaGraphExecDestroy(stale));
}

/* Captures one launch around `forbidden` (a call that must fail during a capture: a synchronous copy, a wait on
 * the capturing stream, an allocation in global mode, a copy from pageable memory) and returns 1 when the call
 * failed and the capture ended invalidated, with no graph. */
template <class F> static int capture_refuses(graph_bufs *g, cudaStreamCaptureMode mode, F forbidden) {
    GC_CUDA(cudaStreamBeginCapture(g->s, mode));
    GC_CUDA(axpb(g->y, g->x, 1.0f, 0.0f, g->s));
    const cudaError_t call = forbidden();
    cudaError_t e;
    cudaGraph_t graph = end_capture(g, &e);
    if (graph) cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    return call != cudaSuccess && e == cudaErrorStreamCaptureInvalidated && !graph;
}

static void capture_controls(gc_ctx *c, graph_bufs *g) {
    row(c, "control: a synchronous copy invalidates",
        capture_refuses(g, cudaStreamCaptureModeGlobal,
                        [&] { return cudaMemcpy(g->host, g->y, GRAPH_N * sizeof(float), cudaMemcpyDeviceToHost); }),
        "cudaMemcpy during a capture was accepted");
    row(c, "control: waiting on the capturing stream invalidates",
        capture_refuses(g, cudaStreamCaptureModeGlobal, [&] { return cudaStreamSynchronize(g->s); }),
        "cudaStreamSynchronize of the capturing stream was accepted");
    void *p = NULL;
    row(c, "control: cudaMalloc in a global capture invalidates",
        capture_refuses(g, cudaStreamCaptureModeGlobal, [&] { return cudaMalloc(&p, 64); }),
        "cudaMalloc during a global-mode capture was accepted");
    if (p) cudaFree(p);
    row(c, "control: a copy from pageable memory invalidates",
        capture_refuses(
            g, cudaStreamCaptureModeGlobal,
            [&] { return cudaMemcpyAsync(g->x, g->host, GRAPH_N * sizeof(float), cudaMemcpyHostToDevice, g->s); }),
        "an asynchronous copy from malloc'd host memory was captured");
    cudaStream_t legacy = 0;
    row(c, "control: the legacy stream cannot capture",
        cudaStreamBeginCapture(legacy, cudaStreamCaptureModeGlobal) != cudaSuccess,
        "cudaStreamBeginCapture on the legacy stream succeeded");
    (void)cudaGetLastError();
#ifdef KN_EMU
    /* the emulator's own trap: a launch whose body holds the launcher's locals by reference (not KN_LAUNCH's
     * copy) would replay reading a dead frame */
    row(c, "control (emulator): arguments by reference refused",
        capture_refuses(g, cudaStreamCaptureModeGlobal,
                        [&] {
                            float a = 5.0f;
                            float *y = g->y;
                            return emu_launch(NULL, dim3(1), dim3(32), 0, g->s, [&] {
                                if (threadIdx.x == 0) y[0] = a;
                            });
                        }),
        "a launch capturing locals by reference was recorded");
#endif
}

void gc_family_graph(gc_ctx *c) {
    graph_bufs g;
    memset(&g, 0, sizeof g);
    GC_CUDA(cudaStreamCreate(&g.s));
    g.x = (float *)gc_dmalloc(GRAPH_N * sizeof(float));
    g.y = (float *)gc_dmalloc(GRAPH_N * sizeof(float));
    GC_CUDA(cudaMallocHost((void **)&g.pinned, GRAPH_N * sizeof(float)));
    g.host = (float *)gc_hmalloc(GRAPH_N * sizeof(float));
    capture_and_update(c, &g);
    capture_controls(c, &g);
    free(g.host);
    GC_CUDA(cudaFreeHost(g.pinned));
    gc_dfree(g.x);
    gc_dfree(g.y);
    GC_CUDA(cudaStreamDestroy(g.s));
}
