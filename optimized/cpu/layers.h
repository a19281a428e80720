/* layers.h — the CPU backend's attention and DeltaNet cores (backend.h's
 * `attention` and `deltanet`): the reference's operations node by node, each
 * node seeing the committed positions and its own ancestors, on host
 * memory. */
#ifndef SPECULA_CPU_LAYERS_H
#define SPECULA_CPU_LAYERS_H

#include "backend.h"

/* Scratch of the attention core, one set per thread, grown as contexts grow. */
typedef struct {
    float *scores;
    const float **keys, **values; /* [cap] one head's vectors of the attended positions */
    int *path;                    /* [cap] the attended nodes of the pass */
    float *rows;                  /* [cap, 2, dh] those vectors read back from a bf16/q8/q4 cache: key, value */
    float *q;                     /* [dh] the query rotated as the q4 cache's keys are */
} cpu_attention_thread;
typedef struct {
    cpu_attention_thread *thread; /* [threads] */
    int threads, cap, dh;
} cpu_attention_scratch;

/* Scratch of the DeltaNet core: the states of a pass's logged nodes (backend.h), which live only while their
 * children need them — conv states [m, C, K−1], and per thread one head's recurrent states [m, Dk, Dv]. */
typedef struct {
    float *conv;
    float **rec; /* [threads] */
    int threads, nodes;
} cpu_deltanet_scratch;

void cpu_attention_layer(const engine_backend *b, cpu_attention_scratch *s, const epass *p, int la,
                         const attention_args *a);
void cpu_deltanet_layer(const engine_backend *b, cpu_deltanet_scratch *s, const epass *p, const deltanet_args *a);
/* backend.h's deltanet_replay. */
void cpu_deltanet_replay(const engine_backend *b, float *conv_state, float *rec_state, const float *const *steps,
                         int n);
void cpu_attention_scratch_free(cpu_attention_scratch *s);
void cpu_deltanet_scratch_free(cpu_deltanet_scratch *s);

#endif
