/* cuda_weights.cu — the CUDA backend's weights (backend.h: place_weights, free_weights, synthesize_weights):
 * uploaded once, or random values of the same shapes made on the device. The parts of a weight group lie back to
 * back in one allocation per layer, so one kn_matvec_group launch reads them all. */
#include "cuda_backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kn_engine_ops.h"

/* The table once every tensor is on the device (the tied lm_head is the embedding's), or NULL with the first
 * failure, nothing left allocated. */
static eweight *placed_or_failure(engine_backend *b, eweight *placed, const engine_weights *w, sp_error *err) {
    if (w->ck.cfg.tie_word_embeddings) placed[ROLE_LM_HEAD] = placed[ROLE_EMBED];
    sp_error failed;
    if (b->status(b, &failed)) {
        sp_fail(err, "%s", failed.msg);
        b->free_weights(b, placed, w);
        return NULL;
    }
    return placed;
}

/* The checkpoint's tensors by table entry: each entry's spec (−1: none) and size. A row's weight group is placed
 * as one allocation when every part of it has a tensor there, which is always so in a checkpoint the loader
 * accepts. */
typedef struct {
    int *spec;     /* [n_slots · ROLE_COUNT] */
    size_t *bytes; /* [n_slots · ROLE_COUNT] */
} entry_map;

static entry_map entries(const engine_weights *w) {
    const size_t n = (size_t)w->n_slots * ROLE_COUNT;
    entry_map e = {(int *)sp_xcalloc(n, sizeof(int), "weight entries"),
                   (size_t *)sp_xcalloc(n, sizeof(size_t), "weight entries")};
    for (size_t i = 0; i < n; i++) e.spec[i] = -1;
    for (int i = 0; i < w->ck.n_specs; i++) {
        size_t index, bytes;
        engine_weight_entry(w, i, &index, &bytes);
        e.spec[index] = i, e.bytes[index] = bytes;
    }
    return e;
}
static void entries_free(entry_map *e) { free(e->spec), free(e->bytes); }

/* The group entry `index` is part `*part` of when that group is placed as one allocation, else −1. */
static int placed_group(const entry_map *e, size_t index, int *part) {
    const size_t row = index / ROLE_COUNT;
    const int g = engine_weight_group_of((tensor_role)(index % ROLE_COUNT), part);
    if (g < 0) return -1;
    const engine_weight_group *group = &engine_weight_groups[g];
    for (int j = 0; j < group->n_parts; j++)
        if (e->spec[row * ROLE_COUNT + group->role[j]] < 0) return -1;
    return g;
}

/* Device memory for every tensor: one allocation per weight group (its parts back to back, in the group's order),
 * one per other tensor; fill(i, dev) writes tensor i there. */
template <class F> static void place_all(engine_backend *b, const engine_weights *w, eweight *placed, F fill) {
    entry_map e = entries(w);
    for (int i = 0; i < w->ck.n_specs; i++) {
        size_t index, bytes;
        const eweight *host = engine_weight_entry(w, i, &index, &bytes);
        int part;
        const int g = placed_group(&e, index, &part);
        if (g < 0) {
            void *dev = cuda_alloc(b, bytes, w->ck.specs[i].name);
            fill(i, dev);
            placed[index].data = dev;
            placed[index].dtype = host->dtype;
            continue;
        }
        if (part) continue; /* placed with its group's first part */
        const engine_weight_group *group = &engine_weight_groups[g];
        const size_t row = index / ROLE_COUNT;
        size_t total = 0;
        for (int j = 0; j < group->n_parts; j++) total += e.bytes[row * ROLE_COUNT + group->role[j]];
        char what[300];
        snprintf(what, sizeof what, "%s and the projections placed with it", w->ck.specs[i].name);
        char *dev = (char *)cuda_alloc(b, total, what);
        size_t off = 0;
        for (int j = 0; j < group->n_parts; j++) {
            const size_t at = row * ROLE_COUNT + group->role[j];
            fill(e.spec[at], dev + off);
            placed[at].data = dev + off;
            placed[at].dtype = w->w[at].dtype;
            off += e.bytes[at];
        }
    }
    entries_free(&e);
}

static eweight *c_place_weights(engine_backend *b, const engine_weights *w, sp_error *err) {
    if (w->matrix_dtype != DTYPE_BF16) {
        sp_fail(err, "the CUDA backend computes with bf16 matrices");
        return NULL;
    }
    eweight *placed = (eweight *)sp_xcalloc((size_t)w->n_slots * ROLE_COUNT, sizeof *placed, "device weight table");
    place_all(b, w, placed, [&](int i, void *dev) {
        size_t index, bytes;
        const eweight *host = engine_weight_entry(w, i, &index, &bytes);
        cuda_upload(b, dev, host->data, bytes);
    });
    return placed_or_failure(b, placed, w, err);
}

static void c_free_weights(engine_backend *b, eweight *placed, const engine_weights *w) {
    if (!placed) return;
    entry_map e = entries(w);
    for (int i = 0; i < w->ck.n_specs; i++) { /* one device allocation per group, one per other tensor */
        size_t index, bytes;
        engine_weight_entry(w, i, &index, &bytes);
        int part;
        if (placed_group(&e, index, &part) >= 0 && part) continue;
        if (placed[index].data) cuda_free(b, (void *)placed[index].data);
    }
    entries_free(&e);
    free(placed);
}

/* The range a synthetic tensor's values are drawn from: products that keep unit-variance inputs at unit
 * variance (±√(3/n_in)), norm weights near their identity (zero-centred ones near 0, the gated norm's near 1),
 * decays of real models' range, so that 64 layers of random weights stay finite. */
static void synthetic_range(const tensor_spec *t, float *lo, float *hi) {
    float r = 1.0f;
    *lo = -1.0f, *hi = 1.0f;
    switch (t->kind) {
    case TENSOR_MATRIX: r = sqrtf(3.0f / (float)t->shape[1]), *lo = -r, *hi = r; break;
    case TENSOR_EMBEDDING: break;
    case TENSOR_NORM: *lo = -0.05f, *hi = 0.05f; break;
    case TENSOR_NORM_PLAIN: *lo = 0.9f, *hi = 1.1f; break;
    case TENSOR_CONV: r = sqrtf(3.0f / (float)t->shape[2]), *lo = -r, *hi = r; break;
    case TENSOR_A_LOG: *lo = 0.0f, *hi = 2.7f; break; /* A in [1, 15] */
    case TENSOR_DT_BIAS: break;
    }
}

static eweight *c_synthesize_weights(engine_backend *b, const engine_weights *w, uint64_t seed, sp_error *err) {
    eweight *placed = (eweight *)sp_xcalloc((size_t)w->n_slots * ROLE_COUNT, sizeof *placed, "device weight table");
    place_all(b, w, placed, [&](int i, void *dev) {
        size_t index, bytes;
        const eweight *shape = engine_weight_entry(w, i, &index, &bytes);
        float lo, hi;
        synthetic_range(&w->ck.specs[i], &lo, &hi);
        const uint64_t stream = seed * 0x100000001b3ull + (uint64_t)i;
        if (shape->dtype == DTYPE_BF16)
            cuda_check(b, kn_fill_bf16((uint16_t *)dev, bytes / 2, lo, hi, stream, impl(b)->stream), "fill");
        else
            cuda_check(b, kn_fill_f32((float *)dev, bytes / 4, lo, hi, stream, impl(b)->stream), "fill");
    });
    return placed_or_failure(b, placed, w, err);
}

void cuda_weights_install(engine_backend *b) {
    b->place_weights = c_place_weights;
    b->free_weights = c_free_weights;
    b->synthesize_weights = c_synthesize_weights;
}
