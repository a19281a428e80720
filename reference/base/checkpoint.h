/* checkpoint.h — the loader's checks, shared by every backend. A backend opens a checkpoint here, then reads
 * each tensor into its own storage (checkpoint_read_f32) or keeps the mapped bytes as they are. */
#ifndef SPECULA_CHECKPOINT_H
#define SPECULA_CHECKPOINT_H

#include "config.h"
#include "error.h"
#include "layout.h"
#include "safetensors.h"

typedef struct {
    char path[4096];
    model_config cfg;
    st_set st;          /* the mapped safetensors files */
    int with_mtp;       /* the MTP module is present (and checked) */
    tensor_spec *specs; /* [n_specs] the layout of cfg */
    int n_specs;
    const st_tensor **tensors; /* [n_specs] the file's tensor of each spec */
    int storage_bytes;         /* bytes per parameter as stored (2 for bf16/f16, 4 for f32) */
} checkpoint;

/* Opens DIR (config.json + model.safetensors or shards), parses and
 * range-checks the config, and checks that every tensor the config implies
 * (layout.h) is there with its exact shape, and that no tensor is left
 * unaccounted for. The MTP module is checked when the config declares it and
 * the checkpoint has its first tensor (the text-only layout transformers saves
 * drops it); a partial module is an error. Every message names the tensor
 * and the file; those about tensors start "loading DIR: ". */
int checkpoint_open(checkpoint *ck, const char *dir, sp_error *err);
/* The checks alone, of ck->st against ck->cfg, both filled by the caller
 * (checkpoint_open reads them from DIR; the fuzzer from memory, with
 * st_open_buffer). checkpoint_close releases ck either way. */
int checkpoint_check(checkpoint *ck, sp_error *err);
/* Converts tensor i into dst[numel] float32; refuses a NaN or an infinity,
 * naming the element. */
int checkpoint_read_f32(const checkpoint *ck, int i, float *dst, sp_error *err);
/* The same check without keeping a copy, for a backend that uses the mapped
 * bytes as they are. */
int checkpoint_check_finite(const checkpoint *ck, int i, sp_error *err);
void checkpoint_close(checkpoint *ck);

#endif
