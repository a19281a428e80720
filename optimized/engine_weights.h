/* engine_weights.h — the engine's weights, loaded through the loader's checks (checkpoint.h). Matrices are bf16
 * (a bf16 checkpoint is mapped in place, others converted once) or f32 for exact cross-tests with the reference;
 * the small tensors (norms, conv, A_log, dt_bias) are float32 copies. */
#ifndef SPECULA_ENGINE_WEIGHTS_H
#define SPECULA_ENGINE_WEIGHTS_H

#include "checkpoint.h"
#include "dtype.h"

/* One tensor as the engine reads it. */
typedef struct {
    const void *data; /* matrices: rows of n_in elements of `dtype`, any alignment; small tensors: float32 */
    dtype_t dtype;    /* DTYPE_BF16 or DTYPE_F32 */
} eweight;

typedef struct {
    checkpoint ck;        /* kept open: bf16 matrices point into its mapping */
    dtype_t matrix_dtype; /* what the matrices are in */
    int n_slots;          /* trunk layers + 1 (the MTP module's layer) */
    eweight *w;           /* [n_slots, ROLE_COUNT]: layer l's role r at l·ROLE_COUNT + r, the MTP layer at
                           * L·ROLE_COUNT + r, the global roles (embedding, final norm, lm_head, MTP's fc and
                           * norms) in row 0, where no per-layer role lives */
    void *arena;          /* every copy the engine owns */
    size_t arena_bytes;
} engine_weights;

/* The products a layer takes from the same input rows, each run as one grouped product (backend.h's
 * matmul_group), parts in this order: an attention layer's q, k and v; a DeltaNet layer's four input projections;
 * the MLP's gate and up. A backend may place a group's weights back to back so one launch reads them all. */
#define ENGINE_GROUP_MAX_PARTS 4
typedef enum { EGROUP_ATTENTION_IN = 0, EGROUP_DELTANET_IN, EGROUP_MLP_IN, EGROUP_COUNT } engine_group_id;
typedef struct {
    int n_parts;
    tensor_role role[ENGINE_GROUP_MAX_PARTS];
} engine_weight_group;
extern const engine_weight_group engine_weight_groups[EGROUP_COUNT];
/* The group role r is a part of (its index in it in *part), or −1. */
int engine_weight_group_of(tensor_role r, int *part);

/* f32: keep every matrix in float32 (else bf16). Fails with the loader's
 * messages on a bad checkpoint. */
int engine_weights_load(engine_weights *ew, const char *dir, int f32, sp_error *err);
void engine_weights_free(engine_weights *ew);
/* The table of a checkpoint that does not exist: the layout of DIR/config.json with no data anywhere (every
 * entry's data NULL), for a backend to fill with random values of the right shapes (synthetic benchmarks of a
 * model too large to ship). */
int engine_weights_synthetic(engine_weights *ew, const char *dir, sp_error *err);

/* The tensor of `role` in trunk layer `layer` (−1: the MTP module's layer;
 * ignored for the global roles); NULL data when the checkpoint has none. */
const eweight *engine_weight(const engine_weights *ew, int layer, tensor_role role);
/* Its index in the table (a backend's placed copy of the table uses the same). */
size_t engine_weight_index(const engine_weights *ew, int layer, tensor_role role);

/* Tensor i of the checkpoint (i < ck.n_specs) as the table holds it: its entry, its index in the table and its
 * size in bytes. The tied lm_head has no tensor of its own: its entry is the embedding's. */
const eweight *engine_weight_entry(const engine_weights *ew, int i, size_t *index, size_t *bytes);

/* Bytes per parameter of the matrices (2 for bf16, 4 for f32). */
int engine_weights_storage_bytes(const engine_weights *ew);

#endif
