/* test_config.c — config.json parsing: both layouts, the older rope fields,
 * defaults, and a clear error for every missing or out-of-range field. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "harness.h"

#define TEXT_FIELDS                                                                                                    \
    "\"vocab_size\": 64, \"hidden_size\": 32, \"intermediate_size\": 48, \"num_hidden_layers\": 4, "                   \
    "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, \"rms_norm_eps\": 1e-6, "               \
    "\"linear_conv_kernel_dim\": 4, \"linear_key_head_dim\": 8, \"linear_value_head_dim\": 8, "                        \
    "\"linear_num_key_heads\": 2, \"linear_num_value_heads\": 4, \"eos_token_id\": [5, 6], "                           \
    "\"layer_types\": [\"linear_attention\", \"linear_attention\", \"linear_attention\", \"full_attention\"]"

static const char *full_layout =
    "{\"model_type\": \"qwen3_5\", \"tie_word_embeddings\": false, \"text_config\": {" TEXT_FIELDS
    ", \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 1000000, "
    "\"partial_rotary_factor\": 0.25}, \"mtp_num_hidden_layers\": 1}}";

static const char *text_layout =
    "{\"model_type\": \"qwen3_5_text\", " TEXT_FIELDS
    ", \"rope_theta\": 10000, \"partial_rotary_factor\": 0.5, \"tie_word_embeddings\": true}";

START_TEST(test_full_layout) {
    model_config c;
    sp_error err;
    ck_assert_msg(config_parse(full_layout, "cfg", &c, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(c.tensor_prefix, "model.language_model.");
    ck_assert_int_eq(c.rotary_dim, 4);
    ck_assert(c.rope_theta == 1e6);
    ck_assert_int_eq(c.mtp_num_layers, 1);
    ck_assert_int_eq(c.tie_word_embeddings, 0);
    ck_assert_int_eq(config_num_full(&c), 1);
    ck_assert_int_eq(config_num_linear(&c), 3);
    ck_assert_int_eq(config_type_index(&c, 2), 2);
    ck_assert_int_eq(config_type_index(&c, 3), 0);
    ck_assert_int_eq(config_conv_dim(&c), 2 * 2 * 8 + 4 * 8);
    ck_assert(config_is_eos(&c, 6) && !config_is_eos(&c, 7));
}
END_TEST

START_TEST(test_text_layout_and_old_rope_fields) {
    model_config c;
    sp_error err;
    ck_assert_msg(config_parse(text_layout, "cfg", &c, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(c.tensor_prefix, "model.");
    ck_assert_int_eq(c.rotary_dim, 8);
    ck_assert(c.rope_theta == 1e4);
    ck_assert_int_eq(c.tie_word_embeddings, 1);
    ck_assert_int_eq(c.mtp_num_layers, 0);
}
END_TEST

START_TEST(test_default_layer_pattern) {
    char json[2048];
    snprintf(json, sizeof json,
             "{\"model_type\": \"qwen3_5_text\", \"vocab_size\": 64, \"hidden_size\": 32, \"intermediate_size\": 48, "
             "\"num_hidden_layers\": 8, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16, "
             "\"rope_theta\": 10000}");
    model_config c;
    sp_error err;
    ck_assert_msg(config_parse(json, "cfg", &c, &err) == 0, "%s", err.msg);
    for (int l = 0; l < 8; l++)
        ck_assert_int_eq(c.layer_types[l], (l % 4 == 3) ? LAYER_FULL_ATTENTION : LAYER_LINEAR_ATTENTION);
    ck_assert_int_eq(c.rotary_dim, 4); /* partial_rotary_factor defaults to 0.25 */
}
END_TEST

/* Replaces the first occurrence of `from` in full_layout by `to` and expects
 * config_parse to fail with a message containing `want`. */
static void expect_error(const char *from, const char *to, const char *want) {
    char json[4096];
    const char *at = strstr(full_layout, from);
    ck_assert_msg(at != NULL, "fixture lacks '%s'", from);
    snprintf(json, sizeof json, "%.*s%s%s", (int)(at - full_layout), full_layout, to, at + strlen(from));
    model_config c;
    sp_error err;
    ck_assert_msg(config_parse(json, "broken/config.json", &c, &err) == -1, "accepted: %s", json);
    ck_assert_msg(strstr(err.msg, want) != NULL, "message '%s' lacks '%s'", err.msg, want);
    ck_assert_msg(strstr(err.msg, "broken/config.json") != NULL, "message '%s' lacks the file", err.msg);
}

START_TEST(test_errors_name_the_field) {
    expect_error("\"hidden_size\": 32, ", "", "\"hidden_size\" is missing");
    expect_error("\"vocab_size\": 64", "\"vocab_size\": 0", "\"vocab_size\" = 0 is out of range");
    expect_error("\"head_dim\": 16", "\"head_dim\": \"16\"", "\"head_dim\" must be an integer");
    expect_error("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3", "not a multiple");
    expect_error("\"linear_num_value_heads\": 4", "\"linear_num_value_heads\": 3", "not a multiple");
    expect_error("\"full_attention\"]", "\"full_attention\", \"full_attention\"]", "has 5 entries");
    expect_error("\"full_attention\"]", "\"sliding\"]", "\"layer_types\"[3]");
    expect_error("\"rope_theta\": 1000000, ", "", "\"rope_theta\" is missing");
    expect_error("\"rope_type\": \"default\"", "\"rope_type\": \"yarn\"", "not supported");
    expect_error("\"rms_norm_eps\": 1e-6", "\"rms_norm_eps\": -1", "\"rms_norm_eps\"");
    expect_error("\"qwen3_5\"", "\"llama\"", "model_type is \"llama\"");
    expect_error("\"eos_token_id\": [5, 6]", "\"eos_token_id\": 64", "outside the vocabulary");
    /* read as an int first, 2^32 + 5 was token 5 */
    expect_error("\"eos_token_id\": [5, 6]", "\"eos_token_id\": 4294967301", "eos_token_id 4294967301 is outside");
    expect_error("\"eos_token_id\": [5, 6]", "\"eos_token_id\": [5, -4294967290]", "eos_token_id -4294967290");
    expect_error("\"mtp_num_hidden_layers\": 1", "\"mtp_num_hidden_layers\": 2", "out of range");
    expect_error("\"tie_word_embeddings\": false", "\"tie_word_embeddings\": 1", "true or false");
    expect_error("\"partial_rotary_factor\": 0.25", "\"partial_rotary_factor\": 0.01", "no rotary dimensions");
}
END_TEST

/* An odd int(head_dim · partial_rotary_factor) is kept, as transformers keeps it: its ⌈R/2⌉ frequencies rotate
 * R + 1 dims (peer config text-e holds the reference to transformers there); an odd R that would need a dim
 * past head_dim is refused. */
START_TEST(test_odd_rotary_dims) {
    char json[4096];
    model_config c;
    sp_error err;
    const char *at = strstr(full_layout, "0.25}");
    snprintf(json, sizeof json, "%.*s0.3125%s", (int)(at - full_layout), full_layout, at + 4); /* int(16 · 0.3125) */
    ck_assert_msg(config_parse(json, "cfg", &c, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(c.rotary_dim, 5);
    ck_assert_int_eq(config_rotated_dims(&c), 6);
    /* R = int(15 · 1.0) = 15 would rotate 16 dims of 15 */
    char json2[4096];
    snprintf(json2, sizeof json2, "%.*s1.0%s", (int)(at - full_layout), full_layout, at + 4);
    at = strstr(json2, "\"head_dim\": 16");
    snprintf(json, sizeof json, "%.*s\"head_dim\": 15%s", (int)(at - json2), json2, at + strlen("\"head_dim\": 16"));
    ck_assert_int_eq(config_parse(json, "cfg", &c, &err), -1);
    ck_assert_msg(strstr(err.msg, "RoPE would rotate 16"), "%s", err.msg);
}
END_TEST

START_TEST(test_not_json) {
    model_config c;
    sp_error err;
    ck_assert_int_eq(config_parse("{\"model_type\": ", "x.json", &c, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "not valid JSON"));
    ck_assert_int_eq(config_load("/nonexistent-dir", &c, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "cannot open"));
}
END_TEST

START_TEST(test_27b_config) {
    model_config c;
    sp_error err;
    ck_assert_msg(config_load("models/qwen3.8-27b", &c, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(c.hidden_size, 5120);
    ck_assert_int_eq(config_num_linear(&c), 48);
    ck_assert_int_eq(config_num_full(&c), 16);
    ck_assert_int_eq(c.rotary_dim, 64);
    ck_assert_int_eq(config_conv_dim(&c), 10240);
    ck_assert_int_eq(c.num_heads * c.head_dim * 2, 12288);
}
END_TEST

Suite *config_suite(void) {
    Suite *s = suite_create("config");
    TCase *tc = harness_tcase("parse", 10);
    tcase_add_test(tc, test_full_layout);
    tcase_add_test(tc, test_text_layout_and_old_rope_fields);
    tcase_add_test(tc, test_default_layer_pattern);
    tcase_add_test(tc, test_errors_name_the_field);
    tcase_add_test(tc, test_not_json);
    tcase_add_test(tc, test_odd_rotary_dims);
    tcase_add_test(tc, test_27b_config);
    suite_add_tcase(s, tc);
    return s;
}
