/* randmodel.h — deterministic random qwen3_5 checkpoints: config.json plus safetensors with exactly the tensors
 * of reference/base/layout.h, every value drawn from Philox keyed by the seed. Used by the tests (micro models in
 * a scratch directory) and by the `genmodel` tool. */
#ifndef SPECULA_RANDMODEL_H
#define SPECULA_RANDMODEL_H

#include <stdint.h>

#include "config.h"
#include "dtype.h"
#include "error.h"
#include "layout.h"

typedef enum {
    RANDMODEL_LAYOUT_FULL = 0, /* model_type qwen3_5, text_config, tensors under model.language_model. */
    RANDMODEL_LAYOUT_TEXT = 1  /* model_type qwen3_5_text, flat config, tensors under model. */
} randmodel_layout;

/* How to write; what to write (sizes, tying, MTP) is the model_config. */
typedef struct {
    uint64_t seed; /* Philox key: the same seed gives bit-identical files */
    dtype_t dtype; /* storage dtype of every tensor */
    int n_shards;  /* 1: model.safetensors; more: model-0000i-of-0000N + index */
    randmodel_layout layout;
    int medusa_heads;        /* random Medusa heads written beside the checkpoint; 0: none */
    int medusa_layers;       /* ResBlocks per head (0 means 1) */
    int medusa_shared;       /* 1: the heads share the target's lm_head; 0: each has its own projection */
    const char *medusa_path; /* the heads file; NULL: DIR-medusa/medusa_heads.safetensors */
} randmodel_opts;

/* What was written. */
typedef struct {
    int n_tensors;
    long long params;     /* elements of all tensors written */
    long long mtp_params; /* of which the MTP module's */
    long long tensor_bytes;
    long long file_bytes; /* config.json, safetensors files and index on disk */
    int n_files;          /* safetensors files */
} randmodel_report;

typedef struct {
    const char *name;
    const char *summary;
    int large; /* 1: hundreds of MB (the `bench` preset): the tests check its config but never write it */
} randmodel_preset_info;

/* A draft model for `target`: the same vocabulary, eos ids, RoPE and norm
 * settings, about half the width, two layers (DeltaNet then full
 * attention) and no MTP module — small enough that proposing is cheap, and
 * paired with any target config. */
void randmodel_draft_config(const model_config *target, model_config *draft);

/* seed 1, bf16, one file, full layout, no Medusa heads. */
void randmodel_default_opts(randmodel_opts *o);

/* The presets, terminated by a NULL name. */
const randmodel_preset_info *randmodel_presets(void);

/* Fills cfg with the named preset (full layout prefix). Unknown names are an
 * error that lists the known ones. */
int randmodel_preset(const char *name, model_config *cfg, sp_error *err);

/* The config.json text for cfg in the given layout (malloc'd into *out).
 * The text is parsed back with config_parse and compared field by field
 * with cfg, so a config that config.json cannot express is an error here,
 * not a silent difference later. */
int randmodel_config_json(const model_config *cfg, const randmodel_opts *opts, char **out, sp_error *err);

/* Writes DIR/config.json and the safetensors (DIR is created when missing).
 * cfg's tensor_prefix is ignored: opts->layout decides it. rep may be NULL. */
int randmodel_write(const char *dir, const model_config *cfg, const randmodel_opts *opts, randmodel_report *rep,
                    sp_error *err);

/* Writes random Medusa heads for the checkpoint already in model_dir (of
 * config cfg) to heads_path: opts->medusa_heads heads of
 * opts->medusa_layers ResBlocks, own or shared projection, values from
 * Philox keyed by opts->seed and the tensor name, stored as opts->dtype,
 * with the base_sha256 of model_dir's safetensors (reference/methods/medusa.h).
 * The directory of heads_path is created when missing. */
int randmodel_write_medusa(const char *heads_path, const char *model_dir, const model_config *cfg,
                           const randmodel_opts *opts, sp_error *err);

/* The default heads path for a model written to dir: DIR-medusa/medusa_heads.safetensors,
 * the place `specula generate --method medusa` looks first. out[size]. */
void randmodel_medusa_default_path(const char *dir, char *out, size_t size);

/* Elements [offset, offset + count) of tensor t (row-major) for this seed,
 * before rounding to the storage dtype. The Philox stream is a hash of the
 * name and shape; prefix (the layout's tensor prefix) is left out of it, so
 * the full and the text-only layout of one seed hold the same values. */
void randmodel_fill(uint64_t seed, const tensor_spec *t, const char *prefix, float *dst, int64_t offset, int64_t count);

#endif
