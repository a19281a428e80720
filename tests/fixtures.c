/* fixtures.c — random micro models on disk for the tests (see fixtures.h). */
#include "fixtures.h"

#include <check.h>
#include <stdio.h>
#include <unistd.h>

#include "genmodel/randmodel.h"
#include "harness.h"

void fixture_model_open(fixture_model *f, const char *preset, uint64_t seed, void (*tweak)(model_config *)) {
    model_config cfg;
    sp_error err;
    ck_assert_msg(randmodel_preset(preset, &cfg, &err) == 0, "%s", err.msg);
    if (tweak) tweak(&cfg);
    randmodel_opts opts;
    randmodel_default_opts(&opts);
    opts.seed = seed;
    opts.dtype = DTYPE_F32;
    harness_tmpdir(f->dir, sizeof f->dir);
    ck_assert_msg(randmodel_write(f->dir, &cfg, &opts, NULL, &err) == 0, "%s", err.msg);
    ck_assert_msg(model_load(&f->m, f->dir, &err) == 0, "%s", err.msg);
}

void fixture_model_close(fixture_model *f) {
    model_free(&f->m);
    harness_rmtree(f->dir);
}

const char *fixture_embedded_model(void) {
    static const char *path = "models/tiny-shakespeare/model.safetensors";
    return access(path, R_OK) == 0 ? "models/tiny-shakespeare" : NULL;
}
