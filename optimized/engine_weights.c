/* engine_weights.c — the engine's weights (see engine_weights.h). */
#include "engine_weights.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_matrix(const tensor_spec *s) { return s->kind == TENSOR_MATRIX || s->kind == TENSOR_EMBEDDING; }

static int is_global(tensor_role r) { return r < ROLE_INPUT_NORM; }

static size_t slot_index(const engine_weights *ew, const tensor_spec *s) {
    const int row = is_global(s->role) ? 0 : s->group == GROUP_MTP ? ew->n_slots - 1 : s->layer;
    return (size_t)row * ROLE_COUNT + s->role;
}

/* Bytes tensor i takes in the arena: 0 when it is used in place. */
static size_t owned_bytes(const engine_weights *ew, int i) {
    const tensor_spec *s = &ew->ck.specs[i];
    const dtype_t stored = ew->ck.tensors[i]->dtype;
    const size_t n = (size_t)tensor_spec_numel(s);
    if (!is_matrix(s)) return n * sizeof(float);
    if (ew->matrix_dtype == DTYPE_BF16 && stored == DTYPE_BF16) return 0;
    return n * (size_t)dtype_size(ew->matrix_dtype);
}

/* Fills tensor i: in place, or converted into dst. */
static int place(engine_weights *ew, int i, char *dst, float *scratch, sp_error *err) {
    const tensor_spec *s = &ew->ck.specs[i];
    eweight *w = &ew->w[slot_index(ew, s)];
    const size_t n = (size_t)tensor_spec_numel(s);
    if (owned_bytes(ew, i) == 0) { /* a bf16 matrix, used as mapped */
        w->data = ew->ck.tensors[i]->data;
        w->dtype = DTYPE_BF16;
        return checkpoint_check_finite(&ew->ck, i, err);
    }
    const int bf16 = is_matrix(s) && ew->matrix_dtype == DTYPE_BF16;
    float *f = bf16 ? scratch : (float *)dst;
    if (checkpoint_read_f32(&ew->ck, i, f, err)) return -1;
    if (bf16) {
        uint16_t *h = (uint16_t *)dst;
        for (size_t k = 0; k < n; k++) {
            h[k] = f32_to_bf16(f[k]);
            /* bf16 has float32's range, but a finite value within half a bf16 step of FLT_MAX rounds up to
             * infinity: refused, never computed with. */
            if (isinf(bf16_to_f32(h[k])))
                return sp_fail(err,
                               "tensor %s: element %zu (%g) rounds to infinity in bf16; open the checkpoint with "
                               "--dtype f32",
                               s->name, k, (double)f[k]);
        }
    }
    w->data = dst;
    w->dtype = bf16 ? DTYPE_BF16 : DTYPE_F32;
    return 0;
}

int engine_weights_load(engine_weights *ew, const char *dir, int f32, sp_error *err) {
    memset(ew, 0, sizeof *ew);
    if (checkpoint_open(&ew->ck, dir, err)) return -1;
    ew->matrix_dtype = f32 ? DTYPE_F32 : DTYPE_BF16;
    ew->n_slots = ew->ck.cfg.num_layers + 1;
    ew->w = sp_xcalloc((size_t)ew->n_slots * ROLE_COUNT, sizeof *ew->w, "engine weight table");
    size_t total = 0, largest = 0;
    for (int i = 0; i < ew->ck.n_specs; i++) {
        total += (owned_bytes(ew, i) + 63) & ~(size_t)63; /* every tensor 64-byte aligned */
        const size_t n = (size_t)tensor_spec_numel(&ew->ck.specs[i]);
        if (n > largest) largest = n;
    }
    ew->arena = total ? aligned_alloc(64, total) : NULL;
    if (total && !ew->arena) {
        checkpoint_close(&ew->ck);
        return sp_fail(err, "loading %s: cannot allocate %zu bytes of weights", dir, total);
    }
    ew->arena_bytes = total;
    float *scratch = ew->matrix_dtype == DTYPE_BF16 ? sp_xcalloc(largest, sizeof(float), "weight conversion") : NULL;
    char *next = ew->arena;
    int rc = 0;
    for (int i = 0; i < ew->ck.n_specs && !rc; i++) {
        rc = place(ew, i, next, scratch, err);
        next += (owned_bytes(ew, i) + 63) & ~(size_t)63;
    }
    free(scratch);
    if (rc) {
        sp_wrap(err, "loading %s: ", dir);
        engine_weights_free(ew);
        return -1;
    }
    if (ew->ck.cfg.tie_word_embeddings) ew->w[ROLE_LM_HEAD] = ew->w[ROLE_EMBED];
    return 0;
}

int engine_weights_synthetic(engine_weights *ew, const char *dir, sp_error *err) {
    memset(ew, 0, sizeof *ew);
    checkpoint *ck = &ew->ck;
    if (config_load(dir, &ck->cfg, err)) return -1;
    snprintf(ck->path, sizeof ck->path, "%s", dir);
    ck->with_mtp = ck->cfg.mtp_num_layers > 0;
    ck->specs = sp_xcalloc((size_t)layout_max_tensors(&ck->cfg), sizeof *ck->specs, "tensor specs");
    ck->n_specs = layout_build(&ck->cfg, ck->with_mtp, ck->specs);
    ck->storage_bytes = 2;
    ew->matrix_dtype = DTYPE_BF16;
    ew->n_slots = ck->cfg.num_layers + 1;
    ew->w = sp_xcalloc((size_t)ew->n_slots * ROLE_COUNT, sizeof *ew->w, "engine weight table");
    for (int i = 0; i < ck->n_specs; i++) /* no data on the host: only what a backend's copy will hold */
        ew->w[slot_index(ew, &ck->specs[i])].dtype = is_matrix(&ck->specs[i]) ? DTYPE_BF16 : DTYPE_F32;
    return 0;
}

void engine_weights_free(engine_weights *ew) {
    checkpoint_close(&ew->ck);
    free(ew->w);
    free(ew->arena);
    memset(ew, 0, sizeof *ew);
}

size_t engine_weight_index(const engine_weights *ew, int layer, tensor_role role) {
    const int row = is_global(role) ? 0 : layer < 0 ? ew->n_slots - 1 : layer;
    return (size_t)row * ROLE_COUNT + role;
}

const eweight *engine_weight(const engine_weights *ew, int layer, tensor_role role) {
    return &ew->w[engine_weight_index(ew, layer, role)];
}

int engine_weights_storage_bytes(const engine_weights *ew) { return dtype_size(ew->matrix_dtype); }

const eweight *engine_weight_entry(const engine_weights *ew, int i, size_t *index, size_t *bytes) {
    const tensor_spec *s = &ew->ck.specs[i];
    const size_t n = (size_t)tensor_spec_numel(s);
    *index = slot_index(ew, s);
    *bytes = is_matrix(s) ? n * (size_t)dtype_size(ew->matrix_dtype) : n * sizeof(float);
    return &ew->w[*index];
}

const engine_weight_group engine_weight_groups[EGROUP_COUNT] = {
    [EGROUP_ATTENTION_IN] = {3, {ROLE_Q_PROJ, ROLE_K_PROJ, ROLE_V_PROJ}},
    [EGROUP_DELTANET_IN] = {4, {ROLE_IN_PROJ_QKV, ROLE_IN_PROJ_Z, ROLE_IN_PROJ_A, ROLE_IN_PROJ_B}},
    [EGROUP_MLP_IN] = {2, {ROLE_GATE_PROJ, ROLE_UP_PROJ}},
};

int engine_weight_group_of(tensor_role r, int *part) {
    for (int g = 0; g < EGROUP_COUNT; g++)
        for (int j = 0; j < engine_weight_groups[g].n_parts; j++)
            if (engine_weight_groups[g].role[j] == r) {
                if (part) *part = j;
                return g;
            }
    return -1;
}
