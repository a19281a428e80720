/* footprint.c — parameter and byte arithmetic over the tensor layout. */
#include "footprint.h"

#include <stdlib.h>

#include "layout.h"

void footprint_compute(const model_config *c, int with_mtp, double bytes_per_param, double kv_bytes,
                       model_footprint *f) {
    int max = layout_max_tensors(c);
    tensor_spec *specs = sp_xcalloc((size_t)max, sizeof *specs, "tensor specs");
    int n = layout_build(c, with_mtp, specs);
    const double D = c->hidden_size, V = c->vocab_size;
    long long trunk = 0, mtp = 0;
    for (int i = 0; i < n; i++) {
        long long k = tensor_spec_numel(&specs[i]);
        if (specs[i].group == GROUP_MTP)
            mtp += k;
        else
            trunk += k;
    }
    free(specs);
    f->params_total = trunk;
    f->params_embedding = (long long)(V * D);
    f->params_lm_head = c->tie_word_embeddings ? 0 : (long long)(V * D);
    f->params_mtp = mtp;
    /* the embedding table is read one row per token, unless it doubles as the lm_head */
    double step_params = (double)trunk - (c->tie_word_embeddings ? 0 : V * D - D);
    f->weight_bytes_per_step = step_params * bytes_per_param;
    f->mtp_bytes_per_step = mtp ? ((double)mtp + V * D + D) * bytes_per_param : 0;
    f->kv_bytes_per_position = 2.0 * config_num_full(c) * c->num_kv_heads * c->head_dim * kv_bytes;
    f->deltanet_bytes =
        (double)config_num_linear(c) *
        ((double)config_conv_dim(c) * (c->conv_kernel - 1) + (double)c->lin_v_heads * c->lin_k_dim * c->lin_v_dim) *
        4.0;
}
