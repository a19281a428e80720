/* safetensors.h — safetensors checkpoints, one file or a sharded set with model.safetensors.index.json: read
 * through one mmap per file, and written as the Python library writes them. Little-endian hosts. */
#ifndef SPECULA_SAFETENSORS_H
#define SPECULA_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "error.h"

#define ST_MAX_DIMS 8

typedef struct {
    char *name;
    dtype_t dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    const void *data; /* into the file's mapping, little-endian, maybe unaligned */
    size_t nbytes;
    int file; /* index into st_set.paths */
} st_tensor;

typedef struct {
    int n_files;
    char **paths;  /* [n_files] */
    void **maps;   /* [n_files] mmap base */
    size_t *sizes; /* [n_files] */
    int n_tensors;
    st_tensor *tensors; /* [n_tensors], sorted by name */
    int n_meta;
    char **meta_keys;   /* [n_meta] "__metadata__" string entries of the first file */
    char **meta_values; /* [n_meta] */
    int borrowed;       /* maps[0] is the caller's buffer (st_open_buffer): st_close leaves it */
} st_set;

/* path: a model directory (model.safetensors.index.json, else
 * model.safetensors), a .safetensors file, or an index .json file. Tensors
 * point into the mapping. Every structural problem (truncation, header past
 * the end, overlapping or out-of-range offsets, unknown dtype, a shard the
 * index names but that is missing) is an error naming the file and tensor. */
int st_open(st_set *s, const char *path, sp_error *err);
/* One safetensors file already in memory, data[size], with the same checks;
 * tensors point into data, which must outlive the set. `origin` stands for
 * the path in messages. For bytes that never were a file (the fuzzer). */
int st_open_buffer(st_set *s, const void *data, size_t size, const char *origin, sp_error *err);
void st_close(st_set *s);

/* NULL when absent. */
const st_tensor *st_find(const st_set *s, const char *name);
/* NULL when absent. */
const char *st_metadata(const st_set *s, const char *key);
int64_t st_numel(const st_tensor *t);

/* Writes "[6144, 5120]" (the form error messages use) into buf[size]. */
void st_format_shape(int ndim, const int64_t *shape, char *buf, size_t size);

/* Writing: one tensor given as float32, stored as `dtype`. The values come
 * from `data` or, when data is NULL, from fill(fill_ctx, dst, offset, count),
 * which writes elements [offset, offset + count) of the row-major tensor into
 * dst; the writer calls it in chunks, so a tensor larger than memory can be
 * produced on the fly (the model generator does this). */
typedef struct {
    const char *name;
    dtype_t dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    const float *data; /* [numel] */
    void (*fill)(void *fill_ctx, float *dst, int64_t offset, int64_t count);
    void *fill_ctx;
} st_out_tensor;

/* Writes one .safetensors file (tensors in the order given, 8-byte aligned
 * header, as the Python library writes). meta: n_meta key/value string pairs
 * for "__metadata__" (may be 0). Writes to a temporary name and renames, so a
 * failed write never leaves a half file under the final name. */
int st_write(const char *path, const st_out_tensor *tensors, int n, const char *const *meta_keys,
             const char *const *meta_values, int n_meta, sp_error *err);

/* Writes the tensors across n_shards files DIR/model-0000i-of-0000N.safetensors
 * plus DIR/model.safetensors.index.json (n_shards = 1 writes
 * DIR/model.safetensors and no index). Consecutive tensors go to the same
 * shard, split so the shards hold about equal bytes. Every file carries the
 * "__metadata__" entry "format": "pt" that transformers expects of a PyTorch
 * checkpoint. DIR is created when missing; a checkpoint already there in the
 * other form (single file vs shards) is removed, so st_open cannot pick up a
 * stale one. */
int st_write_sharded(const char *dir, const st_out_tensor *tensors, int n, int n_shards, sp_error *err);

/* Same, with n_meta more "__metadata__" string pairs in every file. */
int st_write_sharded_meta(const char *dir, const st_out_tensor *tensors, int n, int n_shards,
                          const char *const *meta_keys, const char *const *meta_values, int n_meta, sp_error *err);

#endif
