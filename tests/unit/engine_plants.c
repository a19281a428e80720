/* engine_plants.c — see engine_plants.h. */
#include "engine_plants.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

int engine_plant_passes, engine_plant_widest;

static void (*real_attention)(engine_backend *, const epass *, int, const attention_args *);
static void (*real_deltanet)(engine_backend *, const epass *, const deltanet_args *);
static void (*real_begin_pass)(engine_backend *, const epass *);
static plant_cross plant_which;

/* The pass with its second sequence's KV table swapped for the first one's; seqs: [p->n_seqs] room. */
static epass wrong_table(const epass *p, epass_seq *seqs) {
    memcpy(seqs, p->seqs, (size_t)p->n_seqs * sizeof *seqs);
    if (p->n_seqs > 1) seqs[1].table = seqs[0].table;
    epass q = *p;
    q.seqs = seqs;
    return q;
}

/* Counts the pass; under the attention slip, the backend is told the wrong table from the start of the pass (the
 * CUDA backend uploads the tables here, the CPU's reads them as its attention runs). */
static void counting_begin_pass(engine_backend *b, const epass *p) {
    engine_plant_passes++;
    if (p->n_seqs > engine_plant_widest) engine_plant_widest = p->n_seqs;
    if (plant_which != PLANT_CROSS_ATTENTION) {
        real_begin_pass(b, p);
        return;
    }
    epass_seq *seqs = sp_xcalloc((size_t)p->n_seqs, sizeof *seqs, "planted pass sequences");
    const epass q = wrong_table(p, seqs);
    real_begin_pass(b, &q);
    free(seqs);
}

static void attention_wrong_table(engine_backend *b, const epass *p, int la, const attention_args *a) {
    epass_seq *seqs = sp_xcalloc((size_t)p->n_seqs, sizeof *seqs, "planted pass sequences");
    const epass q = wrong_table(p, seqs);
    real_attention(b, &q, la, a);
    free(seqs);
}

static void deltanet_wrong_state(engine_backend *b, const epass *p, const deltanet_args *a) {
    const float **conv_from = sp_xcalloc((size_t)p->m, sizeof *conv_from, "planted state pointers");
    const float **rec_from = sp_xcalloc((size_t)p->m, sizeof *rec_from, "planted state pointers");
    memcpy(conv_from, a->conv_from, (size_t)p->m * sizeof *conv_from);
    memcpy(rec_from, a->rec_from, (size_t)p->m * sizeof *rec_from);
    if (p->n_seqs > 1) { /* node 0 is the first sequence's root: it starts from that sequence's state */
        conv_from[p->seqs[1].first] = conv_from[0];
        rec_from[p->seqs[1].first] = rec_from[0];
    }
    deltanet_args planted = *a;
    planted.conv_from = conv_from;
    planted.rec_from = rec_from;
    real_deltanet(b, p, &planted);
    free(conv_from);
    free(rec_from);
}

void engine_plant_cross_seq(engine *e, plant_cross which) {
    real_attention = e->be.attention;
    real_deltanet = e->be.deltanet;
    real_begin_pass = e->be.begin_pass;
    plant_which = which;
    e->be.begin_pass = counting_begin_pass;
    if (which == PLANT_CROSS_ATTENTION) e->be.attention = attention_wrong_table;
    if (which == PLANT_CROSS_DELTANET) e->be.deltanet = deltanet_wrong_state;
}
