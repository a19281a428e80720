/* footprint.h — what a model costs per token, from its config alone: parameters, weight bytes read per decode
 * step (the figure that bounds batch-1 speed), KV bytes per position and DeltaNet state per sequence. */
#ifndef SPECULA_FOOTPRINT_H
#define SPECULA_FOOTPRINT_H

#include "config.h"

typedef struct {
    long long params_total;     /* trunk + lm_head (untied), MTP excluded */
    long long params_embedding; /* V·D */
    long long params_lm_head;   /* V·D when untied, else 0 */
    long long params_mtp;       /* the MTP module, 0 without one */
    /* Bytes of weights one target decode step reads: every matrix and norm
     * of the trunk, the whole lm_head, but one row of the embedding table. */
    double weight_bytes_per_step;
    /* One MTP draft step: the MTP module, the shared lm_head, one embedding row. */
    double mtp_bytes_per_step;
    double kv_bytes_per_position; /* all attention layers, keys and values */
    double deltanet_bytes;        /* conv + recurrent state of one sequence, fp32 */
} model_footprint;

/* bytes_per_param: 2 for bf16/f16 weights, 4 for f32.
 * kv_bytes: bytes per KV element (2 in the engine's bf16 cache, 4 in the reference). */
void footprint_compute(const model_config *c, int with_mtp, double bytes_per_param, double kv_bytes,
                       model_footprint *f);

#endif
