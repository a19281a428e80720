/* engine.c — open and close the engine: weights, backend, KV cache and the
 * activation buffers of a pass (see engine.h). */
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "footprint.h"

engine_options engine_defaults(void) {
    engine_options o = {1, 0};
    return o;
}

static void act_free(eact *a) {
    float *bufs[] = {a->x, a->xn, a->out, a->q, a->k, a->v,      a->mixed,
                     a->z, a->ab, a->att, a->g, a->u, a->scores, a->mtp_in};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    free(a->keys);
    free(a->values);
    free(a->head_keys);
    free(a->head_values);
    memset(a, 0, sizeof *a);
}

void engine_act_reserve(engine *e, int m, int keys) {
    eact *a = &e->act;
    const model_config *c = &e->cfg;
    if (m > a->rows) {
        const int rows = m > 2 * a->rows ? m : 2 * a->rows;
        const size_t D = (size_t)c->hidden_size, H = (size_t)c->num_heads * c->head_dim;
        const size_t kv = (size_t)c->num_kv_heads * c->head_dim, C = (size_t)config_conv_dim(c);
        const size_t HvDv = (size_t)c->lin_v_heads * c->lin_v_dim, F = (size_t)c->intermediate_size;
        const size_t wide = 2 * H > C ? 2 * H : C, att = H > HvDv ? H : HvDv;
        float **bufs[] = {&a->x, &a->xn, &a->out, &a->q, &a->k, &a->v,     &a->mixed,
                          &a->z, &a->ab, &a->att, &a->g, &a->u, &a->mtp_in};
        const size_t widths[] = {D, D, D, wide, kv, kv, C, HvDv, 2 * (size_t)c->lin_v_heads, att, F, F, 2 * D};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
            free(*bufs[i]);
            *bufs[i] = sp_xcalloc((size_t)rows * widths[i], sizeof(float), "engine activations");
        }
        a->rows = rows;
    }
    if (keys > a->max_keys) {
        const int cap = keys > 2 * a->max_keys ? keys : 2 * a->max_keys;
        a->scores = sp_xrealloc(a->scores, (size_t)cap, sizeof(float), "attention scores");
        a->keys = sp_xrealloc(a->keys, (size_t)cap, sizeof *a->keys, "attention keys");
        a->values = sp_xrealloc(a->values, (size_t)cap, sizeof *a->values, "attention values");
        a->head_keys = sp_xrealloc(a->head_keys, (size_t)cap, sizeof *a->head_keys, "attention head keys");
        a->head_values = sp_xrealloc(a->head_values, (size_t)cap, sizeof *a->head_values, "attention head values");
        a->max_keys = cap;
    }
}

int engine_open(engine *e, const char *dir, const engine_options *o, sp_error *err) {
    memset(e, 0, sizeof *e);
    e->opt = o ? *o : engine_defaults();
    if (e->opt.threads < 1) return sp_fail(err, "cpu engine: %d threads: at least 1 is needed", e->opt.threads);
    if (engine_weights_load(&e->w, dir, e->opt.f32_weights, err)) return -1;
    snprintf(e->path, sizeof e->path, "%s", dir);
    e->cfg = e->w.ck.cfg;
    const model_config *c = &e->cfg;
    e->La = config_num_full(c);
    e->Ll = config_num_linear(c);
    kv_cache_build(&e->kv, e->La, c->num_kv_heads * c->head_dim);
    e->slot_floats = (size_t)e->Ll * ((size_t)config_conv_dim(c) * (c->conv_kernel - 1) +
                                      (size_t)c->lin_v_heads * c->lin_k_dim * c->lin_v_dim);
    if (e->slot_floats == 0) e->slot_floats = 1; /* a model without DeltaNet layers still gets addressable slots */
    backend_cpu_build(&e->be, e->opt.threads, e->opt.f32_weights);
    model_footprint fp;
    footprint_compute(c, 0, engine_weights_storage_bytes(&e->w), 4.0, &fp);
    e->weight_bytes_per_pass = fp.weight_bytes_per_step;
    return 0;
}

void engine_close(engine *e) {
    for (int i = 0; i < e->n_seqs; i++) {
        eseq *s = &e->seqs[i];
        kv_table_free(&e->kv, &s->kv);
        free(s->parent);
        free(s->depth);
        free(s->node_slot);
        free(s->tree_keys);
        free(s->tree_values);
    }
    free(e->seqs);
    kv_cache_free(&e->kv);
    free(e->slots);
    free(e->slot_used);
    act_free(&e->act);
    engine_weights_free(&e->w);
    memset(e, 0, sizeof *e);
}
