/* checkpoint.c — open a checkpoint and check every tensor (see checkpoint.h). */
#include "checkpoint.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"

/* A config that says the lm_head is tied, beside a file with an lm_head.weight: a copy of the embedding is
 * harmless (some exports save the tied matrix twice), anything else is an untied model whose lm_head would be
 * dropped in silence. */
static int check_tied_lm_head(const checkpoint *ck, const st_tensor *lm_head, sp_error *err) {
    char embed[256];
    snprintf(embed, sizeof embed, "%sembed_tokens.weight", ck->cfg.tensor_prefix);
    const st_tensor *e = st_find(&ck->st, embed);
    if (e && e->dtype == lm_head->dtype && e->nbytes == lm_head->nbytes && !memcmp(e->data, lm_head->data, e->nbytes))
        return 0;
    return sp_fail(err,
                   "%s: config.json says \"tie_word_embeddings\": true, but the file has an lm_head.weight that is "
                   "not the embedding: which is meant?",
                   ck->st.paths[lm_head->file]);
}

/* A tensor the config does not account for means config and weights
 * disagree (e.g. an 8-layer checkpoint under a 4-layer config): refuse it
 * rather than run a different model than the file holds. The vision tower,
 * an MTP module that is not loaded and a tied lm_head (a copy of the
 * embedding) are the exceptions. */
static int check_unexpected(const checkpoint *ck, sp_error *err) {
    const st_set *st = &ck->st;
    for (int i = 0; i < st->n_tensors; i++) {
        const char *name = st->tensors[i].name;
        if (!strcmp(name, "lm_head.weight") && ck->cfg.tie_word_embeddings) {
            if (check_tied_lm_head(ck, &st->tensors[i], err)) return -1;
            continue;
        }
        if (!strncmp(name, "model.visual.", 13) || (!ck->with_mtp && !strncmp(name, "mtp.", 4))) continue;
        int known = 0;
        for (int j = 0; j < ck->n_specs && !known; j++) known = !strcmp(name, ck->specs[j].name);
        if (!known)
            return sp_fail(err,
                           "tensor %s (%s) is not part of the model config.json describes: the config and the "
                           "weights disagree",
                           name, st->paths[st->tensors[i].file]);
    }
    return 0;
}

/* The file's tensor of one spec, present with the spec's shape. */
static const st_tensor *find_checked(const checkpoint *ck, const tensor_spec *spec, sp_error *err) {
    const st_tensor *t = st_find(&ck->st, spec->name);
    if (!t) {
        sp_fail(err, "tensor %s: missing from the checkpoint", spec->name);
        return NULL;
    }
    int same = t->ndim == spec->ndim;
    for (int d = 0; same && d < spec->ndim; d++) same = t->shape[d] == spec->shape[d];
    if (!same) {
        char want[96], have[96];
        st_format_shape(spec->ndim, spec->shape, want, sizeof want);
        st_format_shape(t->ndim, t->shape, have, sizeof have);
        sp_fail(err, "tensor %s: expected %s, file %s has %s %s", spec->name, want, ck->st.paths[t->file], have,
                dtype_name(t->dtype));
        return NULL;
    }
    return t;
}

int checkpoint_check(checkpoint *ck, sp_error *err) {
    const model_config *c = &ck->cfg;
    ck->with_mtp = c->mtp_num_layers > 0 && st_find(&ck->st, "mtp.fc.weight") != NULL;
    ck->specs = sp_xcalloc((size_t)layout_max_tensors(c), sizeof *ck->specs, "tensor specs");
    ck->n_specs = layout_build(c, ck->with_mtp, ck->specs);
    ck->tensors = sp_xcalloc((size_t)ck->n_specs, sizeof *ck->tensors, "checkpoint tensors");
    if (check_unexpected(ck, err)) return -1;
    for (int i = 0; i < ck->n_specs; i++)
        if (!(ck->tensors[i] = find_checked(ck, &ck->specs[i], err))) return -1;
    ck->storage_bytes = dtype_size(ck->tensors[0]->dtype); /* the embedding's: what a decode step reads */
    return 0;
}

int checkpoint_open(checkpoint *ck, const char *dir, sp_error *err) {
    memset(ck, 0, sizeof *ck);
    snprintf(ck->path, sizeof ck->path, "%s", dir);
    if (config_load(dir, &ck->cfg, err)) return -1;
    if (st_open(&ck->st, dir, err)) return -1;
    if (checkpoint_check(ck, err)) {
        sp_wrap(err, "loading %s: ", dir);
        checkpoint_close(ck);
        return -1;
    }
    return 0;
}

/* Refuses the first non-finite value of x[n], element `first` of tensor i onwards. */
static int check_values(const checkpoint *ck, int i, const float *x, int64_t n, int64_t first, sp_error *err) {
    const tensor_spec *spec = &ck->specs[i];
    for (int64_t k = 0; k < n; k++)
        if (!isfinite(x[k]))
            return sp_fail(err, "tensor %s (%s): element %lld is %s; %s", spec->name,
                           ck->st.paths[ck->tensors[i]->file], (long long)(first + k), isnan(x[k]) ? "NaN" : "infinite",
                           (spec->kind == TENSOR_NORM || spec->kind == TENSOR_NORM_PLAIN)
                               ? "a norm weight must be finite"
                               : "weights must be finite");
    return 0;
}

int checkpoint_read_f32(const checkpoint *ck, int i, float *dst, sp_error *err) {
    const st_tensor *t = ck->tensors[i];
    const int64_t n = tensor_spec_numel(&ck->specs[i]);
    dtype_to_f32(dst, t->data, t->dtype, (size_t)n);
    return check_values(ck, i, dst, n, 0, err);
}

int checkpoint_check_finite(const checkpoint *ck, int i, sp_error *err) {
    enum { CHUNK = 1 << 14 };
    float buf[CHUNK];
    const st_tensor *t = ck->tensors[i];
    const int64_t n = tensor_spec_numel(&ck->specs[i]);
    const size_t esize = (size_t)dtype_size(t->dtype);
    for (int64_t at = 0; at < n; at += CHUNK) {
        const int64_t len = n - at < CHUNK ? n - at : CHUNK;
        dtype_to_f32(buf, (const char *)t->data + (size_t)at * esize, t->dtype, (size_t)len);
        if (check_values(ck, i, buf, len, at, err)) return -1;
    }
    return 0;
}

void checkpoint_close(checkpoint *ck) {
    free(ck->specs);
    free(ck->tensors);
    st_close(&ck->st);
    ck->specs = NULL;
    ck->tensors = NULL;
}
