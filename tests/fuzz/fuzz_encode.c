/* fuzz_encode.c — encoding and decoding text (reference/base/tokenizer_encode.c,
 * bpe.c) with the embedded model's tokenizer (byte-level, every byte in the
 * vocabulary): any bytes are refused with a message (invalid UTF-8) or give
 * ids of the vocabulary; text that NFC leaves as it is decodes back to itself. */
#include <utf8proc.h>

#include "fuzz.h"
#include "tokenizer.h"

#ifndef FUZZ_TOKENIZER_JSON
#define FUZZ_TOKENIZER_JSON "models/tiny-shakespeare/tokenizer.json"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static tokenizer t;
    static int loaded;
    sp_error err = {{0}};
    if (!loaded) {
        if (tokenizer_load(&t, FUZZ_TOKENIZER_JSON, &err)) {
            fprintf(stderr, "fuzz_encode: %s\n", err.msg);
            abort();
        }
        loaded = 1;
    }
    int *ids = NULL, n = 0;
    if (tokenizer_encode(&t, (const char *)data, size, &ids, &n, &err)) {
        FUZZ_CHECK(err.msg[0] != '\0');
        return 0;
    }
    for (int i = 0; i < n; i++) FUZZ_CHECK(ids[i] >= 0 && ids[i] < tokenizer_vocab_size(&t));
    char *out = NULL;
    size_t len = 0;
    FUZZ_CHECK(tokenizer_decode(&t, ids, n, &out, &len, &err) == 0);
    /* the NFC normaliser is the only step that may change the text */
    if (!memchr(data, 0, size)) {
        char *text = fuzz_text(data, size);
        char *nfc = (char *)utf8proc_NFC((const utf8proc_uint8_t *)text);
        if (nfc && strcmp(nfc, text) == 0) FUZZ_CHECK(len == size && memcmp(out, data, size) == 0);
        free(nfc);
        free(text);
    }
    free(out);
    free(ids);
    return 0;
}
