/* roofline.h — a roofline model of batched decoding with and without speculation: every pass costs
 * max(bytes / bandwidth, FLOPs / peak). A model, not a measurement: the device figures are datasheet peaks the
 * caller states, and the workload comes from a config alone. */
#ifndef SPECULA_ROOFLINE_H
#define SPECULA_ROOFLINE_H

#include "config.h"

typedef struct {
    const char *name;
    double bandwidth;  /* bytes/s the weights and caches stream at */
    double peak_flops; /* dense FLOP/s of the matrix units at the weights' dtype */
    double memory;     /* bytes of device memory for weights, KV cache and states */
} roofline_device;

/* The H200 SXM datasheet: 4.8 TB/s HBM3e, 989 TFLOP/s dense bf16, 141 GB. */
roofline_device roofline_h200(void);

/* What one pass of a model costs, split into the parts that are read once
 * per pass and the parts every sequence of the batch adds. */
typedef struct {
    double weight_bytes;       /* weights read once per pass, shared by the batch */
    double flops_per_position; /* 2 per weight a position multiplies, plus attention over the context */
    double seq_bytes;          /* per sequence and pass: KV cache read over the context, DeltaNet state read */
    double state_write_bytes;  /* per sequence and verified position: the DeltaNet state slot written */
} roofline_pass;

typedef struct {
    roofline_pass target;            /* the trunk and lm_head */
    roofline_pass proposer;          /* one MTP step (its layer, the lm_head, one embedding row) */
    int context;                     /* positions already in the cache, assumed */
    double weight_memory;            /* every weight held on the device: trunk, embedding, lm_head, MTP */
    double kv_bytes_per_sequence;    /* the trunk's and the MTP layer's KV cache at the context */
    double state_bytes_per_sequence; /* one DeltaNet state (conv + recurrent) */
} roofline_workload;

/* Builds the target and MTP passes of `c` at `context` positions with
 * weights of bytes_per_param and a KV cache of kv_bytes per element; the
 * DeltaNet state is fp32. Assumptions (stated here, drawn on the plot):
 *   FLOPs = 2 · weights read + 4 · H · Dh · context per attention layer
 *   (QKᵀ and PV); the DeltaNet recurrence and the norms are left out (under
 *   1 % at 27B); a verified position writes its own state slot (the
 *   engine's k+1 slots), plain decoding writes one. */
void roofline_workload_build(const model_config *c, double bytes_per_param, double kv_bytes, int context,
                             roofline_workload *w);

/* Seconds for one pass over `positions` positions per sequence, b sequences. */
double roofline_pass_time(const roofline_device *d, const roofline_pass *p, int b, int positions);

/* The speed-up of MTP speculation with depth k at acceptance α over plain
 * decoding, both at batch b:
 *   plain:  one pass of 1 position per token;
 *   spec:   per round one target pass over k+1 positions and k MTP steps of
 *           1 position each, committing E(α,k) tokens per sequence;
 *   S(b) = E(α,k) · t_target(b, 1) / (t_target(b, k+1) + k · t_mtp(b, 1)).
 * At batch 1 the passes are bandwidth-bound and verifying k+1 positions
 * costs about one; as b grows the FLOPs catch up with the bytes, the
 * verification pass costs k+1 times a plain one, and S falls below 1. */
double roofline_speedup(const roofline_device *d, const roofline_workload *w, int b, double alpha, int k);

/* The same workload for an engine that writes only the final DeltaNet
 * state of a verification pass (recomputing on a rejection, say): the
 * state write moves into the per-sequence bytes, so a pass over k+1
 * positions reads and writes the same bytes as a pass over one. */
roofline_workload roofline_single_state_write(const roofline_workload *w);

/* The largest batch whose weights (target and MTP), KV cache at the
 * context and DeltaNet state slots (1 + k per sequence, k = 0 for plain
 * decoding) fit in d->memory; 0 when not even one sequence fits. */
int roofline_max_batch(const roofline_device *d, const roofline_workload *w, int k);

#endif
