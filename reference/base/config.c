/* config.c — parse and range-check a qwen3_5 config.json with jansson.
 * The field names and defaults follow Hugging Face's Qwen3_5TextConfig. */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "regular_file.h"

/* Looks a field up in the text config first, then at the top level (the
 * multimodal layout keeps a few fields, e.g. tie_word_embeddings, there). */
static json_t *field(json_t *text, json_t *top, const char *name) {
    json_t *v = json_object_get(text, name);
    if (!v && top != text) v = json_object_get(top, name);
    return v;
}

static int get_int(json_t *text, json_t *top, const char *origin, const char *name, int lo, int hi, int required,
                   int fallback, int *out, sp_error *err) {
    json_t *v = field(text, top, name);
    if (!v || json_is_null(v)) {
        if (required) return sp_fail(err, "%s: config field \"%s\" is missing", origin, name);
        *out = fallback;
        return 0;
    }
    if (!json_is_integer(v)) return sp_fail(err, "%s: config field \"%s\" must be an integer", origin, name);
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return sp_fail(err, "%s: config field \"%s\" = %lld is out of range [%d, %d]", origin, name, (long long)x, lo,
                       hi);
    *out = (int)x;
    return 0;
}

static int get_real(json_t *obj, const char *origin, const char *name, double lo, double hi, double *out,
                    sp_error *err) {
    json_t *v = json_object_get(obj, name);
    if (!v || json_is_null(v)) return 1; /* absent: caller decides */
    if (!json_is_number(v)) return sp_fail(err, "%s: config field \"%s\" must be a number", origin, name);
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || x > hi)
        return sp_fail(err, "%s: config field \"%s\" = %g is out of range [%g, %g]", origin, name, x, lo, hi);
    *out = x;
    return 0;
}

static int parse_layer_types(json_t *text, json_t *top, const char *origin, model_config *c, sp_error *err) {
    json_t *types = field(text, top, "layer_types");
    if (!types || json_is_null(types)) {
        int interval;
        if (get_int(text, top, origin, "full_attention_interval", 1, CONFIG_MAX_LAYERS, 0, 4, &interval, err))
            return -1;
        for (int l = 0; l < c->num_layers; l++)
            c->layer_types[l] = ((l + 1) % interval) ? LAYER_LINEAR_ATTENTION : LAYER_FULL_ATTENTION;
        return 0;
    }
    if (!json_is_array(types)) return sp_fail(err, "%s: config field \"layer_types\" must be a list", origin);
    if ((int)json_array_size(types) != c->num_layers)
        return sp_fail(err, "%s: config field \"layer_types\" has %zu entries, expected num_hidden_layers = %d", origin,
                       json_array_size(types), c->num_layers);
    for (int l = 0; l < c->num_layers; l++) {
        const char *s = json_string_value(json_array_get(types, (size_t)l));
        if (s && strcmp(s, "linear_attention") == 0)
            c->layer_types[l] = LAYER_LINEAR_ATTENTION;
        else if (s && strcmp(s, "full_attention") == 0)
            c->layer_types[l] = LAYER_FULL_ATTENTION;
        else
            return sp_fail(err,
                           "%s: config field \"layer_types\"[%d] must be \"linear_attention\" or "
                           "\"full_attention\"",
                           origin, l);
    }
    return 0;
}

/* RoPE: rope_parameters {rope_theta, partial_rotary_factor} (current
 * transformers), or the older top-level rope_theta / partial_rotary_factor. */
static int parse_rope(json_t *text, const char *origin, model_config *c, sp_error *err) {
    json_t *rp = json_object_get(text, "rope_parameters");
    if (rp && !json_is_object(rp))
        return sp_fail(err, "%s: config field \"rope_parameters\" must be an object", origin);
    json_t *src = rp ? rp : text;
    const char *type = json_string_value(json_object_get(src, "rope_type"));
    if (type && strcmp(type, "default") != 0)
        return sp_fail(err, "%s: rope_type \"%s\" is not supported (only \"default\")", origin, type);
    double theta = -1, factor = 0.25;
    if (get_real(src, origin, "rope_theta", 1.0, 1e12, &theta, err) < 0) return -1;
    if (theta < 0 && src != text && get_real(text, origin, "rope_theta", 1.0, 1e12, &theta, err) < 0) return -1;
    if (theta < 0) return sp_fail(err, "%s: config field \"rope_theta\" is missing", origin);
    int absent = get_real(src, origin, "partial_rotary_factor", 0.0, 1.0, &factor, err);
    if (absent < 0) return -1;
    if (absent && src != text && get_real(text, origin, "partial_rotary_factor", 0.0, 1.0, &factor, err) < 0) return -1;
    c->rope_theta = theta;
    c->rotary_dim = (int)(c->head_dim * factor); /* int() truncation, as transformers does; may be odd */
    if (c->rotary_dim < 1)
        return sp_fail(err, "%s: partial_rotary_factor %g of head_dim %d leaves no rotary dimensions", origin, factor,
                       c->head_dim);
    if (config_rotated_dims(c) > c->head_dim) /* an odd R rotates R + 1 dimensions, which must exist */
        return sp_fail(err,
                       "%s: partial_rotary_factor %g of head_dim %d gives %d rotary dimensions; RoPE would rotate %d",
                       origin, factor, c->head_dim, c->rotary_dim, config_rotated_dims(c));
    return 0;
}

/* Range-checked as the 64-bit integer JSON gave: a cast to int first would
 * turn 2^32 + 7 into token 7, which passes the vocabulary check. */
static int parse_eos(json_t *text, json_t *top, const char *origin, model_config *c, sp_error *err) {
    json_t *v = field(text, top, "eos_token_id");
    c->num_eos = 0;
    if (!v || json_is_null(v)) return 0;
    json_t *one;
    size_t i;
    json_int_t ids[CONFIG_MAX_EOS];
    if (json_is_integer(v)) {
        ids[c->num_eos++] = json_integer_value(v);
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, one) {
            if (!json_is_integer(one) || c->num_eos == CONFIG_MAX_EOS)
                return sp_fail(err, "%s: config field \"eos_token_id\" must be an integer or a list of at most %d",
                               origin, CONFIG_MAX_EOS);
            ids[c->num_eos++] = json_integer_value(one);
        }
    } else {
        return sp_fail(err, "%s: config field \"eos_token_id\" must be an integer or a list", origin);
    }
    for (int e = 0; e < c->num_eos; e++) {
        if (ids[e] < 0 || ids[e] >= c->vocab_size)
            return sp_fail(err, "%s: eos_token_id %lld is outside the vocabulary (%d)", origin, (long long)ids[e],
                           c->vocab_size);
        c->eos_token_ids[e] = (int)ids[e];
    }
    return 0;
}

static int parse_sizes(json_t *t, json_t *top, const char *o, model_config *c, sp_error *err) {
    const int BIG = 1 << 20;
    if (get_int(t, top, o, "vocab_size", 2, 1 << 24, 1, 0, &c->vocab_size, err) ||
        get_int(t, top, o, "hidden_size", 1, 1 << 16, 1, 0, &c->hidden_size, err) ||
        get_int(t, top, o, "intermediate_size", 1, BIG, 1, 0, &c->intermediate_size, err) ||
        get_int(t, top, o, "num_hidden_layers", 1, CONFIG_MAX_LAYERS, 1, 0, &c->num_layers, err) ||
        get_int(t, top, o, "num_attention_heads", 1, 1024, 1, 0, &c->num_heads, err) ||
        get_int(t, top, o, "num_key_value_heads", 1, 1024, 1, 0, &c->num_kv_heads, err) ||
        get_int(t, top, o, "head_dim", 2, 4096, 1, 0, &c->head_dim, err) ||
        get_int(t, top, o, "linear_conv_kernel_dim", 1, 64, 0, 4, &c->conv_kernel, err) ||
        get_int(t, top, o, "linear_num_key_heads", 1, 1024, 0, 16, &c->lin_k_heads, err) ||
        get_int(t, top, o, "linear_num_value_heads", 1, 1024, 0, 32, &c->lin_v_heads, err) ||
        get_int(t, top, o, "linear_key_head_dim", 1, 4096, 0, 128, &c->lin_k_dim, err) ||
        get_int(t, top, o, "linear_value_head_dim", 1, 4096, 0, 128, &c->lin_v_dim, err) ||
        get_int(t, top, o, "mtp_num_hidden_layers", 0, 1, 0, 0, &c->mtp_num_layers, err) ||
        get_int(t, top, o, "max_position_embeddings", 1, 1 << 30, 0, 32768, &c->max_position_embeddings, err))
        return -1;
    if (c->num_heads % c->num_kv_heads)
        return sp_fail(err, "%s: num_attention_heads %d is not a multiple of num_key_value_heads %d", o, c->num_heads,
                       c->num_kv_heads);
    if (c->lin_v_heads % c->lin_k_heads)
        return sp_fail(err, "%s: linear_num_value_heads %d is not a multiple of linear_num_key_heads %d", o,
                       c->lin_v_heads, c->lin_k_heads);
    double eps = 1e-6;
    int r = get_real(t, o, "rms_norm_eps", 1e-12, 0.1, &eps, err);
    if (r < 0) return -1;
    c->rms_norm_eps = (float)eps;
    return 0;
}

static int parse_tie(json_t *text, json_t *top, const char *origin, model_config *c, sp_error *err) {
    json_t *a = json_object_get(text, "tie_word_embeddings");
    json_t *b = top != text ? json_object_get(top, "tie_word_embeddings") : NULL;
    if ((a && !json_is_boolean(a)) || (b && !json_is_boolean(b)))
        return sp_fail(err, "%s: config field \"tie_word_embeddings\" must be true or false", origin);
    if (a && b && json_is_true(a) != json_is_true(b))
        return sp_fail(err, "%s: \"tie_word_embeddings\" differs between text_config and the top level", origin);
    c->tie_word_embeddings = (a && json_is_true(a)) || (b && json_is_true(b));
    return 0;
}

int config_parse(const char *json_text, const char *origin, model_config *cfg, sp_error *err) {
    json_error_t jerr;
    json_t *root = json_loads(json_text, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) return sp_fail(err, "%s: not valid JSON (line %d: %s)", origin, jerr.line, jerr.text);
    int rc = -1;
    model_config c;
    memset(&c, 0, sizeof c);
    json_t *text = root;
    const char *type = json_string_value(json_object_get(root, "model_type"));
    if (!json_is_object(root)) {
        sp_fail(err, "%s: the top level must be a JSON object", origin);
        goto done;
    }
    if (type && strcmp(type, "qwen3_5") == 0) {
        text = json_object_get(root, "text_config");
        if (!json_is_object(text)) {
            sp_fail(err, "%s: model_type \"qwen3_5\" needs a \"text_config\" object", origin);
            goto done;
        }
        snprintf(c.tensor_prefix, sizeof c.tensor_prefix, "model.language_model.");
    } else if (type && strcmp(type, "qwen3_5_text") == 0) {
        snprintf(c.tensor_prefix, sizeof c.tensor_prefix, "model.");
    } else {
        sp_fail(err, "%s: model_type is \"%s\", expected \"qwen3_5\" or \"qwen3_5_text\"", origin,
                type ? type : "(missing)");
        goto done;
    }
    const char *act = json_string_value(json_object_get(text, "hidden_act"));
    if (act && strcmp(act, "silu") != 0) {
        sp_fail(err, "%s: hidden_act \"%s\" is not supported (qwen3_5 uses \"silu\")", origin, act);
        goto done;
    }
    if (parse_sizes(text, root, origin, &c, err) || parse_rope(text, origin, &c, err) ||
        parse_layer_types(text, root, origin, &c, err) || parse_eos(text, root, origin, &c, err) ||
        parse_tie(text, root, origin, &c, err))
        goto done;
    *cfg = c;
    rc = 0;
done:
    json_decref(root);
    return rc;
}

int config_load(const char *path, model_config *cfg, sp_error *err) {
    char file[4096];
    size_t n = strlen(path);
    if (n > 5 && strcmp(path + n - 5, ".json") == 0)
        snprintf(file, sizeof file, "%s", path);
    else
        snprintf(file, sizeof file, "%s/config.json", path);
    FILE *f = regular_fopen(file, " (is this a model directory?)", err);
    if (!f) return -1;
    json_error_t jerr;
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr); /* a key given twice: which one was meant? */
    fclose(f);
    if (!root) return sp_fail(err, "%s: not valid JSON (line %d: %s)", file, jerr.line, jerr.text);
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!text) return sp_fail(err, "%s: cannot re-serialise JSON", file);
    int rc = config_parse(text, file, cfg, err);
    free(text);
    return rc;
}

int config_rotated_dims(const model_config *c) { return c->rotary_dim + c->rotary_dim % 2; }

int config_conv_dim(const model_config *c) { return 2 * c->lin_k_heads * c->lin_k_dim + c->lin_v_heads * c->lin_v_dim; }

int config_num_full(const model_config *c) {
    int n = 0;
    for (int l = 0; l < c->num_layers; l++) n += c->layer_types[l] == LAYER_FULL_ATTENTION;
    return n;
}

int config_num_linear(const model_config *c) { return c->num_layers - config_num_full(c); }

int config_type_index(const model_config *c, int layer) {
    int n = 0;
    for (int l = 0; l < layer; l++) n += c->layer_types[l] == c->layer_types[layer];
    return n;
}

int config_is_eos(const model_config *c, int token) {
    for (int e = 0; e < c->num_eos; e++)
        if (c->eos_token_ids[e] == token) return 1;
    return 0;
}
