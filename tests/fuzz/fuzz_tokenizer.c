/* fuzz_tokenizer.c — tokenizer.json (reference/base/tokenizer.c, bpe.c):
 * any text is refused with a message or gives a tokenizer that encodes a
 * few fixed texts into ids of its vocabulary and decodes them again. The
 * text fuzzed through a fixed tokenizer is fuzz_encode.c's job. */
#include "fuzz.h"
#include "tokenizer.h"

static const char *const texts[] = {
    "ROMEO:\nBut soft, what light through yonder window breaks?",
    "<|im_start|>user\nhi<|im_end|>  \t\r\n",
    "caf\xc3\xa9 cafe\xcc\x81 \xe2\x80\x94 \xf0\x9f\x99\x82 123 it's",
    "",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tokenizer t;
    sp_error err = {{0}};
    if (tokenizer_parse(&t, (const char *)data, size, "fuzz tokenizer.json", &err)) {
        FUZZ_CHECK(err.msg[0] != '\0');
        return 0;
    }
    const int V = tokenizer_vocab_size(&t);
    for (size_t k = 0; k < sizeof texts / sizeof *texts; k++) {
        int *ids = NULL, n = 0;
        if (tokenizer_encode(&t, texts[k], strlen(texts[k]), &ids, &n, &err)) continue;
        for (int i = 0; i < n; i++) FUZZ_CHECK(ids[i] >= 0 && ids[i] < V);
        char *out = NULL;
        size_t len = 0;
        if (tokenizer_decode(&t, ids, n, &out, &len, &err) == 0) FUZZ_CHECK(strlen(out) <= len);
        free(out);
        free(ids);
    }
    for (int id = 0; id < V && id < 64; id++) {
        const char *text = tokenizer_token_text(&t, id);
        if (text) FUZZ_CHECK(tokenizer_token_id(&t, text) >= 0);
        (void)tokenizer_is_special(&t, id);
    }
    tokenizer_free(&t);
    return 0;
}
