/* tokenizer.h — the byte-level BPE tokenizer of a Hugging Face tokenizer.json, encoding and decoding exactly as
 * the `tokenizers` package does for Qwen's pipeline: added tokens, NFC (utf8proc), a Split(regex, Isolated)
 * pre-tokenizer (PCRE2, UTF + UCP), ByteLevel, BPE. Text is UTF-8; ids are ints in [0, V). */
#ifndef SPECULA_TOKENIZER_H
#define SPECULA_TOKENIZER_H

#include <stddef.h>

#include "bpe.h"
#include "error.h"

/* An entry of "added_tokens": matched in the text before anything else. */
typedef struct {
    int id;
    char *content; /* UTF-8 as written in tokenizer.json, NUL-terminated */
    size_t len;
    char *pattern; /* what is searched for: content, NFC-normalised when `normalized` */
    size_t pattern_len;
    int single_word; /* match only when not inside a word */
    int lstrip;      /* the match swallows the whitespace on its left */
    int rstrip;      /* ... and on its right */
    int normalized;  /* matched in the normalised text (else in the raw text) */
    int special;     /* a control token (<|endoftext|>, <|im_start|>) */
} tokenizer_added;

typedef struct {
    int vocab_size;        /* [V] highest id of the vocabulary or the added tokens + 1 */
    const char **text;     /* [V] token as written in tokenizer.json; NULL for an unused id */
    unsigned char **bytes; /* [V] what each token decodes to */
    size_t *n_bytes;       /* [V] */
    int n_added;
    tokenizer_added *added; /* [n_added] */
    int nfc;                /* the normaliser is NFC (else none) */
    void *split_re;         /* pcre2_code * of the Split regex; opaque so users need not include pcre2.h */
    bpe_model bpe;
} tokenizer;

/* Reads PATH (a tokenizer.json, or a directory holding one). Supported: a BPE
 * model with byte-level symbols (bpe.h); normalizer NFC or null; pre_tokenizer
 * the Sequence [Split(Regex, "Isolated", invert false), ByteLevel(
 * add_prefix_space false, use_regex false)]; decoder ByteLevel;
 * post_processor ByteLevel or null; no truncation or padding. Anything else
 * fails with a message naming the file and the field. */
int tokenizer_load(tokenizer *t, const char *path, sp_error *err);
/* Same, from a JSON text already in memory; `origin` names it in errors. */
int tokenizer_parse(tokenizer *t, const char *json_text, size_t len, const char *origin, sp_error *err);
void tokenizer_free(tokenizer *t);

/* Encodes text[0..len) (UTF-8; invalid UTF-8 is an error naming the offset)
 * into a malloc'd array *ids of *n ids, which the caller frees. Added and
 * special tokens written in the text are recognised, as `tokenizers` does by
 * default; no BOS/EOS is added. */
int tokenizer_encode(const tokenizer *t, const char *text, size_t len, int **ids, int *n, sp_error *err);

/* Decodes ids[0..n) into a malloc'd, NUL-terminated byte string *out of
 * *len bytes (the caller frees it). Special tokens decode to their content.
 * The bytes are returned as they are: a cut in the middle of a multi-byte
 * character is not replaced by U+FFFD as the Python package would. */
int tokenizer_decode(const tokenizer *t, const int *ids, int n, char **out, size_t *len, sp_error *err);

int tokenizer_vocab_size(const tokenizer *t); /* V */
/* The token as written in tokenizer.json ("Ġthe", "<|im_end|>"), or NULL. */
const char *tokenizer_token_text(const tokenizer *t, int id);
/* The bytes the token decodes to (for streaming output), or NULL. */
const unsigned char *tokenizer_token_bytes(const tokenizer *t, int id, size_t *len);
/* The id of a token given as written in tokenizer.json: an added or special
 * token's content ("<|endoftext|>") or a vocabulary entry; -1 when absent. */
int tokenizer_token_id(const tokenizer *t, const char *text);
/* 1 when id is an added token flagged special, else 0. */
int tokenizer_is_special(const tokenizer *t, int id);

#endif
