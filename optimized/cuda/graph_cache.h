/* graph_cache.h — the CUDA backend's passes as CUDA graphs. A pass's launches are captured on the backend's stream
 * and run where the host next needs the device. One executable graph per pass shape and segment is kept and
 * updated to each new capture's arguments (cudaGraphExecUpdate), so a step pays a capture and an update, not an
 * instantiation. */
#ifndef SPECULA_GRAPH_CACHE_H
#define SPECULA_GRAPH_CACHE_H

extern "C" {
#include "backend.h"
}

#include "kn_api.h"

#define GRAPH_CACHE_SLOTS 128      /* segments kept: the decode step's, each verify size's, the MTP module's */
#define GRAPH_MARKS_PER_SEGMENT 16 /* 8 layers: a 64-layer pass in 8 segments of about 150 launches */
#define GRAPH_SHAPES_SEEN 64       /* shapes whose first pass has run */

/* A shape is m nodes, the sequences and the number of nodes captured, which tells the MTP module's one-layer pass
 * from the trunk's. */
typedef struct {
    int m, n_seqs, segment;
    size_t n_nodes;
    cudaGraphExec_t exec; /* NULL: a free slot */
    unsigned long long last_use;
} graph_slot;

typedef struct {
    int mode;      /* CUDA_GRAPHS_* (backend.h) */
    int capturing; /* a pass's capture is open on the stream */
    int m, n_seqs; /* its shape */
    int segment;   /* the segment being captured (0: the pass's first) */
    int marks;     /* marks in it so far */
    /* A long pass is captured in segments of this many marks (the backend marks each RMSNorm, two a layer). Each
     * segment is launched as soon as it is captured, so the device runs one while the host captures the next. */
    int marks_per_segment;
    struct {
        int m, n_seqs;
        const void *kv;
    } seen[GRAPH_SHAPES_SEEN]; /* the shapes whose first pass ran op by op */
    int n_seen;
    graph_slot slots[GRAPH_CACHE_SLOTS];
    unsigned long long clock;
    cuda_graph_stats stats;
} graph_cache;

void graph_cache_init(graph_cache *g); /* graphs on, GRAPH_MARKS_PER_SEGMENT */
/* Opens a capture of a pass of m nodes over n_seqs sequences on s; nothing when graphs are off or for a shape's
 * first pass (kv, the pass's KV cache, tells the MTP module's passes from the trunk's: their kernels differ).
 * A shape's first pass runs op by op: CUDA loads kernels lazily at their first launch, which a capture cannot
 * record, and that pass sizes the scratch.
 * Every pass is captured again because the kernels take the context length as a launch argument that sets their
 * grids and scratch: a graph replayed unchanged would attend over the context it was captured at. Moving such
 * values into device memory would change every kernel family's contract. The pass's tables and tokens come from
 * pinned buffers the backend owns, copied by the graph's own nodes. */
cudaError_t graph_begin(graph_cache *g, cudaStream_t s, int m, int n_seqs, const void *kv);
/* A point where the pass may be cut: every marks_per_segment-th mark (after the first) closes the segment being
 * captured (graph_end) and opens the next. */
cudaError_t graph_mark(graph_cache *g, cudaStream_t s);
/* Closes the open capture, if any: the graph of its shape updated to it (or instantiated), then launched on s.
 * In CUDA_GRAPHS_STALE mode a shape's graph is never updated after its first capture (the planted bug the
 * tests must catch). */
cudaError_t graph_end(graph_cache *g, cudaStream_t s);
void graph_cache_free(graph_cache *g);

#endif
