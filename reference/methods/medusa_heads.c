/* medusa_heads.c — Medusa heads: build, load, save, the base checkpoint's
 * digest, and the forward of one head (see medusa.h). Tensor names follow
 * the Medusa repository: medusa_head.{i}.{j}.linear.{weight,bias} for the
 * ResBlocks and medusa_head.{i}.{n_layers}.weight for the projection. */
#include "medusa.h"

#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "safetensors.h"

int medusa_build(medusa_heads *h, int n_heads, int n_layers, int D, int V, int own_proj, sp_error *err) {
    memset(h, 0, sizeof *h);
    if (n_heads < 1 || n_heads > MEDUSA_MAX_HEADS)
        return sp_fail(err, "%d Medusa heads: expected 1 to %d", n_heads, MEDUSA_MAX_HEADS);
    if (n_layers < 1 || n_layers > MEDUSA_MAX_LAYERS)
        return sp_fail(err, "%d ResBlocks per Medusa head: expected 1 to %d", n_layers, MEDUSA_MAX_LAYERS);
    if (D < 1 || V < 1) return sp_fail(err, "Medusa heads need D ≥ 1 and V ≥ 1, got D %d, V %d", D, V);
    h->n_heads = n_heads, h->n_layers = n_layers, h->D = D, h->V = V;
    h->own_proj = own_proj != 0;
    h->storage_bytes = 4;
    size_t per_block = (size_t)D * D + D;
    h->arena_floats = (size_t)n_heads * n_layers * per_block + (h->own_proj ? (size_t)n_heads * V * D : 0);
    h->arena = sp_xcalloc(h->arena_floats, sizeof(float), "Medusa head weights");
    h->blocks = sp_xcalloc((size_t)n_heads * n_layers, sizeof *h->blocks, "Medusa ResBlocks");
    h->proj = sp_xcalloc((size_t)n_heads, sizeof *h->proj, "Medusa projections");
    float *next = h->arena;
    for (int i = 0; i < n_heads * n_layers; i++) {
        h->blocks[i].w = next, next += (size_t)D * D;
        h->blocks[i].b = next, next += D;
    }
    for (int i = 0; i < n_heads && h->own_proj; i++) {
        h->proj[i] = next;
        next += (size_t)V * D;
    }
    return 0;
}

void medusa_share_lm_head(medusa_heads *h, const float *lm_head) {
    if (h->own_proj) return;
    for (int i = 0; i < h->n_heads; i++) h->proj[i] = lm_head;
}

void medusa_free(medusa_heads *h) {
    free(h->arena);
    free(h->blocks);
    free(h->proj);
    memset(h, 0, sizeof *h);
}

/* ---- the base checkpoint's digest -------------------------------------------- */

int medusa_base_sha256(const char *model_dir, char *hex, sp_error *err) {
    st_set st;
    if (st_open(&st, model_dir, err)) return sp_wrap(err, "hashing the base checkpoint: ");
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    /* st_open lists a single file, or the index's shards sorted by name */
    for (int i = 0; ok && i < st.n_files; i++) ok = EVP_DigestUpdate(ctx, st.maps[i], st.sizes[i]);
    ok = ok && EVP_DigestFinal_ex(ctx, digest, &len) && len == 32;
    EVP_MD_CTX_free(ctx);
    st_close(&st);
    if (!ok) return sp_fail(err, "%s: SHA-256 of the safetensors files failed (libcrypto)", model_dir);
    for (unsigned int i = 0; i < len; i++) snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    return 0;
}

/* ---- loading ------------------------------------------------------------------- */

static int read_tensor(const st_set *st, const char *path, const char *name, int64_t rows, int64_t cols, float *dst,
                       sp_error *err) {
    const st_tensor *t = st_find(st, name);
    if (!t) return sp_fail(err, "%s: tensor %s is missing", path, name);
    int ndim = cols ? 2 : 1;
    int64_t want[2] = {rows, cols};
    int same = t->ndim == ndim && t->shape[0] == rows && (ndim == 1 || t->shape[1] == cols);
    if (!same) {
        char w[64], have[96];
        st_format_shape(ndim, want, w, sizeof w);
        st_format_shape(t->ndim, t->shape, have, sizeof have);
        return sp_fail(err, "%s: tensor %s: expected %s, the file has %s", path, name, w, have);
    }
    size_t n = (size_t)st_numel(t);
    dtype_to_f32(dst, t->data, t->dtype, n);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(dst[i]))
            return sp_fail(err, "%s: tensor %s: element %zu is %s; weights must be finite", path, name, i,
                           isnan(dst[i]) ? "NaN" : "infinite");
    return 0;
}

/* A positive integer from "__metadata__", or -1 with the error filled. */
static int meta_int(const st_set *st, const char *path, const char *key, int required, int lo, int hi, sp_error *err) {
    const char *v = st_metadata(st, key);
    if (!v) {
        if (required) sp_fail(err, "%s: \"__metadata__\" has no %s entry", path, key);
        return required ? -1 : 0;
    }
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < lo || x > hi) {
        sp_fail(err, "%s: metadata %s = \"%s\": expected an integer in [%d, %d]", path, key, v, lo, hi);
        return -1;
    }
    return (int)x;
}

/* Counts head 0's ResBlocks: medusa_head.0.{j}.linear.weight for j = 0, 1, … */
static int count_layers(const st_set *st) {
    char name[128];
    int j = 0;
    for (;; j++) {
        snprintf(name, sizeof name, "medusa_head.0.%d.linear.weight", j);
        if (!st_find(st, name) || j > MEDUSA_MAX_LAYERS) return j;
    }
}

int medusa_load(medusa_heads *h, const char *path, const medusa_base *base, int ignore_base, sp_error *err) {
    memset(h, 0, sizeof *h);
    st_set st;
    if (st_open(&st, path, err)) return sp_wrap(err, "loading Medusa heads: ");
    const int rc = medusa_load_set(h, &st, path, base, ignore_base, err);
    st_close(&st);
    return rc;
}

int medusa_load_set(medusa_heads *h, const st_set *st, const char *path, const medusa_base *base, int ignore_base,
                    sp_error *err) {
    memset(h, 0, sizeof *h);
    const int D = base->D, V = base->V;
    int rc = -1;
    const char *sha = st_metadata(st, "base_sha256");
    int n_heads = meta_int(st, path, "medusa_num_heads", 1, 1, MEDUSA_MAX_HEADS, err);
    int n_layers_meta = n_heads < 0 ? -1 : meta_int(st, path, "medusa_num_layers", 0, 1, MEDUSA_MAX_LAYERS, err);
    if (n_heads < 0 || n_layers_meta < 0) goto done;
    if (!sha || strlen(sha) != 64 || strspn(sha, "0123456789abcdef") != 64) {
        sp_fail(err,
                "%s: \"__metadata__\" needs base_sha256, the 64 lower-case hex digits of the base checkpoint's "
                "SHA-256 (found %s)",
                path, sha ? sha : "none");
        goto done;
    }
    int n_layers = count_layers(st);
    if (n_layers < 1 || n_layers > MEDUSA_MAX_LAYERS) {
        sp_fail(err, "%s: head 0 has %d ResBlocks (medusa_head.0.{j}.linear.weight): expected 1 to %d", path, n_layers,
                MEDUSA_MAX_LAYERS);
        goto done;
    }
    if (n_layers_meta && n_layers_meta != n_layers) {
        sp_fail(err, "%s: metadata says %d ResBlocks per head, head 0 has %d", path, n_layers_meta, n_layers);
        goto done;
    }
    char name[128];
    snprintf(name, sizeof name, "medusa_head.%d.0.linear.weight", n_heads);
    if (st_find(st, name)) {
        sp_fail(err, "%s: metadata says %d heads but the file has %s", path, n_heads, name);
        goto done;
    }
    snprintf(name, sizeof name, "medusa_head.0.%d.weight", n_layers);
    const int own = st_find(st, name) != NULL;
    const char *shared = st_metadata(st, "medusa_shared_lm_head"); /* optional; when given, it must be the file's */
    if (shared && strcmp(shared, "true") && strcmp(shared, "false")) {
        sp_fail(err, "%s: metadata medusa_shared_lm_head = \"%s\": expected \"true\" or \"false\"", path, shared);
        goto done;
    }
    if (shared && (strcmp(shared, "true") == 0) == own) {
        sp_fail(err, "%s: metadata medusa_shared_lm_head = \"%s\", but the file %s %s", path, shared,
                own ? "has its own projection," : "has no projection of its own, no", name);
        goto done;
    }
    if (medusa_build(h, n_heads, n_layers, D, V, own, err)) goto done;
    if (!own && base->lm_head) medusa_share_lm_head(h, base->lm_head);
    for (int i = 0; i < n_heads; i++) {
        for (int j = 0; j < n_layers; j++) {
            medusa_resblock *b = &h->blocks[i * n_layers + j];
            snprintf(name, sizeof name, "medusa_head.%d.%d.linear.weight", i, j);
            if (read_tensor(st, path, name, D, D, b->w, err)) goto done;
            snprintf(name, sizeof name, "medusa_head.%d.%d.linear.bias", i, j);
            if (read_tensor(st, path, name, D, 0, b->b, err)) goto done;
        }
        snprintf(name, sizeof name, "medusa_head.%d.%d.linear.weight", i, n_layers);
        if (st_find(st, name)) {
            sp_fail(err, "%s: head %d has more ResBlocks than head 0 (%s exists): every head needs %d", path, i, name,
                    n_layers);
            goto done;
        }
        snprintf(name, sizeof name, "medusa_head.%d.%d.weight", i, n_layers);
        if (!own && st_find(st, name)) {
            sp_fail(err,
                    "%s: head %d has its own projection %s but head 0 shares the lm_head: all heads must do "
                    "the same",
                    path, i, name);
            goto done;
        }
        if (own && read_tensor(st, path, name, V, D, (float *)h->proj[i], err)) goto done;
    }
    h->storage_bytes = st->n_tensors ? dtype_size(st->tensors[0].dtype) : 4;
    snprintf(h->base_sha256, sizeof h->base_sha256, "%s", sha);
    snprintf(h->path, sizeof h->path, "%s", path);
    if (!ignore_base) {
        char actual[65];
        if (medusa_base_sha256(base->path, actual, err)) goto done;
        if (strcmp(actual, sha) != 0) {
            sp_fail(err,
                    "%s was trained against the base checkpoint with SHA-256 %s, but %s has SHA-256 %s: "
                    "these heads do not belong to this model (retrain them with specula medusa-train)",
                    path, sha, base->path, actual);
            goto done;
        }
    }
    rc = 0;
done:
    if (rc) medusa_free(h);
    return rc;
}

/* ---- saving ---------------------------------------------------------------------- */

int medusa_save(const medusa_heads *h, const char *path, dtype_t dtype, const char *base_sha256,
                const char *const *meta_keys, const char *const *meta_values, int n_meta, sp_error *err) {
    const int D = h->D, V = h->V;
    int n_t = h->n_heads * (2 * h->n_layers + h->own_proj);
    st_out_tensor *out = sp_xcalloc((size_t)n_t, sizeof *out, "Medusa output tensors");
    char(*names)[96] = sp_xcalloc((size_t)n_t, sizeof *names, "Medusa tensor names");
    int k = 0;
    for (int i = 0; i < h->n_heads; i++) {
        for (int j = 0; j < h->n_layers; j++) {
            const medusa_resblock *b = &h->blocks[i * h->n_layers + j];
            snprintf(names[k], sizeof names[k], "medusa_head.%d.%d.linear.weight", i, j);
            out[k] = (st_out_tensor){.name = names[k], .dtype = dtype, .ndim = 2, .shape = {D, D}, .data = b->w};
            k++;
            snprintf(names[k], sizeof names[k], "medusa_head.%d.%d.linear.bias", i, j);
            out[k] = (st_out_tensor){.name = names[k], .dtype = dtype, .ndim = 1, .shape = {D}, .data = b->b};
            k++;
        }
        if (h->own_proj) {
            snprintf(names[k], sizeof names[k], "medusa_head.%d.%d.weight", i, h->n_layers);
            out[k] = (st_out_tensor){.name = names[k], .dtype = dtype, .ndim = 2, .shape = {V, D}, .data = h->proj[i]};
            k++;
        }
    }
    char heads[16], layers[16];
    snprintf(heads, sizeof heads, "%d", h->n_heads);
    snprintf(layers, sizeof layers, "%d", h->n_layers);
    int n_keys = 5 + n_meta;
    const char **keys = sp_xcalloc((size_t)n_keys, sizeof *keys, "metadata keys");
    const char **values = sp_xcalloc((size_t)n_keys, sizeof *values, "metadata values");
    keys[0] = "format", values[0] = "pt";
    keys[1] = "base_sha256", values[1] = base_sha256;
    keys[2] = "medusa_num_heads", values[2] = heads;
    keys[3] = "medusa_num_layers", values[3] = layers;
    keys[4] = "medusa_shared_lm_head", values[4] = h->own_proj ? "false" : "true";
    for (int i = 0; i < n_meta; i++) keys[5 + i] = meta_keys[i], values[5 + i] = meta_values[i];
    int rc = st_write(path, out, n_t, keys, values, n_keys, err);
    free(keys);
    free(values);
    free(out);
    free(names);
    return rc;
}

double medusa_bytes_per_step(const medusa_heads *h, int target_storage_bytes) {
    double own = (double)h->n_heads * h->n_layers * ((double)h->D * h->D + h->D);
    if (h->own_proj) own += (double)h->n_heads * h->V * h->D;
    double bytes = own * h->storage_bytes;
    if (!h->own_proj) bytes += (double)h->V * h->D * target_storage_bytes;
    return bytes;
}

/* ---- forward ----------------------------------------------------------------------- */

void medusa_resblock_forward(const medusa_resblock *b, const float *x, float *out, int D) {
    op_matvec(out, b->w, x, D, D);
    for (int i = 0; i < D; i++) out[i] = x[i] + op_silu(out[i] + b->b[i]);
}

void medusa_head_forward(const medusa_heads *h, int i, const float *hidden, float *logits, float *scratch) {
    const int D = h->D;
    float *a = scratch, *b = scratch + D;
    const float *x = hidden;
    for (int j = 0; j < h->n_layers; j++) {
        float *y = j % 2 ? b : a;
        medusa_resblock_forward(&h->blocks[i * h->n_layers + j], x, y, D);
        x = y;
    }
    op_matvec(logits, h->proj[i], x, h->V, D);
}
