/* engine.c — open and close the engine: weights, backend, KV cache and the
 * activation buffers of a pass (see engine.h). */
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "footprint.h"

engine_options engine_defaults(void) {
    engine_options o = {1, 0, 0, 0, 0, KV_DEFAULT};
    return o;
}

#define ACT_BUFFERS 14

/* The activation buffers of e and their widths (floats per row). */
static void act_buffers(engine *e, float **bufs[ACT_BUFFERS], size_t widths[ACT_BUFFERS]) {
    eact *a = &e->act;
    const model_config *c = &e->cfg;
    const size_t D = (size_t)c->hidden_size, H = (size_t)c->num_heads * c->head_dim;
    const size_t kv = (size_t)c->num_kv_heads * c->head_dim, C = (size_t)config_conv_dim(c);
    const size_t HvDv = (size_t)c->lin_v_heads * c->lin_v_dim, F = (size_t)c->intermediate_size;
    const size_t wide = 2 * H > C ? 2 * H : C, att = H > HvDv ? H : HvDv;
    float **const all[ACT_BUFFERS] = {&a->x, &a->xn, &a->out, &a->q, &a->k, &a->v,      &a->mixed,
                                      &a->z, &a->ab, &a->att, &a->g, &a->u, &a->mtp_in, &a->hidden_in};
    const size_t w[ACT_BUFFERS] = {D, D, D, wide, kv, kv, C, HvDv, 2 * (size_t)c->lin_v_heads, att, F, F, 2 * D, D};
    memcpy(bufs, all, sizeof all);
    memcpy(widths, w, sizeof w);
}

static void act_free(engine *e) {
    eact *a = &e->act;
    float **bufs[ACT_BUFFERS];
    size_t widths[ACT_BUFFERS];
    act_buffers(e, bufs, widths);
    for (int i = 0; i < ACT_BUFFERS; i++)
        if (*bufs[i]) e->be.free(&e->be, *bufs[i]);
    if (a->logits) e->be.free(&e->be, a->logits);
    if (a->tree_q) e->be.free(&e->be, a->tree_q);
    if (a->tree_tokens) e->be.free(&e->be, a->tree_tokens);
    free(a->conv_state);
    free(a->rec_state);
    free(a->conv_from);
    free(a->rec_from);
    free(a->log);
    free(a->state_slot);
    free(a->tokens);
    free(a->parent);
    free(a->depth);
    free(a->seq_of);
    free(a->seqs);
    memset(a, 0, sizeof *a);
}

void engine_act_reserve(engine *e, int m) {
    eact *a = &e->act;
    if (m <= a->rows) return;
    const int rows = m > 2 * a->rows ? m : 2 * a->rows;
    float **bufs[ACT_BUFFERS];
    size_t widths[ACT_BUFFERS];
    act_buffers(e, bufs, widths);
    for (int i = 0; i < ACT_BUFFERS; i++) {
        if (*bufs[i]) e->be.free(&e->be, *bufs[i]);
        const size_t bytes = (size_t)rows * (widths[i] ? widths[i] : 1) * sizeof(float);
        *bufs[i] = e->be.alloc(&e->be, bytes, "engine activations");
    }
    if (a->logits || !e->be.host_memory) {
        if (a->logits) e->be.free(&e->be, a->logits);
        a->logits = e->be.alloc(&e->be, (size_t)rows * e->cfg.vocab_size * sizeof(float), "logits");
    }
    a->conv_state = sp_xrealloc(a->conv_state, (size_t)rows, sizeof *a->conv_state, "DeltaNet state pointers");
    a->rec_state = sp_xrealloc(a->rec_state, (size_t)rows, sizeof *a->rec_state, "DeltaNet state pointers");
    a->conv_from = sp_xrealloc(a->conv_from, (size_t)rows, sizeof *a->conv_from, "DeltaNet state pointers");
    a->rec_from = sp_xrealloc(a->rec_from, (size_t)rows, sizeof *a->rec_from, "DeltaNet state pointers");
    a->log = sp_xrealloc(a->log, (size_t)rows, sizeof *a->log, "DeltaNet log pointers");
    a->state_slot = sp_xrealloc(a->state_slot, (size_t)rows, sizeof *a->state_slot, "DeltaNet node slots");
    a->tokens = sp_xrealloc(a->tokens, (size_t)rows, sizeof(int), "pass tokens");
    a->parent = sp_xrealloc(a->parent, (size_t)rows, sizeof(int), "pass parents");
    a->depth = sp_xrealloc(a->depth, (size_t)rows, sizeof(int), "pass depths");
    a->seq_of = sp_xrealloc(a->seq_of, (size_t)rows, sizeof(int), "pass node sequences");
    a->rows = rows;
}

void engine_download(engine *e, float *host, const float *src, size_t n) {
    if (host != src) e->be.download(&e->be, host, src, n * sizeof(float));
}

void engine_logits(engine *e, float *logits, const float *xn, int m) {
    const int V = e->cfg.vocab_size, D = e->cfg.hidden_size;
    float *y = e->be.host_memory ? logits : e->act.logits; /* host memory: straight into the caller's rows */
    e->be.matmul(&e->be, y, engine_bweight(e, 0, ROLE_LM_HEAD), xn, m, V, D);
    engine_download(e, logits, y, (size_t)m * V);
}

void engine_act_reserve_logits(engine *e, int m) {
    engine_act_reserve(e, m);
    if (!e->act.logits)
        e->act.logits = e->be.alloc(&e->be, (size_t)e->act.rows * e->cfg.vocab_size * sizeof(float), "logits");
}

void engine_act_reserve_tree(engine *e, int n) {
    eact *a = &e->act;
    if (n <= a->tree_rows) return;
    const int rows = n > 2 * a->tree_rows ? n : 2 * a->tree_rows;
    if (a->tree_q) e->be.free(&e->be, a->tree_q);
    if (a->tree_tokens) e->be.free(&e->be, a->tree_tokens);
    a->tree_q = e->be.alloc(&e->be, (size_t)rows * e->cfg.vocab_size * sizeof(float), "draft distributions");
    a->tree_tokens = e->be.alloc(&e->be, (size_t)rows * sizeof(int), "tree tokens");
    a->tree_rows = rows;
}

const eweight *engine_bweight(const engine *e, int layer, tensor_role role) {
    return &e->bw[engine_weight_index(&e->w, layer, role)];
}

kv_format engine_kv_format(const engine *e) {
    return e->opt.kv != KV_DEFAULT ? e->opt.kv : e->be.kv_bf16 ? KV_BF16 : KV_F32;
}

/* Opens e on weights that are loaded (seed 0: the checkpoint at dir) or synthesized (the layout of dir's
 * config.json, random values from seed, on the backend). */
static int open_engine(engine *e, const char *dir, const engine_options *o, uint64_t seed, sp_error *err) {
    memset(e, 0, sizeof *e);
    e->opt = o ? *o : engine_defaults();
    const char *who = e->opt.cuda ? "cuda engine" : "cpu engine";
    if (e->opt.threads < 1) return sp_fail(err, "%s: %d threads: at least 1 is needed", who, e->opt.threads);
    if (e->opt.cuda && e->opt.f32_weights)
        return sp_fail(err, "cuda engine: --dtype f32 is the CPU engine's exact mode; the CUDA backend computes with "
                            "bf16 weights");
    if (e->opt.cuda && e->opt.kv == KV_F32)
        return sp_fail(err, "cuda engine: --kv-cache f32 is the CPU engine's; the CUDA backend keeps its KV cache in "
                            "bf16, q8 or q4");
    if (seed ? engine_weights_synthetic(&e->w, dir, err) : engine_weights_load(&e->w, dir, e->opt.f32_weights, err))
        return -1;
    snprintf(e->path, sizeof e->path, "%s", dir);
    e->cfg = e->w.ck.cfg;
    const model_config *c = &e->cfg;
    if (kv_format_check(e->opt.kv, c->head_dim, err)) {
        sp_wrap(err, "%s: ", who);
        engine_weights_free(&e->w);
        memset(e, 0, sizeof *e);
        return -1;
    }
    if (e->opt.cuda) {
        if (backend_cuda_build(&e->be, &e->cfg, err)) {
            engine_weights_free(&e->w);
            memset(e, 0, sizeof *e);
            return -1;
        }
        if (e->opt.cuda_eager) backend_cuda_graphs(&e->be, CUDA_GRAPHS_OFF);
        if (e->opt.cuda_debug) backend_cuda_debug(&e->be);
    } else {
        backend_cpu_build(&e->be, &e->cfg, e->opt.threads, e->opt.f32_weights);
    }
    if (seed && !e->be.synthesize_weights) {
        sp_fail(err, "%s: synthetic weights are for the CUDA backend (--backend cuda)", who);
        e->bw = NULL;
    } else {
        e->bw = seed ? e->be.synthesize_weights(&e->be, &e->w, seed, err) : e->be.place_weights(&e->be, &e->w, err);
    }
    if (!e->bw) {
        sp_wrap(err, "loading %s: ", dir);
        e->be.release(&e->be);
        engine_weights_free(&e->w);
        memset(e, 0, sizeof *e);
        return -1;
    }
    e->La = config_num_full(c);
    e->Ll = config_num_linear(c);
    kv_cache_build(&e->kv, &e->be, e->La, c->num_kv_heads, c->head_dim, engine_kv_format(e));
    e->slot_floats = (size_t)e->Ll * ((size_t)config_conv_dim(c) * (c->conv_kernel - 1) +
                                      (size_t)c->lin_v_heads * c->lin_k_dim * c->lin_v_dim);
    if (e->slot_floats == 0) e->slot_floats = 1; /* a model without DeltaNet layers still gets addressable slots */
    model_footprint fp;
    footprint_compute(c, 0, engine_weights_storage_bytes(&e->w), 4.0, &fp);
    e->weight_bytes_per_pass = fp.weight_bytes_per_step;
    return 0;
}

int engine_open(engine *e, const char *dir, const engine_options *o, sp_error *err) {
    return open_engine(e, dir, o, 0, err);
}

int engine_open_synthetic(engine *e, const char *dir, const engine_options *o, uint64_t seed, sp_error *err) {
    return open_engine(e, dir, o, seed ? seed : 1, err);
}

void engine_close(engine *e) {
    if (!e->be.release) return; /* never opened, or closed */
    for (int i = 0; i < e->n_seqs; i++) {
        eseq *s = &e->seqs[i];
        kv_table_free(&e->kv, &s->kv);
        free(s->parent);
        free(s->depth);
        free(s->node_slot);
        if (s->delta_log) e->be.free(&e->be, s->delta_log);
    }
    free(e->seqs);
    kv_cache_free(&e->kv);
    if (e->slots) e->be.free(&e->be, e->slots);
    free(e->slot_used);
    act_free(e);
    e->be.free_weights(&e->be, e->bw, &e->w);
    e->be.release(&e->be);
    engine_weights_free(&e->w);
    memset(e, 0, sizeof *e);
}
