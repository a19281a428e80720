/* test_safetensors.c — reader and writer of reference/safetensors*.c: round trips in all three dtypes, sharded sets
 * and metadata, and one broken file per validation rule, whose message must name the file, the tensor and the
 * problem. */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "safetensors.h"

/* ---- helpers ------------------------------------------------------------------ */

/* Writes 8-byte length + header + data. hlen overrides the length field when
 * not (uint64_t)-1. */
static void write_raw(const char *path, const char *header, uint64_t hlen, const void *data, size_t n) {
    size_t h = strlen(header);
    if (hlen == (uint64_t)-1) hlen = h;
    unsigned char *buf = calloc(8 + h + n + 1, 1);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(hlen >> (8 * i));
    memcpy(buf + 8, header, h);
    if (n) memcpy(buf + 8 + h, data, n);
    harness_write_file(path, buf, 8 + h + n);
    free(buf);
}

/* st_open(path) must fail, and the message must contain every needle. */
static void expect_error(const char *path, ...) {
    st_set s;
    sp_error err = {{0}};
    int rc = st_open(&s, path, &err);
    ck_assert_msg(rc == -1, "st_open(%s) accepted a broken checkpoint", path);
    ck_assert_msg(s.n_tensors == 0 && s.tensors == NULL, "a failed st_open left tensors behind");
    va_list ap;
    va_start(ap, path);
    for (const char *needle; (needle = va_arg(ap, const char *)) != NULL;)
        ck_assert_msg(strstr(err.msg, needle) != NULL, "message \"%s\" lacks \"%s\"", err.msg, needle);
    va_end(ap);
}

static float *ramp(int n, float scale) {
    float *v = malloc((size_t)n * sizeof *v);
    for (int i = 0; i < n; i++) v[i] = scale * (float)(i - n / 3) + 0.1f * (float)(i % 7);
    return v;
}

static const char F32_4[] = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}";
static const float FOUR[4] = {1, 2, 3, 4};

/* ---- round trips ------------------------------------------------------------------ */

START_TEST(test_round_trip_all_dtypes) {
    char dir[256], path[320];
    harness_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/t.safetensors", dir);
    float *a = ramp(60, 0.37f), *b = ramp(7, -1e-3f);
    /* values that round differently per dtype: ties to even, f16 overflow
     * and underflow, a value below bf16's resolution at 1 */
    float c[8] = {1.00390625f, 1.01171875f, 1.0f + 0x1p-11f, 70000.0f, 0x1p-25f, -0.0f, 3.0e-6f, 1.0f + 0x1p-9f};
    for (int dt = 0; dt < DTYPE_COUNT; dt++) {
        st_out_tensor t[4] = {
            {.name = "layer.a", .dtype = (dtype_t)dt, .ndim = 3, .shape = {3, 4, 5}, .data = a},
            {.name = "b", .dtype = (dtype_t)dt, .ndim = 1, .shape = {7}, .data = b},
            {.name = "c.edge", .dtype = (dtype_t)dt, .ndim = 2, .shape = {2, 4}, .data = c},
            {.name = "empty", .dtype = (dtype_t)dt, .ndim = 2, .shape = {0, 5}, .data = NULL},
        };
        sp_error err;
        ck_assert_msg(st_write(path, t, 4, NULL, NULL, 0, &err) == 0, "%s", err.msg);
        st_set s;
        ck_assert_msg(st_open(&s, path, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(s.n_tensors, 4);
        ck_assert_int_eq(s.n_files, 1);
        for (int i = 1; i < s.n_tensors; i++) ck_assert(strcmp(s.tensors[i - 1].name, s.tensors[i].name) < 0);
        for (int k = 0; k < 4; k++) {
            const st_tensor *r = st_find(&s, t[k].name);
            ck_assert_msg(r != NULL, "%s missing", t[k].name);
            ck_assert_int_eq(r->dtype, dt);
            ck_assert_int_eq(r->ndim, t[k].ndim);
            for (int d = 0; d < r->ndim; d++) ck_assert_int_eq(r->shape[d], t[k].shape[d]);
            int64_t n = st_numel(r);
            ck_assert_uint_eq(r->nbytes, (size_t)n * (size_t)dtype_size((dtype_t)dt));
            float *back = malloc((size_t)(n ? n : 1) * sizeof *back);
            dtype_to_f32(back, r->data, r->dtype, (size_t)n);
            for (int64_t i = 0; i < n; i++) {
                float want = t[k].data[i];
                if (dt == DTYPE_BF16) want = bf16_to_f32(f32_to_bf16(want));
                if (dt == DTYPE_F16) want = f16_to_f32(f32_to_f16(want));
                ck_assert_msg(memcmp(&back[i], &want, 4) == 0, "%s %s[%lld]: %a != %a", dtype_name((dtype_t)dt),
                              t[k].name, (long long)i, (double)back[i], (double)want);
            }
            free(back);
        }
        /* the rounding itself, spelled out for c = {tie down, tie up, …} */
        const st_tensor *r = st_find(&s, "c.edge");
        float back[8];
        dtype_to_f32(back, r->data, r->dtype, 8);
        if (dt == DTYPE_BF16) {
            ck_assert(back[0] == 1.0f && back[1] == 1.015625f && back[2] == 1.0f && back[7] == 1.0f);
        } else if (dt == DTYPE_F16) {
            ck_assert(back[2] == 1.0f && isinf(back[3]) && back[4] == 0.0f && back[7] == 1.0f + 0x1p-9f);
            ck_assert(signbit(back[5]));
        } else {
            ck_assert(back[0] == 1.00390625f && back[3] == 70000.0f);
        }
        ck_assert_ptr_null(st_find(&s, "absent"));
        ck_assert_ptr_null(st_find(&s, "c"));
        st_close(&s);
    }
    free(a);
    free(b);
    harness_rmtree(dir);
}
END_TEST

/* The header as the Python library writes it: length a multiple of 8, padded
 * with spaces, data right after; tensors in the order given. */
START_TEST(test_header_layout) {
    char dir[256], path[320];
    harness_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/h.safetensors", dir);
    st_out_tensor t[2] = {{.name = "z", .dtype = DTYPE_F32, .ndim = 1, .shape = {4}, .data = FOUR},
                          {.name = "a", .dtype = DTYPE_BF16, .ndim = 1, .shape = {1}, .data = FOUR}};
    sp_error err;
    ck_assert_msg(st_write(path, t, 2, NULL, NULL, 0, &err) == 0, "%s", err.msg);
    FILE *f = fopen(path, "rb");
    unsigned char buf[512];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | buf[i];
    ck_assert_uint_eq(hlen % 8, 0);
    ck_assert_uint_eq(n, 8 + hlen + 16 + 2);
    const char *want = "{\"z\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                       "\"a\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[16,18]}}";
    ck_assert(memcmp(buf + 8, want, strlen(want)) == 0);
    for (size_t i = 8 + strlen(want); i < 8 + hlen; i++) ck_assert_int_eq(buf[i], ' ');
    ck_assert(memcmp(buf + 8 + hlen, FOUR, 16) == 0);
    /* no temporary file is left beside it */
    char tmp[400];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    ck_assert_int_ne(access(tmp, F_OK), 0);
    harness_rmtree(dir);
}
END_TEST

/* st_open_buffer reads the bytes of a file as st_open reads the file, its
 * tensors pointing into the caller's buffer, and refuses broken bytes with
 * the same message under the name it was given. */
START_TEST(test_open_buffer) {
    unsigned char buf[8 + sizeof F32_4 - 1 + 16];
    const size_t h = strlen(F32_4);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(buf + 8, F32_4, h);
    memcpy(buf + 8 + h, FOUR, 16);
    st_set s;
    sp_error err = {{0}};
    ck_assert_msg(st_open_buffer(&s, buf, sizeof buf, "in memory", &err) == 0, "%s", err.msg);
    const st_tensor *w = st_find(&s, "w");
    ck_assert_ptr_nonnull(w);
    ck_assert_int_eq(w->ndim, 2);
    ck_assert_ptr_eq(w->data, buf + 8 + h);
    st_close(&s); /* leaves buf alone: it was never mapped */
    ck_assert_int_eq(buf[8], '{');
    ck_assert_int_eq(st_open_buffer(&s, buf, sizeof buf - 1, "in memory", &err), -1);
    ck_assert_msg(strstr(err.msg, "in memory: tensor w") && strstr(err.msg, "truncated"), "%s", err.msg);
    ck_assert_int_eq(s.n_tensors, 0);
}
END_TEST

START_TEST(test_metadata) {
    char dir[256], path[320];
    harness_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/m.safetensors", dir);
    st_out_tensor t = {.name = "w", .dtype = DTYPE_F16, .ndim = 1, .shape = {4}, .data = FOUR};
    const char *k[] = {"format", "note"}, *v[] = {"pt", "généré, \"quoted\""};
    sp_error err;
    ck_assert_msg(st_write(path, &t, 1, k, v, 2, &err) == 0, "%s", err.msg);
    st_set s;
    ck_assert_msg(st_open(&s, path, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(s.n_meta, 2);
    ck_assert_str_eq(st_metadata(&s, "format"), "pt");
    ck_assert_str_eq(st_metadata(&s, "note"), v[1]);
    ck_assert_ptr_null(st_metadata(&s, "absent"));
    ck_assert_int_eq(s.n_tensors, 1); /* "__metadata__" is not a tensor */
    st_close(&s);
    /* a file of metadata and no tensors is valid */
    snprintf(path, sizeof path, "%s/none.safetensors", dir);
    ck_assert_msg(st_write(path, NULL, 0, k, v, 1, &err) == 0, "%s", err.msg);
    ck_assert_msg(st_open(&s, path, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(s.n_tensors, 0);
    ck_assert_ptr_null(st_find(&s, "w"));
    ck_assert_str_eq(st_metadata(&s, "format"), "pt");
    st_close(&s);
    /* non-string metadata is refused, naming the entry */
    snprintf(path, sizeof path, "%s/bad-meta.safetensors", dir);
    write_raw(path, "{\"__metadata__\":{\"step\":3},\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}",
              (uint64_t)-1, FOUR, 16);
    expect_error(path, path, "\"step\"", "must be a string", NULL);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_sharded_round_trip) {
    char dir[256], path[400];
    harness_tmpdir(dir, sizeof dir);
    enum { N = 7 };
    st_out_tensor t[N];
    char names[N][32];
    float *v[N];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "model.layers.%d.w", i);
        v[i] = ramp(100 * (i + 1), 0.01f * (float)(i + 1));
        t[i] = (st_out_tensor){
            .name = names[i], .dtype = (dtype_t)(i % 3), .ndim = 2, .shape = {10, 10 * (i + 1)}, .data = v[i]};
    }
    sp_error err;
    const char *mk[] = {"origin"}, *mv[] = {"test"};
    ck_assert_msg(st_write_sharded_meta(dir, t, N, 3, mk, mv, 1, &err) == 0, "%s", err.msg);
    for (int k = 1; k <= 3; k++) {
        snprintf(path, sizeof path, "%s/model-%05d-of-00003.safetensors", dir, k);
        ck_assert_msg(access(path, R_OK) == 0, "%s not written", path);
    }
    /* open by directory and by index path: same tensors */
    for (int how = 0; how < 2; how++) {
        snprintf(path, sizeof path, how ? "%s/model.safetensors.index.json" : "%s", dir);
        st_set s;
        ck_assert_msg(st_open(&s, path, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(s.n_files, 3);
        ck_assert_int_eq(s.n_tensors, N);
        ck_assert_str_eq(st_metadata(&s, "format"), "pt");
        ck_assert_str_eq(st_metadata(&s, "origin"), "test");
        int used[3] = {0};
        for (int i = 0; i < N; i++) {
            const st_tensor *r = st_find(&s, names[i]);
            ck_assert_ptr_nonnull(r);
            used[r->file]++;
            ck_assert_int_eq(r->shape[1], 10 * (i + 1));
            float *back = malloc((size_t)st_numel(r) * sizeof *back);
            dtype_to_f32(back, r->data, r->dtype, (size_t)st_numel(r));
            for (int64_t e = 0; e < st_numel(r); e++) {
                float want = t[i].dtype == DTYPE_F32    ? v[i][e]
                             : t[i].dtype == DTYPE_BF16 ? bf16_to_f32(f32_to_bf16(v[i][e]))
                                                        : f16_to_f32(f32_to_f16(v[i][e]));
                ck_assert(back[e] == want);
            }
            free(back);
        }
        for (int k = 0; k < 3; k++) ck_assert_msg(used[k] > 0, "shard %d is empty", k + 1);
        st_close(&s);
    }
    /* the index's total_size is the sum of tensor bytes */
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    FILE *f = fopen(path, "r");
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    long long total = 0;
    for (int i = 0; i < N; i++) total += 100LL * (i + 1) * dtype_size(t[i].dtype);
    char want[64];
    snprintf(want, sizeof want, "\"total_size\": %lld", total);
    ck_assert_msg(strstr(text, want) != NULL, "index lacks %s:\n%s", want, text);
    /* rewriting as one file removes the index and the shards */
    ck_assert_msg(st_write_sharded(dir, t, 2, 1, &err) == 0, "%s", err.msg);
    ck_assert_int_ne(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/model-00001-of-00003.safetensors", dir);
    ck_assert_int_ne(access(path, F_OK), 0);
    st_set s;
    ck_assert_msg(st_open(&s, dir, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(s.n_tensors, 2);
    st_close(&s);
    /* more shards than tensors is refused */
    ck_assert_int_eq(st_write_sharded(dir, t, 2, 3, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "non-empty shards"));
    for (int i = 0; i < N; i++) free(v[i]);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_writer_refuses_bad_input) {
    char dir[256], path[320];
    harness_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    sp_error err;
    st_out_tensor dup[2] = {{.name = "x", .dtype = DTYPE_F32, .ndim = 1, .shape = {4}, .data = FOUR},
                            {.name = "x", .dtype = DTYPE_F32, .ndim = 1, .shape = {4}, .data = FOUR}};
    ck_assert_int_eq(st_write(path, dup, 2, NULL, NULL, 0, &err), -1);
    ck_assert_msg(strstr(err.msg, "tensor x is given twice") != NULL, "%s", err.msg);
    ck_assert_int_eq(st_write_sharded(dir, dup, 2, 2, &err), -1);
    ck_assert_msg(strstr(err.msg, "given twice") != NULL, "%s", err.msg);
    st_out_tensor neg = {.name = "n", .dtype = DTYPE_F32, .ndim = 1, .shape = {-1}, .data = FOUR};
    ck_assert_int_eq(st_write(path, &neg, 1, NULL, NULL, 0, &err), -1);
    ck_assert_msg(strstr(err.msg, "tensor n: shape[0] = -1") != NULL, "%s", err.msg);
    st_out_tensor bad_dt = {.name = "d", .dtype = (dtype_t)7, .ndim = 1, .shape = {1}, .data = FOUR};
    ck_assert_int_eq(st_write(path, &bad_dt, 1, NULL, NULL, 0, &err), -1);
    ck_assert_msg(strstr(err.msg, "tensor d: dtype 7") != NULL, "%s", err.msg);
    ck_assert_int_ne(access(path, F_OK), 0); /* nothing written */
    harness_rmtree(dir);
}
END_TEST

/* ---- one broken file per validation rule ----------------------------------------- */

START_TEST(test_error_truncated) {
    char dir[256], path[320];
    harness_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/short.safetensors", dir);
    harness_write_file(path, "\x10\0\0\0\0", 5);
    expect_error(path, path, "truncated", "5 bytes", NULL);
    snprintf(path, sizeof path, "%s/empty.safetensors", dir);
    harness_write_file(path, "", 0);
    expect_error(path, path, "truncated", "0 bytes", NULL);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_error_header_past_end) {
    char dir[256], path[320];
    harness_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/long.safetensors", dir);
    write_raw(path, F32_4, 1000, FOUR, 16);
    expect_error(path, path, "header length 1000 runs past the end of the file", NULL);
    /* a length so large that 8 + length would overflow */
    write_raw(path, F32_4, UINT64_MAX - 3, FOUR, 16);
    expect_error(path, path, "runs past the end", NULL);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_error_header_not_json) {
    char dir[256], path[320];
    harness_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/garbage.safetensors", dir);
    write_raw(path, "{\"w\":{\"dtype\":\"F32\",", (uint64_t)-1, FOUR, 16);
    expect_error(path, path, "header is not valid JSON", NULL);
    snprintf(path, sizeof path, "%s/array.safetensors", dir);
    write_raw(path, "[1, 2, 3]", (uint64_t)-1, NULL, 0);
    expect_error(path, path, "header is not a JSON object", NULL);
    snprintf(path, sizeof path, "%s/dupkey.safetensors", dir);
    write_raw(path,
              "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
              "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
              (uint64_t)-1, FOUR, 8);
    expect_error(path, path, "duplicate", NULL);
    snprintf(path, sizeof path, "%s/entry.safetensors", dir);
    write_raw(path, "{\"w\":[1,2]}", (uint64_t)-1, NULL, 0);
    expect_error(path, path, "tensor w", "must be an object", NULL);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_error_unknown_dtype) {
    char dir[256], path[320];
    harness_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/i64.safetensors", dir);
    write_raw(path, "{\"pos_ids\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,16]}}", (uint64_t)-1, FOUR, 16);
    expect_error(path, path, "tensor pos_ids", "\"I64\"", "only F32, BF16 and F16", NULL);
    write_raw(path, "{\"w\":{\"shape\":[2],\"data_offsets\":[0,8]}}", (uint64_t)-1, FOUR, 8);
    expect_error(path, path, "tensor w", "\"dtype\" is missing", NULL);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_error_bad_shape) {
    char dir[256], path[320];
    harness_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/shape.safetensors", dir);
    write_raw(path, "{\"q\":{\"dtype\":\"F32\",\"shape\":[2,-2],\"data_offsets\":[0,16]}}", (uint64_t)-1, FOUR, 16);
    expect_error(path, path, "tensor q", "shape[1] = -2 is negative", NULL);
    write_raw(path, "{\"q\":{\"dtype\":\"F32\",\"shape\":[4,10000000000000],\"data_offsets\":[0,16]}}", (uint64_t)-1,
              FOUR, 16);
    expect_error(path, path, "tensor q", "shape[1] = 10000000000000 is absurd", NULL);
    write_raw(path, "{\"q\":{\"dtype\":\"F32\",\"shape\":[1099511627776,1099511627776],\"data_offsets\":[0,16]}}",
              (uint64_t)-1, FOUR, 16);
    expect_error(path, path, "tensor q", "absurd number of elements", NULL);
    /* 2^62 float32 elements: the byte count wrapped to 0, which matched an empty span */
    write_raw(path, "{\"q\":{\"dtype\":\"F32\",\"shape\":[1099511627776,4194304],\"data_offsets\":[0,0]}}",
              (uint64_t)-1, NULL, 0);
    expect_error(path, path, "tensor q", "absurd number of elements", NULL);
    write_raw(path, "{\"q\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,16]}}", (uint64_t)-1, FOUR, 16);
    expect_error(path, path, "tensor q", "shape[0] is not an integer", NULL);
    write_raw(path, "{\"q\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", (uint64_t)-1,
              FOUR, 4);
    expect_error(path, path, "tensor q", "9 dimensions", NULL);
    write_raw(path, "{\"q\":{\"dtype\":\"F32\",\"shape\":4,\"data_offsets\":[0,16]}}", (uint64_t)-1, FOUR, 16);
    expect_error(path, path, "tensor q", "\"shape\" is missing or not a list", NULL);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_error_offsets_malformed) {
    char dir[256], path[320];
    harness_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/offs.safetensors", dir);
    write_raw(path, "{\"k\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0]}}", (uint64_t)-1, FOUR, 16);
    expect_error(path, path, "tensor k", "must be a list [begin, end]", NULL);
    write_raw(path, "{\"k\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[\"0\",16]}}", (uint64_t)-1, FOUR, 16);
    expect_error(path, path, "tensor k", "two non-negative integers", NULL);
    write_raw(path, "{\"k\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[-16,0]}}", (uint64_t)-1, FOUR, 16);
    expect_error(path, path, "tensor k", "two non-negative integers", NULL);
    write_raw(path, "{\"k\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[16,0]}}", (uint64_t)-1, FOUR, 16);
    expect_error(path, path, "tensor k", "[16, 0] end before they begin", NULL);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_error_offsets_out_of_range) {
    char dir[256], path[320];
    harness_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/cut.safetensors", dir);
    /* the header promises 16 bytes of data, the file holds 12: a truncated
     * data section */
    write_raw(path, F32_4, (uint64_t)-1, FOUR, 12);
    expect_error(path, path, "tensor w", "[0, 16] run past the end of the data section (12 bytes)", "truncated", NULL);
    write_raw(path,
              "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[9223372036854775800,9223372036854775804]}}",
              (uint64_t)-1, FOUR, 16);
    expect_error(path, path, "tensor w", "run past the end of the data section", NULL);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_error_span_mismatch) {
    char dir[256], path[320];
    harness_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/span.safetensors", dir);
    write_raw(path, "{\"v\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[0,16]}}", (uint64_t)-1, FOUR, 16);
    expect_error(path, path, "tensor v", "span 16 bytes, expected 12 ([2, 3] BF16)", NULL);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_error_overlap) {
    char dir[256], path[320];
    harness_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/overlap.safetensors", dir);
    float data[8] = {0};
    write_raw(path,
              "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
              "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]},"
              "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[12,28]}}",
              (uint64_t)-1, data, 32);
    expect_error(path, path, "tensors a [0, 16) and b [12, 28) overlap", NULL);
    /* one tensor nested inside a longer one, after a third */
    write_raw(path,
              "{\"c\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[28,32]},"
              "\"long\":{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":[0,24]},"
              "\"in\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
              (uint64_t)-1, data, 32);
    expect_error(path, path, "tensors long [0, 24) and in [8, 12) overlap", NULL);
    /* touching is fine, and an empty tensor inside another is not an overlap */
    write_raw(path,
              "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
              "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,8]},"
              "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[16,32]}}",
              (uint64_t)-1, data, 32);
    st_set s;
    sp_error err;
    ck_assert_msg(st_open(&s, path, &err) == 0, "%s", err.msg);
    st_close(&s);
    harness_rmtree(dir);
}
END_TEST

/* A sharded set: 3 tensors over 2 shards, written by st_write_sharded. */
static void write_pair(const char *dir) {
    st_out_tensor t[3] = {{.name = "a", .dtype = DTYPE_F32, .ndim = 1, .shape = {4}, .data = FOUR},
                          {.name = "b", .dtype = DTYPE_F32, .ndim = 1, .shape = {4}, .data = FOUR},
                          {.name = "c", .dtype = DTYPE_F32, .ndim = 1, .shape = {4}, .data = FOUR}};
    sp_error err;
    ck_assert_msg(st_write_sharded(dir, t, 3, 2, &err) == 0, "%s", err.msg);
}

static void write_index(const char *dir, const char *map) {
    char path[320], text[1024];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    snprintf(text, sizeof text, "{\"metadata\": {\"total_size\": 48}, \"weight_map\": %s}", map);
    harness_write_file(path, text, strlen(text));
}

START_TEST(test_error_missing_shard) {
    char dir[256], path[320];
    harness_tmpdir(dir, sizeof dir);
    write_pair(dir);
    snprintf(path, sizeof path, "%s/model-00002-of-00002.safetensors", dir);
    ck_assert_int_eq(unlink(path), 0);
    expect_error(dir, "model.safetensors.index.json", "model-00002-of-00002.safetensors", "tensor c", "No such file",
                 NULL);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_error_index_mismatch) {
    char dir[256];
    harness_tmpdir(dir, sizeof dir);
    write_pair(dir);
    /* the index names a tensor its shard does not hold */
    write_index(dir, "{\"a\": \"model-00001-of-00002.safetensors\", \"b\": \"model-00001-of-00002.safetensors\","
                     " \"c\": \"model-00002-of-00002.safetensors\", \"zz\": \"model-00002-of-00002.safetensors\"}");
    expect_error(dir, "model-00002-of-00002.safetensors: tensor zz", "is not in it", NULL);
    /* the index places c in the wrong shard */
    write_index(dir, "{\"a\": \"model-00001-of-00002.safetensors\", \"b\": \"model-00002-of-00002.safetensors\","
                     " \"c\": \"model-00002-of-00002.safetensors\"}");
    expect_error(dir, "tensor b", "places it in model-00002-of-00002.safetensors", "but it is in model-00001", NULL);
    /* not an index at all */
    write_index(dir, "[]");
    expect_error(dir, "model.safetensors.index.json", "weight_map", NULL);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_error_duplicate_across_shards) {
    char dir[256], path[320];
    harness_tmpdir(dir, sizeof dir);
    st_out_tensor x = {.name = "x", .dtype = DTYPE_F32, .ndim = 1, .shape = {4}, .data = FOUR};
    sp_error err;
    snprintf(path, sizeof path, "%s/one.safetensors", dir);
    ck_assert_int_eq(st_write(path, &x, 1, NULL, NULL, 0, &err), 0);
    snprintf(path, sizeof path, "%s/two.safetensors", dir);
    ck_assert_int_eq(st_write(path, &x, 1, NULL, NULL, 0, &err), 0);
    write_index(dir, "{\"x\": \"one.safetensors\", \"y\": \"two.safetensors\"}");
    expect_error(dir, "tensor x is stored twice", "one.safetensors", "two.safetensors", NULL);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_error_paths) {
    char dir[256], path[320];
    harness_tmpdir(dir, sizeof dir);
    expect_error(dir, dir, "neither model.safetensors nor model.safetensors.index.json", NULL);
    snprintf(path, sizeof path, "%s/absent.safetensors", dir);
    expect_error(path, path, "cannot open", NULL);
    snprintf(path, sizeof path, "%s/bad.json", dir);
    harness_write_file(path, "{oops", 5);
    expect_error(path, path, "not valid JSON", NULL);
    harness_rmtree(dir);
}
END_TEST

Suite *safetensors_suite(void) {
    Suite *s = suite_create("safetensors");
    TCase *tc = harness_tcase("round_trip", 20);
    tcase_add_test(tc, test_round_trip_all_dtypes);
    tcase_add_test(tc, test_header_layout);
    tcase_add_test(tc, test_open_buffer);
    tcase_add_test(tc, test_metadata);
    tcase_add_test(tc, test_sharded_round_trip);
    tcase_add_test(tc, test_writer_refuses_bad_input);
    suite_add_tcase(s, tc);
    TCase *te = harness_tcase("errors", 20);
    tcase_add_test(te, test_error_truncated);
    tcase_add_test(te, test_error_header_past_end);
    tcase_add_test(te, test_error_header_not_json);
    tcase_add_test(te, test_error_unknown_dtype);
    tcase_add_test(te, test_error_bad_shape);
    tcase_add_test(te, test_error_offsets_malformed);
    tcase_add_test(te, test_error_offsets_out_of_range);
    tcase_add_test(te, test_error_span_mismatch);
    tcase_add_test(te, test_error_overlap);
    tcase_add_test(te, test_error_missing_shard);
    tcase_add_test(te, test_error_index_mismatch);
    tcase_add_test(te, test_error_duplicate_across_shards);
    tcase_add_test(te, test_error_paths);
    suite_add_tcase(s, te);
    return s;
}
