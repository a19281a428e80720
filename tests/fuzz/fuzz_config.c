/* fuzz_config.c — config.json (reference/base/config.c): any text is either
 * refused with a message or gives a config whose layout (layout.c) and
 * derived sizes can be computed without a crash. */
#include "config.h"
#include "fuzz.h"
#include "layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size);
    model_config cfg;
    sp_error err = {{0}};
    if (config_parse(text, "fuzz config.json", &cfg, &err) == 0) {
        FUZZ_CHECK(config_num_full(&cfg) + config_num_linear(&cfg) == cfg.num_layers);
        FUZZ_CHECK(config_conv_dim(&cfg) > 0 && config_rotated_dims(&cfg) <= cfg.head_dim);
        for (int l = 0; l < cfg.num_layers; l++) FUZZ_CHECK(config_type_index(&cfg, l) >= 0);
        const int max = layout_max_tensors(&cfg);
        tensor_spec *specs = calloc((size_t)max, sizeof *specs);
        FUZZ_CHECK(specs != NULL);
        const int n = layout_build(&cfg, cfg.mtp_num_layers > 0, specs);
        FUZZ_CHECK(n >= 1 && n <= max);
        for (int i = 0; i < n; i++) FUZZ_CHECK(tensor_spec_numel(&specs[i]) > 0);
        free(specs);
    } else {
        FUZZ_CHECK(err.msg[0] != '\0'); /* a refusal always says why */
    }
    free(text);
    return 0;
}
