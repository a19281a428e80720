/* fuzz_medusa_heads.c — a Medusa heads file (reference/methods/medusa_heads.c) read from memory: any bytes are
 * refused with a message or give heads whose forward runs. */
#include "fuzz.h"
#include "medusa.h"

/* The base is the nano checkpoint of tests/fuzz/make-seeds.sh; its digest is not checked. */
enum { D = 8, V = 8 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const float lm_head[V * D]; /* zeros: for heads that share the target's */
    sp_error err = {{0}};
    st_set st;
    if (st_open_buffer(&st, data, size, "fuzz heads", &err)) return 0;
    medusa_heads h;
    const medusa_base base = {NULL, D, V, lm_head};
    if (medusa_load_set(&h, &st, "fuzz heads", &base, 1, &err) == 0) {
        float hidden[D], logits[V], scratch[2 * D];
        for (int i = 0; i < D; i++) hidden[i] = (float)(i - D / 2) / D;
        /* the logits need not be finite: finite weights near the float range overflow, as they would in the
         * target's own layers; the loader refuses only non-finite stored values */
        for (int i = 0; i < h.n_heads; i++) medusa_head_forward(&h, i, hidden, logits, scratch);
        FUZZ_CHECK(medusa_bytes_per_step(&h, 2) > 0);
        medusa_free(&h);
    } else {
        FUZZ_CHECK(err.msg[0] != '\0');
    }
    st_close(&st);
    return 0;
}
