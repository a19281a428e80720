/* test_dtype.c — the bf16 / f16 conversions of reference/dtype.c: exhaustive round trips of every 16-bit pattern,
 * round-to-nearest-even against an independent oracle, and the edge cases by name: ties, subnormals, overflow,
 * infinities, NaN, signed zero. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dtype.h"
#include "harness.h"
#include "philox.h"

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int is_nan16(uint16_t h, int bf16) {
    return bf16 ? ((h & 0x7f80) == 0x7f80 && (h & 0x7f)) : ((h & 0x7c00) == 0x7c00 && (h & 0x3ff));
}

/* The oracle: binary search over the positive patterns 0 .. inf (their
 * values increase with the pattern), then pick the nearer neighbour in
 * double arithmetic — exact here, as both formats embed in double — with
 * ties going to the even pattern. inf stands in as the next power of two
 * after the largest finite value, which is what rounding compares against. */
static uint16_t oracle(float f, int bf16) {
    const uint16_t inf = bf16 ? 0x7f80 : 0x7c00;
    const double inf_value = bf16 ? ldexp(1.0, 128) : 65536.0;
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    double a = fabs((double)f);
    if (isinf(f)) return sign | inf;
    int lo = 0, hi = inf; /* invariant: value(lo) <= a < value(hi) (or a >= value(inf)) */
#define VALUE(p) ((p) == inf ? inf_value : (double)(bf16 ? bf16_to_f32((uint16_t)(p)) : f16_to_f32((uint16_t)(p))))
    if (a >= inf_value) return sign | inf;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (VALUE(mid) <= a)
            lo = mid;
        else
            hi = mid;
    }
    double dlo = a - VALUE(lo), dhi = VALUE(hi) - a;
#undef VALUE
    if (dlo < dhi) return sign | (uint16_t)lo;
    if (dhi < dlo) return sign | (uint16_t)hi;
    return sign | (uint16_t)((lo % 2 == 0) ? lo : hi);
}

START_TEST(test_bf16_exhaustive_round_trip) {
    for (uint32_t h = 0; h < 65536; h++) {
        float f = bf16_to_f32((uint16_t)h);
        uint16_t back = f32_to_bf16(f);
        if (is_nan16((uint16_t)h, 1))
            ck_assert_msg(isnan(f) && is_nan16(back, 1), "bf16 NaN %04x came back as %04x", h, back);
        else
            ck_assert_msg(back == h, "bf16 %04x -> %g -> %04x", h, (double)f, back);
    }
}
END_TEST

START_TEST(test_f16_exhaustive_round_trip) {
    for (uint32_t h = 0; h < 65536; h++) {
        float f = f16_to_f32((uint16_t)h);
        uint16_t back = f32_to_f16(f);
        if (is_nan16((uint16_t)h, 0))
            ck_assert_msg(isnan(f) && is_nan16(back, 0), "f16 NaN %04x came back as %04x", h, back);
        else
            ck_assert_msg(back == h, "f16 %04x -> %g -> %04x", h, (double)f, back);
    }
}
END_TEST

/* Random float32 bit patterns (all exponents, so subnormals, huge values
 * and near-ties all occur), plus the patterns halfway between neighbours. */
START_TEST(test_rounding_matches_oracle) {
    for (int bf16 = 0; bf16 < 2; bf16++) {
        int truncation_caught = 0;
        for (uint64_t i = 0; i < 200000; i++) {
            uint32_t w[4];
            philox_words(11, (uint64_t)bf16, i, w);
            float f = from_bits(w[0]);
            if (isnan(f)) continue;
            uint16_t got = bf16 ? f32_to_bf16(f) : f32_to_f16(f), want = oracle(f, bf16);
            ck_assert_msg(got == want, "%s(%a): got %04x, oracle %04x", bf16 ? "bf16" : "f16", (double)f, got, want);
            /* negative control: plain truncation of bf16 must disagree often */
            truncation_caught += bf16 && (uint16_t)(w[0] >> 16) != want;
        }
        if (bf16) ck_assert_msg(truncation_caught > 50000, "oracle blind to truncation (%d)", truncation_caught);
        /* exact midpoints between consecutive finite values: ties */
        uint16_t top = bf16 ? 0x7f7f : 0x7bff;
        for (uint32_t h = 0; h < top; h += 7) {
            double a = bf16 ? bf16_to_f32((uint16_t)h) : f16_to_f32((uint16_t)h);
            double b = bf16 ? bf16_to_f32((uint16_t)(h + 1)) : f16_to_f32((uint16_t)(h + 1));
            float mid = (float)((a + b) / 2); /* exact: one more bit than the 16-bit format */
            uint16_t got = bf16 ? f32_to_bf16(mid) : f32_to_f16(mid);
            ck_assert_msg(got == oracle(mid, bf16), "%s tie %a: got %04x", bf16 ? "bf16" : "f16", (double)mid, got);
            ck_assert_msg(got % 2 == 0, "%s tie between %04x and %04x went to the odd one", bf16 ? "bf16" : "f16", h,
                          h + 1);
        }
    }
}
END_TEST

START_TEST(test_bf16_edges) {
    ck_assert_uint_eq(f32_to_bf16(1.0f), 0x3f80);
    ck_assert_uint_eq(f32_to_bf16(1.00390625f), 0x3f80);           /* 1 + 2^-8: tie, to even (down) */
    ck_assert_uint_eq(f32_to_bf16(1.01171875f), 0x3f82);           /* 1 + 3·2^-8: tie, to even (up) */
    ck_assert_uint_eq(f32_to_bf16(from_bits(0x3f808001)), 0x3f81); /* just above the tie */
    ck_assert_uint_eq(f32_to_bf16(-0.0f), 0x8000);
    ck_assert_uint_eq(f32_to_bf16(INFINITY), 0x7f80);
    ck_assert_uint_eq(f32_to_bf16(-INFINITY), 0xff80);
    ck_assert_uint_eq(f32_to_bf16(from_bits(0x7f7fffff)), 0x7f80); /* FLT_MAX rounds up to inf */
    ck_assert_uint_eq(f32_to_bf16(from_bits(0x00008000)), 0x0000); /* subnormal tie, to even */
    ck_assert_uint_eq(f32_to_bf16(from_bits(0x00018000)), 0x0002);
    ck_assert_uint_eq(f32_to_bf16(from_bits(0x00000001)), 0x0000);
    /* a signalling NaN whose payload sits in the low bits must not become inf */
    ck_assert(is_nan16(f32_to_bf16(from_bits(0x7f800001)), 1));
    ck_assert(is_nan16(f32_to_bf16(from_bits(0xff800001)), 1));
    ck_assert(is_nan16(f32_to_bf16(NAN), 1));
    ck_assert(isnan(bf16_to_f32(0x7fc0)));
    ck_assert(bf16_to_f32(0x0001) > 0.0f); /* smallest subnormal survives */
}
END_TEST

START_TEST(test_f16_edges) {
    ck_assert_uint_eq(f32_to_f16(1.0f), 0x3c00);
    ck_assert_uint_eq(f32_to_f16(1.0f + 0x1p-11f), 0x3c00);     /* tie, to even (down) */
    ck_assert_uint_eq(f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02); /* tie, to even (up) */
    ck_assert_uint_eq(f32_to_f16(65504.0f), 0x7bff);            /* largest finite */
    ck_assert_uint_eq(f32_to_f16(65519.99f), 0x7bff);
    ck_assert_uint_eq(f32_to_f16(65520.0f), 0x7c00); /* tie with "65536": to even = inf */
    ck_assert_uint_eq(f32_to_f16(1e6f), 0x7c00);
    ck_assert_uint_eq(f32_to_f16(-1e6f), 0xfc00);
    ck_assert_uint_eq(f32_to_f16(INFINITY), 0x7c00);
    ck_assert_uint_eq(f32_to_f16(-0.0f), 0x8000);
    ck_assert_uint_eq(f32_to_f16(0x1p-24f), 0x0001);           /* smallest subnormal */
    ck_assert_uint_eq(f32_to_f16(0x1p-25f), 0x0000);           /* tie between 0 and it: to even */
    ck_assert_uint_eq(f32_to_f16(0x1.000002p-25f), 0x0001);    /* just above the tie */
    ck_assert_uint_eq(f32_to_f16(3 * 0x1p-25f), 0x0002);       /* tie between 1 and 2 units */
    ck_assert_uint_eq(f32_to_f16(1023.5f * 0x1p-24f), 0x0400); /* largest subnormal + half: to the first normal */
    ck_assert_uint_eq(f32_to_f16(0x1p-14f), 0x0400);           /* smallest normal */
    ck_assert_uint_eq(f32_to_f16(1e-10f), 0x0000);             /* underflow to zero */
    ck_assert_uint_eq(f32_to_f16(-1e-10f), 0x8000);
    ck_assert(is_nan16(f32_to_f16(NAN), 0));
    ck_assert(is_nan16(f32_to_f16(from_bits(0x7f800001)), 0));
    ck_assert(isinf(f16_to_f32(0x7c00)) && f16_to_f32(0x7c00) > 0);
    ck_assert(isnan(f16_to_f32(0x7e00)));
    ck_assert(f16_to_f32(0x0001) == 0x1p-24f);
    ck_assert(f16_to_f32(0xc000) == -2.0f);
}
END_TEST

START_TEST(test_names_sizes_and_bulk) {
    ck_assert_int_eq(dtype_from_name("F32"), DTYPE_F32);
    ck_assert_int_eq(dtype_from_name("BF16"), DTYPE_BF16);
    ck_assert_int_eq(dtype_from_name("F16"), DTYPE_F16);
    ck_assert_int_eq(dtype_from_name("I64"), -1);
    ck_assert_int_eq(dtype_from_name("bf16"), -1); /* the safetensors spelling is upper case */
    ck_assert_int_eq(dtype_size(DTYPE_F32), 4);
    ck_assert_int_eq(dtype_size(DTYPE_BF16), 2);
    ck_assert_int_eq(dtype_size(DTYPE_F16), 2);
    ck_assert_str_eq(dtype_name(DTYPE_BF16), "BF16");
    /* dtype_to_f32 from an odd (unaligned) address, little-endian */
    unsigned char buf[1 + 3 * 4];
    const uint16_t h[3] = {0x3f80, 0xc000, 0x0001};
    for (int i = 0; i < 3; i++) buf[1 + 2 * i] = (unsigned char)h[i], buf[2 + 2 * i] = (unsigned char)(h[i] >> 8);
    float out[3];
    dtype_to_f32(out, buf + 1, DTYPE_BF16, 3);
    ck_assert(out[0] == 1.0f && out[1] == -2.0f && out[2] == bf16_to_f32(1));
    dtype_to_f32(out, buf + 1, DTYPE_F16, 3);
    ck_assert(out[0] == f16_to_f32(0x3f80) && out[1] == -2.0f && out[2] == 0x1p-24f);
    const float src[3] = {1.5f, -0.25f, 1e30f};
    memcpy(buf + 1, src, sizeof src);
    dtype_to_f32(out, buf + 1, DTYPE_F32, 3);
    ck_assert(memcmp(out, src, sizeof src) == 0);
}
END_TEST

Suite *dtype_suite(void) {
    Suite *s = suite_create("dtype");
    TCase *tc = harness_tcase("core", 30);
    tcase_add_test(tc, test_bf16_exhaustive_round_trip);
    tcase_add_test(tc, test_f16_exhaustive_round_trip);
    tcase_add_test(tc, test_rounding_matches_oracle);
    tcase_add_test(tc, test_bf16_edges);
    tcase_add_test(tc, test_f16_edges);
    tcase_add_test(tc, test_names_sizes_and_bulk);
    suite_add_tcase(s, tc);
    return s;
}
