/* medusa_common.c — the Medusa suites' fixtures (see medusa_common.h). */
#include "medusa_common.h"

#include <check.h>
#include <stdio.h>

#include "genmodel/randmodel.h"
#include "harness.h"
#include "philox.h"
#include "reference_target.h"

char medusa_tmp[256], medusa_micro[320], medusa_other[320];

void medusa_setup(void) {
    harness_tmpdir(medusa_tmp, sizeof medusa_tmp);
    snprintf(medusa_micro, sizeof medusa_micro, "%s/micro", medusa_tmp);
    snprintf(medusa_other, sizeof medusa_other, "%s/other", medusa_tmp);
    model_config c;
    sp_error err;
    randmodel_opts o;
    randmodel_default_opts(&o);
    ck_assert(randmodel_preset("micro", &c, &err) == 0);
    ck_assert_msg(randmodel_write(medusa_micro, &c, &o, NULL, &err) == 0, "%s", err.msg);
    o.seed = 2;
    ck_assert_msg(randmodel_write(medusa_other, &c, &o, NULL, &err) == 0, "%s", err.msg);
}

void medusa_teardown(void) { harness_rmtree(medusa_tmp); }

void medusa_load_model(model *m, const char *dir) {
    sp_error err;
    ck_assert_msg(model_load(m, dir, &err) == 0, "%s", err.msg);
}

void medusa_random_heads(medusa_heads *h, const model *m, int n_heads, int n_layers, int own, uint64_t seed,
                         float scale) {
    sp_error err;
    ck_assert_msg(medusa_build(h, n_heads, n_layers, m->cfg.hidden_size, m->cfg.vocab_size, own, &err) == 0, "%s",
                  err.msg);
    for (size_t k = 0; k < h->arena_floats; k++) h->arena[k] = scale * (2 * philox_uniform(seed, 7, k, 0) - 1);
    medusa_share_lm_head(h, m->w.lm_head);
}

const medusa_base *medusa_base_of(const model *m) {
    static medusa_base b;
    b = reference_medusa_base(m);
    return &b;
}
