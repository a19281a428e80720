/* safetensors_write.c — the writer of safetensors files and sharded sets, byte for byte as the Python library
 * writes them: an 8-byte little-endian header length, a compact JSON header padded with spaces to a multiple of
 * 8, then the tensors back to back in the order given. Assumes a little-endian host. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "safetensors.h"

#define CHUNK 16384 /* elements converted per write */

static int64_t out_numel(const st_out_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

static int check_tensor(const char *path, const st_out_tensor *t, int i, sp_error *err) {
    if (!t->name || !*t->name) return sp_fail(err, "%s: tensor #%d has no name", path, i);
    if (strcmp(t->name, "__metadata__") == 0)
        return sp_fail(err, "%s: \"__metadata__\" is reserved and cannot name a tensor", path);
    if ((int)t->dtype < 0 || t->dtype >= DTYPE_COUNT)
        return sp_fail(err, "%s: tensor %s: dtype %d is not F32, BF16 or F16", path, t->name, (int)t->dtype);
    if (t->ndim < 0 || t->ndim > ST_MAX_DIMS)
        return sp_fail(err, "%s: tensor %s: %d dimensions, expected 0 to %d", path, t->name, t->ndim, ST_MAX_DIMS);
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] < 0 || t->shape[d] > ((int64_t)1 << 40))
            return sp_fail(err, "%s: tensor %s: shape[%d] = %lld is out of range [0, 2^40]", path, t->name, d,
                           (long long)t->shape[d]);
    if (!t->data && !t->fill && out_numel(t) > 0)
        return sp_fail(err, "%s: tensor %s: neither data nor a fill function was given", path, t->name);
    return 0;
}

/* The header object: "__metadata__" first, then the tensors in order. */
static json_t *build_header(const char *path, const st_out_tensor *t, int n, const char *const *mk,
                            const char *const *mv, int n_meta, sp_error *err) {
    json_t *root = json_object();
    if (n_meta > 0) {
        json_t *meta = json_object();
        json_object_set_new(root, "__metadata__", meta);
        for (int i = 0; i < n_meta; i++)
            if (!mk[i] || !mv[i] || json_object_set_new(meta, mk[i], json_string(mv[i]))) {
                sp_fail(err, "%s: metadata entry #%d is missing or not valid UTF-8", path, i);
                json_decref(root);
                return NULL;
            }
    }
    uint64_t offset = 0;
    for (int i = 0; i < n; i++) {
        if (check_tensor(path, &t[i], i, err)) goto fail;
        if (json_object_get(root, t[i].name)) {
            sp_fail(err, "%s: tensor %s is given twice", path, t[i].name);
            goto fail;
        }
        json_t *shape = json_array();
        for (int d = 0; d < t[i].ndim; d++) json_array_append_new(shape, json_integer(t[i].shape[d]));
        uint64_t nbytes = (uint64_t)out_numel(&t[i]) * (uint64_t)dtype_size(t[i].dtype);
        json_t *e = json_pack("{s:s, s:o, s:[I, I]}", "dtype", dtype_name(t[i].dtype), "shape", shape, "data_offsets",
                              (json_int_t)offset, (json_int_t)(offset + nbytes));
        if (!e || json_object_set_new(root, t[i].name, e)) {
            sp_fail(err, "%s: tensor name \"%s\" is not valid UTF-8", path, t[i].name);
            goto fail;
        }
        offset += nbytes;
    }
    return root;
fail:
    json_decref(root);
    return NULL;
}

/* Converts and writes one tensor's values through buf[CHUNK] and
 * out[4·CHUNK]. Returns 0, or the errno of the failure. */
static int write_values(FILE *f, const st_out_tensor *t, float *buf, unsigned char *out) {
    const int64_t numel = out_numel(t);
    const int es = dtype_size(t->dtype);
    for (int64_t off = 0; off < numel; off += CHUNK) {
        int64_t cnt = numel - off < CHUNK ? numel - off : CHUNK;
        const float *src = t->data ? t->data + off : buf;
        if (!t->data) t->fill(t->fill_ctx, buf, off, cnt);
        if (t->dtype == DTYPE_F32) {
            memcpy(out, src, (size_t)cnt * 4);
        } else {
            for (int64_t i = 0; i < cnt; i++) {
                uint16_t h = t->dtype == DTYPE_BF16 ? f32_to_bf16(src[i]) : f32_to_f16(src[i]);
                out[2 * i] = (unsigned char)h;
                out[2 * i + 1] = (unsigned char)(h >> 8);
            }
        }
        if (fwrite(out, (size_t)es, (size_t)cnt, f) != (size_t)cnt) return errno ? errno : EIO;
    }
    return 0;
}

typedef struct {
    const char *header;
    size_t header_len, padded_len;
    const st_out_tensor *tensors;
    int n;
} file_body;

static int write_file_body(FILE *f, const void *ctx) {
    const file_body *b = ctx;
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)((uint64_t)b->padded_len >> (8 * i));
    if (fwrite(len, 1, 8, f) != 8 || fwrite(b->header, 1, b->header_len, f) != b->header_len)
        return errno ? errno : EIO;
    for (size_t i = b->header_len; i < b->padded_len; i++)
        if (fputc(' ', f) == EOF) return errno ? errno : EIO;
    float *buf = sp_xcalloc(CHUNK, sizeof *buf, "conversion buffer");
    unsigned char *out = sp_xcalloc(CHUNK, 4, "conversion buffer");
    int e = 0;
    for (int i = 0; i < b->n && !e; i++) e = write_values(f, &b->tensors[i], buf, out);
    free(buf);
    free(out);
    return e;
}

int st_write(const char *path, const st_out_tensor *tensors, int n, const char *const *meta_keys,
             const char *const *meta_values, int n_meta, sp_error *err) {
    if (n < 0 || n_meta < 0) return sp_fail(err, "%s: negative tensor or metadata count", path);
    json_t *root = build_header(path, tensors, n, meta_keys, meta_values, n_meta, err);
    if (!root) return -1;
    char *header = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!header) return sp_fail(err, "%s: cannot serialise the header", path);
    file_body b = {header, strlen(header), 0, tensors, n};
    b.padded_len = (b.header_len + 7) & ~(size_t)7;
    int rc = atomic_write(path, write_file_body, &b, err);
    free(header);
    return rc;
}

/* ---- sharded sets ----------------------------------------------------------- */

static int write_text_body(FILE *f, const void *ctx) {
    const char *text = ctx;
    size_t n = strlen(text);
    return fwrite(text, 1, n, f) == n && fputc('\n', f) != EOF ? 0 : (errno ? errno : EIO);
}

/* Is name a shard of the form model-XXXXX-of-YYYYY.safetensors? Returns YYYYY or 0. */
static int shard_count_of(const char *name) {
    int i, of, used = -1;
    if (sscanf(name, "model-%5d-of-%5d.safetensors%n", &i, &of, &used) != 2 || used != (int)strlen(name)) return 0;
    return strlen(name) == strlen("model-00001-of-00001.safetensors") ? of : 0;
}

/* Removes what belongs to another checkpoint form in dir, so that the set
 * just written is the one st_open finds. */
static void remove_stale(const char *dir, int n_shards) {
    char path[4200];
    if (n_shards == 1) {
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
        unlink(path);
    } else {
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        unlink(path);
    }
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int of = shard_count_of(e->d_name);
        if (of && of != n_shards) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    }
    closedir(d);
}

int st_write_sharded_meta(const char *dir, const st_out_tensor *tensors, int n, int n_shards,
                          const char *const *meta_keys, const char *const *meta_values, int n_meta, sp_error *err) {
    if (n_shards < 1 || n_shards > 99999)
        return sp_fail(err, "%s: %d shards requested, expected 1 to 99999", dir, n_shards);
    if (n_shards > 1 && n_shards > n)
        return sp_fail(err, "%s: cannot split %d tensors into %d non-empty shards", dir, n, n_shards);
    if (n_meta < 0) return sp_fail(err, "%s: negative metadata count", dir);
    /* a name given twice would land in two shards; refuse before writing anything */
    json_t *seen = json_object();
    for (int i = 0; i < n; i++) {
        if (!tensors[i].name || json_object_get(seen, tensors[i].name)) {
            json_decref(seen);
            return sp_fail(err, "%s: tensor %s is given twice (or has no name)", dir,
                           tensors[i].name ? tensors[i].name : "#?");
        }
        json_object_set_new(seen, tensors[i].name, json_true());
    }
    json_decref(seen);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return sp_fail(err, "%s: cannot create: %s", dir, strerror(errno));

    /* every file says "format": "pt" unless the caller gives a format */
    const char **mk = sp_xcalloc((size_t)n_meta + 1, sizeof *mk, "metadata keys");
    const char **mv = sp_xcalloc((size_t)n_meta + 1, sizeof *mv, "metadata values");
    int nm = 0, has_format = 0;
    for (int i = 0; i < n_meta; i++) has_format |= meta_keys[i] && strcmp(meta_keys[i], "format") == 0;
    if (!has_format) mk[nm] = "format", mv[nm++] = "pt";
    for (int i = 0; i < n_meta; i++) mk[nm] = meta_keys[i], mv[nm++] = meta_values[i];

    int rc = -1;
    char path[4200];
    json_t *map = NULL;
    if (n_shards == 1) {
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        rc = st_write(path, tensors, n, mk, mv, nm, err);
        goto done;
    }
    /* Consecutive runs of tensors, cut where the running byte count passes
     * k/n_shards of the total, but never leaving a later shard empty. */
    uint64_t total = 0, params = 0, before = 0;
    for (int i = 0; i < n; i++) {
        total += (uint64_t)out_numel(&tensors[i]) * (uint64_t)dtype_size(tensors[i].dtype);
        params += (uint64_t)out_numel(&tensors[i]);
    }
    map = json_object();
    int start = 0, k = 0;
    for (int i = 0; i <= n; i++) {
        int cut = i == n;
        if (!cut && i > start && k < n_shards - 1) {
            uint64_t bytes = (uint64_t)out_numel(&tensors[i]) * (uint64_t)dtype_size(tensors[i].dtype);
            int must = n - i == n_shards - 1 - k;
            int want = (double)(before + bytes / 2) > (double)total * (k + 1) / n_shards;
            cut = must || want;
        }
        if (cut) {
            char name[64];
            snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", k + 1, n_shards);
            snprintf(path, sizeof path, "%s/%s", dir, name);
            if (st_write(path, tensors + start, i - start, mk, mv, nm, err)) goto done;
            for (int j = start; j < i; j++) json_object_set_new(map, tensors[j].name, json_string(name));
            start = i, k++;
        }
        if (i < n) before += (uint64_t)out_numel(&tensors[i]) * (uint64_t)dtype_size(tensors[i].dtype);
    }
    json_t *index = json_pack("{s:{s:I, s:I}, s:O}", "metadata", "total_parameters", (json_int_t)params, "total_size",
                              (json_int_t)total, "weight_map", map);
    char *text = json_dumps(index, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(index);
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    rc = text ? atomic_write(path, write_text_body, text, err) : sp_fail(err, "%s: cannot serialise", path);
    free(text);
done:
    if (rc == 0) remove_stale(dir, n_shards);
    json_decref(map);
    free(mk);
    free(mv);
    return rc;
}

int st_write_sharded(const char *dir, const st_out_tensor *tensors, int n, int n_shards, sp_error *err) {
    return st_write_sharded_meta(dir, tensors, n, n_shards, NULL, NULL, 0, err);
}
