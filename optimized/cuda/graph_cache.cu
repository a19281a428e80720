/* graph_cache.cu — capture, update and launch of the passes' CUDA graphs (graph_cache.h). It also compiles against
 * the kernels' CPU emulator, whose runtime (kernels/emu/emu_rt.h) records and replays the same calls. */
#include "graph_cache.h"

#include <string.h>

void graph_cache_init(graph_cache *g) {
    memset(g, 0, sizeof *g);
    g->mode = CUDA_GRAPHS_ON;
    g->marks_per_segment = GRAPH_MARKS_PER_SEGMENT;
}

/* Opens the capture of the current segment. */
static cudaError_t open_segment(graph_cache *g, cudaStream_t s) {
    /* thread-local: this thread's calls that would wait on the device (a copy to or from pageable memory, an
     * allocation) fail during the capture, as they must: a graph cannot contain them */
    cudaError_t e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) return e;
    g->capturing = 1;
    g->marks = 0;
    g->stats.segments++;
    return cudaSuccess;
}

/* 1 the first time a shape is asked about (then remembered), else 0. */
static int first_of_shape(graph_cache *g, int m, int n_seqs, const void *kv) {
    for (int i = 0; i < g->n_seen; i++)
        if (g->seen[i].m == m && g->seen[i].n_seqs == n_seqs && g->seen[i].kv == kv) return 0;
    if (g->n_seen == GRAPH_SHAPES_SEEN) return 0; /* every kernel long loaded by then */
    g->seen[g->n_seen].m = m, g->seen[g->n_seen].n_seqs = n_seqs, g->seen[g->n_seen].kv = kv;
    g->n_seen++;
    return 1;
}

cudaError_t graph_begin(graph_cache *g, cudaStream_t s, int m, int n_seqs, const void *kv) {
    if (g->mode == CUDA_GRAPHS_OFF || g->capturing || first_of_shape(g, m, n_seqs, kv)) return cudaSuccess;
    g->m = m, g->n_seqs = n_seqs, g->segment = 0;
    g->stats.passes++;
    return open_segment(g, s);
}

cudaError_t graph_mark(graph_cache *g, cudaStream_t s) {
    if (!g->capturing || ++g->marks <= g->marks_per_segment) return cudaSuccess;
    cudaError_t e = graph_end(g, s);
    if (e != cudaSuccess) return e;
    g->segment++;
    e = open_segment(g, s);
    g->marks = 1; /* this mark's op opens the new segment */
    return e;
}

/* The slot of this shape, or NULL. */
static graph_slot *find(graph_cache *g, size_t n_nodes) {
    for (int i = 0; i < GRAPH_CACHE_SLOTS; i++) {
        graph_slot *t = &g->slots[i];
        if (t->exec && t->m == g->m && t->n_seqs == g->n_seqs && t->segment == g->segment && t->n_nodes == n_nodes)
            return t;
    }
    return NULL;
}

/* A free slot, or the least recently used one emptied. */
static graph_slot *take(graph_cache *g) {
    graph_slot *old = &g->slots[0];
    for (int i = 0; i < GRAPH_CACHE_SLOTS; i++) {
        if (!g->slots[i].exec) return &g->slots[i];
        if (g->slots[i].last_use < old->last_use) old = &g->slots[i];
    }
    cudaGraphExecDestroy(old->exec);
    old->exec = NULL;
    return old;
}

cudaError_t graph_end(graph_cache *g, cudaStream_t s) {
    if (!g->capturing) return cudaSuccess;
    g->capturing = 0;
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(s, &graph); /* invalidated: something in the pass cannot be captured */
    if (e != cudaSuccess) return e;
    size_t n_nodes = 0;
    e = cudaGraphGetNodes(graph, NULL, &n_nodes);
    graph_slot *t = e == cudaSuccess ? find(g, n_nodes) : NULL;
    if (t && g->mode != CUDA_GRAPHS_STALE) {
        cudaGraphExecUpdateResultInfo info;
        e = cudaGraphExecUpdate(t->exec, graph, &info);
        if (e == cudaErrorGraphExecUpdateFailure) { /* the same size but other kernels: instantiate anew */
            (void)cudaGetLastError();
            cudaGraphExecDestroy(t->exec);
            t->exec = NULL;
            t = NULL;
            e = cudaSuccess;
        } else if (e == cudaSuccess) {
            g->stats.updated++;
        }
    }
    if (e == cudaSuccess && !t) {
        t = take(g);
        e = cudaGraphInstantiate(&t->exec, graph, 0);
        if (e == cudaSuccess) {
            t->m = g->m, t->n_seqs = g->n_seqs, t->segment = g->segment, t->n_nodes = n_nodes;
            g->stats.instantiated++;
        } else {
            t->exec = NULL;
        }
    }
    cudaGraphDestroy(graph);
    if (e != cudaSuccess) return e;
    t->last_use = ++g->clock;
    g->stats.launched++;
    return cudaGraphLaunch(t->exec, s);
}

void graph_cache_free(graph_cache *g) {
    for (int i = 0; i < GRAPH_CACHE_SLOTS; i++)
        if (g->slots[i].exec) cudaGraphExecDestroy(g->slots[i].exec);
    memset(g->slots, 0, sizeof g->slots);
}
