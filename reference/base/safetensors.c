/* safetensors.c — the reader of safetensors checkpoints (see safetensors.h).
 * Each file is mmapped once; its JSON header is parsed with jansson and every
 * tensor entry is validated against the file before anything points into it.
 * Assumes a little-endian host, as the format's data does. */
#include "safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "regular_file.h"

/* A dimension larger than this cannot be real (2^40 elements of one axis);
 * the bound also keeps the numel product far from overflow checks' edges. */
#define ST_MAX_DIM ((int64_t)1 << 40)

typedef struct {
    uint64_t begin, end; /* byte offsets in the data section */
    int tensor;          /* index into st_set.tensors */
} span;

void st_format_shape(int ndim, const int64_t *shape, char *buf, size_t size) {
    size_t used = 0;
    if (size == 0) return;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (used < size) snprintf(buf + used, size - used, "]");
}

int64_t st_numel(const st_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = sp_xcalloc(n, 1, "a string");
    memcpy(p, s, n);
    return p;
}

static int map_file(const char *path, void **map, size_t *size, sp_error *err) {
    int fd = regular_open(path, NULL, err);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return sp_fail(err, "%s: cannot stat: %s", path, strerror(e));
    }
    *size = (size_t)st.st_size;
    *map = NULL;
    if (*size > 0) {
        void *p = mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            return sp_fail(err, "%s: cannot mmap %zu bytes: %s", path, *size, strerror(e));
        }
        *map = p;
    }
    close(fd);
    return 0;
}

/* Appends a slot to s->tensors and returns it (zeroed). */
static st_tensor *push_tensor(st_set *s, int *cap) {
    if (s->n_tensors == *cap) {
        int ncap = *cap ? 2 * *cap : 64;
        st_tensor *t = realloc(s->tensors, (size_t)ncap * sizeof *t);
        if (!t) {
            fprintf(stderr, "specula: out of memory growing the tensor table to %d entries\n", ncap);
            exit(2);
        }
        s->tensors = t;
        *cap = ncap;
    }
    st_tensor *t = &s->tensors[s->n_tensors++];
    memset(t, 0, sizeof *t);
    return t;
}

static int parse_metadata(st_set *s, const char *path, json_t *meta, sp_error *err) {
    if (!json_is_object(meta)) return sp_fail(err, "%s: \"__metadata__\" must be an object of strings", path);
    size_t n = json_object_size(meta), i = 0;
    s->meta_keys = sp_xcalloc(n, sizeof *s->meta_keys, "metadata keys");
    s->meta_values = sp_xcalloc(n, sizeof *s->meta_values, "metadata values");
    const char *key;
    json_t *v;
    json_object_foreach(meta, key, v) {
        if (!json_is_string(v)) return sp_fail(err, "%s: \"__metadata__\" entry \"%s\" must be a string", path, key);
        s->meta_keys[i] = xstrdup(key);
        s->meta_values[i] = xstrdup(json_string_value(v));
        s->n_meta = (int)++i;
    }
    return 0;
}

/* Reads one integer in [0, limit] from a JSON value; -1 when it is not one. */
static int64_t json_nonneg(json_t *v, int64_t limit) {
    if (!json_is_integer(v)) return -1;
    json_int_t x = json_integer_value(v);
    return (x < 0 || x > limit) ? -1 : (int64_t)x;
}

/* Validates one header entry and fills t (except data, which needs the map). */
static int parse_entry(const char *path, const char *name, json_t *e, uint64_t data_len, st_tensor *t, span *sp,
                       sp_error *err) {
    if (!json_is_object(e))
        return sp_fail(err, "%s: tensor %s: header entry must be an object with dtype, shape, data_offsets", path,
                       name);
    json_t *jd = json_object_get(e, "dtype"), *js = json_object_get(e, "shape"),
           *jo = json_object_get(e, "data_offsets");
    if (!json_is_string(jd)) return sp_fail(err, "%s: tensor %s: \"dtype\" is missing or not a string", path, name);
    int dt = dtype_from_name(json_string_value(jd));
    if (dt < 0)
        return sp_fail(err, "%s: tensor %s has dtype \"%s\"; only F32, BF16 and F16 are supported", path, name,
                       json_string_value(jd));
    t->dtype = (dtype_t)dt;
    if (!json_is_array(js)) return sp_fail(err, "%s: tensor %s: \"shape\" is missing or not a list", path, name);
    if (json_array_size(js) > ST_MAX_DIMS)
        return sp_fail(err, "%s: tensor %s: shape has %zu dimensions, at most %d are supported", path, name,
                       json_array_size(js), ST_MAX_DIMS);
    t->ndim = (int)json_array_size(js);
    uint64_t numel = 1;
    for (int d = 0; d < t->ndim; d++) {
        json_t *v = json_array_get(js, (size_t)d);
        int64_t x = json_nonneg(v, ST_MAX_DIM);
        if (x < 0) {
            if (json_is_integer(v) && json_integer_value(v) < 0)
                return sp_fail(err, "%s: tensor %s: shape[%d] = %lld is negative", path, name, d,
                               (long long)json_integer_value(v));
            if (json_is_integer(v))
                return sp_fail(err, "%s: tensor %s: shape[%d] = %lld is absurd (more than 2^40)", path, name, d,
                               (long long)json_integer_value(v));
            return sp_fail(err, "%s: tensor %s: shape[%d] is not an integer", path, name, d);
        }
        t->shape[d] = x;
        /* the product can only pass 2^63 when no real file could hold it */
        if (x && numel > (UINT64_MAX >> 1) / (uint64_t)x)
            return sp_fail(err, "%s: tensor %s: shape has an absurd number of elements", path, name);
        numel *= (uint64_t)x;
    }
    /* nor may its byte count wrap: 2^62 float32 elements would make 0 bytes
     * and pass as the span [0, 0] */
    if (numel > (UINT64_MAX >> 1) / (uint64_t)dtype_size(t->dtype))
        return sp_fail(err, "%s: tensor %s: shape has an absurd number of elements", path, name);
    if (!json_is_array(jo) || json_array_size(jo) != 2)
        return sp_fail(err, "%s: tensor %s: \"data_offsets\" must be a list [begin, end]", path, name);
    int64_t b = json_nonneg(json_array_get(jo, 0), INT64_MAX), en = json_nonneg(json_array_get(jo, 1), INT64_MAX);
    if (b < 0 || en < 0)
        return sp_fail(err, "%s: tensor %s: \"data_offsets\" must hold two non-negative integers", path, name);
    if (b > en)
        return sp_fail(err, "%s: tensor %s: data_offsets [%lld, %lld] end before they begin", path, name, (long long)b,
                       (long long)en);
    if ((uint64_t)en > data_len)
        return sp_fail(err,
                       "%s: tensor %s: data_offsets [%lld, %lld] run past the end of the data section (%llu bytes); "
                       "the file may be truncated",
                       path, name, (long long)b, (long long)en, (unsigned long long)data_len);
    uint64_t want = numel * (uint64_t)dtype_size(t->dtype);
    if ((uint64_t)(en - b) != want) {
        char shape[160];
        st_format_shape(t->ndim, t->shape, shape, sizeof shape);
        return sp_fail(err, "%s: tensor %s: data_offsets [%lld, %lld] span %lld bytes, expected %llu (%s %s)", path,
                       name, (long long)b, (long long)en, (long long)(en - b), (unsigned long long)want, shape,
                       dtype_name(t->dtype));
    }
    t->nbytes = (size_t)want;
    sp->begin = (uint64_t)b;
    sp->end = (uint64_t)en;
    return 0;
}

static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* Parses the header of file `fi` (already mapped) and appends its tensors. */
static int parse_file(st_set *s, int fi, int *cap, int want_meta, sp_error *err) {
    const char *path = s->paths[fi];
    const unsigned char *base = s->maps[fi];
    size_t size = s->sizes[fi];
    if (size < 8)
        return sp_fail(err, "%s: truncated: %zu bytes, but a safetensors file starts with an 8-byte header length",
                       path, size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | base[i];
    if (hlen > size - 8)
        return sp_fail(err, "%s: header length %llu runs past the end of the file (%zu bytes, so at most %zu)", path,
                       (unsigned long long)hlen, size, size - 8);
    json_error_t jerr;
    json_t *root = json_loadb((const char *)base + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return sp_fail(err, "%s: header is not valid JSON (at byte %d of %llu: %s)", path, jerr.position,
                       (unsigned long long)hlen, jerr.text);
    int rc = -1;
    span *spans = NULL;
    if (!json_is_object(root)) {
        sp_fail(err, "%s: header is not a JSON object", path);
        goto done;
    }
    const uint64_t data_len = size - 8 - hlen;
    const unsigned char *data = base + 8 + hlen;
    spans = sp_xcalloc(json_object_size(root), sizeof *spans, "tensor spans");
    int n_spans = 0;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "__metadata__") == 0) {
            if (want_meta && parse_metadata(s, path, v, err)) goto done;
            continue;
        }
        st_tensor *t = push_tensor(s, cap);
        t->name = xstrdup(key);
        t->file = fi;
        span *sp = &spans[n_spans];
        sp->tensor = s->n_tensors - 1;
        if (parse_entry(path, key, v, data_len, t, sp, err)) goto done;
        t->data = data + sp->begin;
        n_spans++;
    }
    qsort(spans, (size_t)n_spans, sizeof *spans, cmp_span);
    /* Sorted by begin, a tensor overlaps another exactly when it starts
     * before the furthest end seen so far. Empty tensors occupy no bytes. */
    int prev = -1;
    for (int i = 0; i < n_spans; i++) {
        if (spans[i].begin == spans[i].end) continue;
        if (prev >= 0 && spans[i].begin < spans[prev].end) {
            const span *a = &spans[prev], *b = &spans[i];
            sp_fail(err, "%s: tensors %s [%llu, %llu) and %s [%llu, %llu) overlap in the data section", path,
                    s->tensors[a->tensor].name, (unsigned long long)a->begin, (unsigned long long)a->end,
                    s->tensors[b->tensor].name, (unsigned long long)b->begin, (unsigned long long)b->end);
            goto done;
        }
        if (prev < 0 || spans[i].end > spans[prev].end) prev = i;
    }
    rc = 0;
done:
    free(spans);
    json_decref(root);
    return rc;
}

static int cmp_tensor(const void *a, const void *b) {
    return strcmp(((const st_tensor *)a)->name, ((const st_tensor *)b)->name);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int add_file(st_set *s, const char *path) {
    int i = s->n_files++;
    s->paths = realloc(s->paths, (size_t)s->n_files * sizeof *s->paths);
    s->maps = realloc(s->maps, (size_t)s->n_files * sizeof *s->maps);
    s->sizes = realloc(s->sizes, (size_t)s->n_files * sizeof *s->sizes);
    if (!s->paths || !s->maps || !s->sizes) {
        fprintf(stderr, "specula: out of memory listing checkpoint files\n");
        exit(2);
    }
    s->paths[i] = xstrdup(path);
    s->maps[i] = NULL;
    s->sizes[i] = 0;
    return i;
}

/* The index: {"metadata": {...}, "weight_map": {tensor: shard file}}. Opens
 * every shard once (in name order), then checks that each listed tensor is
 * in the shard the index names. */
static int open_index(st_set *s, const char *index, int *cap, sp_error *err) {
    json_error_t jerr;
    FILE *f = regular_fopen(index, NULL, err);
    if (!f) return -1;
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
    fclose(f);
    if (!root) return sp_fail(err, "%s: not valid JSON (line %d: %s)", index, jerr.line, jerr.text);
    int rc = -1;
    char **shards = NULL;
    size_t n_shards = 0;
    json_t *map = json_object_get(root, "weight_map");
    if (!json_is_object(map) || json_object_size(map) == 0) {
        sp_fail(err, "%s: needs a non-empty \"weight_map\" object (tensor name -> shard file)", index);
        goto done;
    }
    const char *name;
    json_t *v;
    shards = sp_xcalloc(json_object_size(map), sizeof *shards, "shard names");
    json_object_foreach(map, name, v) {
        if (!json_is_string(v) || !*json_string_value(v)) {
            sp_fail(err, "%s: weight_map entry for tensor %s must be a file name", index, name);
            goto done;
        }
        /* a shard is a file of the model's folder: no path (../../etc/passwd would be opened) */
        if (strchr(json_string_value(v), '/') || !strcmp(json_string_value(v), "..") ||
            !strcmp(json_string_value(v), ".")) {
            sp_fail(err, "%s: weight_map places tensor %s in \"%s\": a shard must be a file name in the model's folder",
                    index, name, json_string_value(v));
            goto done;
        }
        shards[n_shards++] = (char *)json_string_value(v);
    }
    qsort(shards, n_shards, sizeof *shards, cmp_str);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", index);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[1] = '\0';
    else
        dir[0] = '\0';
    for (size_t i = 0; i < n_shards; i++) {
        if (i && strcmp(shards[i], shards[i - 1]) == 0) continue;
        char path[8192];
        snprintf(path, sizeof path, "%s%s", dir, shards[i]);
        int fi = add_file(s, path);
        if (map_file(path, &s->maps[fi], &s->sizes[fi], err)) {
            const char *example = "";
            json_object_foreach(map, name, v) if (strcmp(json_string_value(v), shards[i]) == 0) {
                example = name;
                break;
            }
            sp_wrap(err, "%s places tensor %s in shard %s: ", index, example, shards[i]);
            goto done;
        }
        if (parse_file(s, fi, cap, fi == 0, err)) goto done;
    }
    if (s->n_tensors > 1) qsort(s->tensors, (size_t)s->n_tensors, sizeof *s->tensors, cmp_tensor);
    for (int i = 1; i < s->n_tensors; i++)
        if (strcmp(s->tensors[i].name, s->tensors[i - 1].name) == 0) {
            sp_fail(err, "tensor %s is stored twice: in %s and in %s", s->tensors[i].name,
                    s->paths[s->tensors[i - 1].file], s->paths[s->tensors[i].file]);
            goto done;
        }
    json_object_foreach(map, name, v) {
        const st_tensor *t = st_find(s, name);
        const char *want = json_string_value(v);
        if (!t) {
            sp_fail(err, "%s%s: tensor %s, which %s places in this shard, is not in it", dir, want, name, index);
            goto done;
        }
        const char *have = strrchr(s->paths[t->file], '/');
        have = have ? have + 1 : s->paths[t->file];
        if (strcmp(s->paths[t->file] + strlen(dir), want) != 0) {
            sp_fail(err, "tensor %s: %s places it in %s, but it is in %s", name, index, want, have);
            goto done;
        }
    }
    rc = 0;
done:
    free(shards);
    json_decref(root);
    return rc;
}

int st_open(st_set *s, const char *path, sp_error *err) {
    memset(s, 0, sizeof *s);
    int cap = 0, rc;
    struct stat st;
    if (stat(path, &st) != 0) return sp_fail(err, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        char index[4096], single[4096];
        snprintf(index, sizeof index, "%s/model.safetensors.index.json", path);
        snprintf(single, sizeof single, "%s/model.safetensors", path);
        if (access(index, F_OK) == 0) {
            rc = open_index(s, index, &cap, err);
        } else if (access(single, F_OK) == 0) {
            int fi = add_file(s, single);
            rc = map_file(single, &s->maps[fi], &s->sizes[fi], err) || parse_file(s, fi, &cap, 1, err) ? -1 : 0;
        } else {
            return sp_fail(err, "%s: neither model.safetensors nor model.safetensors.index.json is there", path);
        }
    } else if (ends_with(path, ".json")) {
        rc = open_index(s, path, &cap, err);
    } else {
        int fi = add_file(s, path);
        rc = map_file(path, &s->maps[fi], &s->sizes[fi], err) || parse_file(s, fi, &cap, 1, err) ? -1 : 0;
    }
    if (rc == 0 && s->n_files == 1 && s->n_tensors > 1) {
        /* a single file cannot repeat a name (duplicate keys are rejected by
         * the JSON parser), so sorting is all st_find needs */
        qsort(s->tensors, (size_t)s->n_tensors, sizeof *s->tensors, cmp_tensor);
    }
    if (rc) st_close(s);
    return rc;
}

int st_open_buffer(st_set *s, const void *data, size_t size, const char *origin, sp_error *err) {
    memset(s, 0, sizeof *s);
    int cap = 0, fi = add_file(s, origin);
    s->maps[fi] = (void *)data; /* never written: the set only reads its maps */
    s->sizes[fi] = size;
    s->borrowed = 1;
    if (parse_file(s, fi, &cap, 1, err)) {
        st_close(s);
        return -1;
    }
    if (s->n_tensors > 1) qsort(s->tensors, (size_t)s->n_tensors, sizeof *s->tensors, cmp_tensor);
    return 0;
}

void st_close(st_set *s) {
    for (int i = 0; i < s->n_files; i++) {
        if (s->maps && s->maps[i] && !s->borrowed) munmap(s->maps[i], s->sizes[i]);
        free(s->paths[i]);
    }
    for (int i = 0; i < s->n_tensors; i++) free(s->tensors[i].name);
    for (int i = 0; i < s->n_meta; i++) {
        free(s->meta_keys[i]);
        free(s->meta_values[i]);
    }
    free(s->paths);
    free(s->maps);
    free(s->sizes);
    free(s->tensors);
    free(s->meta_keys);
    free(s->meta_values);
    memset(s, 0, sizeof *s);
}

const st_tensor *st_find(const st_set *s, const char *name) {
    if (!s->n_tensors) return NULL;
    st_tensor key;
    key.name = (char *)name;
    return bsearch(&key, s->tensors, (size_t)s->n_tensors, sizeof *s->tensors, cmp_tensor);
}

const char *st_metadata(const st_set *s, const char *key) {
    for (int i = 0; i < s->n_meta; i++)
        if (strcmp(s->meta_keys[i], key) == 0) return s->meta_values[i];
    return NULL;
}
