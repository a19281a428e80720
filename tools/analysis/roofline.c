/* roofline.c — pass times from bytes and FLOPs (see roofline.h). */
#include "roofline.h"

#include "accounting.h"
#include "footprint.h"

roofline_device roofline_h200(void) {
    roofline_device d = {"H200 SXM (datasheet: 4.8 TB/s, 989 TFLOP/s dense bf16, 141 GB)", 4.8e12, 989e12, 141e9};
    return d;
}

void roofline_workload_build(const model_config *c, double bytes_per_param, double kv_bytes, int context,
                             roofline_workload *w) {
    model_footprint fp;
    footprint_compute(c, c->mtp_num_layers > 0, bytes_per_param, kv_bytes, &fp);
    /* QKᵀ and PV: 2·H·Dh multiply-adds per cached position each */
    const double attention_flops = 4.0 * c->num_heads * c->head_dim * (double)context;
    const double kv_per_layer = 2.0 * c->num_kv_heads * c->head_dim * kv_bytes;

    w->context = context;
    w->weight_memory = (double)(fp.params_total + fp.params_mtp) * bytes_per_param;
    w->kv_bytes_per_sequence = context * (fp.kv_bytes_per_position + kv_per_layer * c->mtp_num_layers);
    w->state_bytes_per_sequence = fp.deltanet_bytes;
    w->target.weight_bytes = fp.weight_bytes_per_step;
    w->target.flops_per_position =
        2.0 * fp.weight_bytes_per_step / bytes_per_param + config_num_full(c) * attention_flops;
    w->target.seq_bytes = context * fp.kv_bytes_per_position + fp.deltanet_bytes;
    w->target.state_write_bytes = fp.deltanet_bytes;

    w->proposer.weight_bytes = fp.mtp_bytes_per_step;
    w->proposer.flops_per_position =
        2.0 * fp.mtp_bytes_per_step / bytes_per_param + c->mtp_num_layers * attention_flops;
    w->proposer.seq_bytes = context * kv_per_layer * c->mtp_num_layers;
    w->proposer.state_write_bytes = 0;
}

double roofline_pass_time(const roofline_device *d, const roofline_pass *p, int b, int positions) {
    double bytes = p->weight_bytes + b * (p->seq_bytes + positions * p->state_write_bytes);
    double flops = (double)b * positions * p->flops_per_position;
    double t_mem = bytes / d->bandwidth, t_compute = flops / d->peak_flops;
    return t_mem > t_compute ? t_mem : t_compute;
}

double roofline_speedup(const roofline_device *d, const roofline_workload *w, int b, double alpha, int k) {
    double plain = roofline_pass_time(d, &w->target, b, 1);
    double round = roofline_pass_time(d, &w->target, b, k + 1) + k * roofline_pass_time(d, &w->proposer, b, 1);
    return expected_tokens_per_pass(alpha, k) * plain / round;
}

roofline_workload roofline_single_state_write(const roofline_workload *w) {
    roofline_workload v = *w;
    v.target.seq_bytes += v.target.state_write_bytes;
    v.target.state_write_bytes = 0;
    return v;
}

int roofline_max_batch(const roofline_device *d, const roofline_workload *w, int k) {
    double free_bytes = d->memory - w->weight_memory;
    double per_sequence = w->kv_bytes_per_sequence + (1.0 + k) * w->state_bytes_per_sequence;
    if (free_bytes <= 0 || per_sequence <= 0) return free_bytes > 0 ? 1 << 30 : 0;
    double b = free_bytes / per_sequence;
    return b > (1 << 30) ? 1 << 30 : (int)b;
}
