/* bpe.h — the byte-level BPE model of a Hugging Face tokenizer.json (vocabulary, merges by rank, GPT-2's byte
 * mapping) and the merge loop for one pre-tokenized word. The tokenizer owns one; normalisers, regexes and added
 * tokens are its business, not this file's. Ids are ints in [0, V). */
#ifndef SPECULA_BPE_H
#define SPECULA_BPE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct {
    int n_ids;             /* [V'] highest vocabulary id + 1 (ids without a token may exist) */
    char **text;           /* [V'] token as written in tokenizer.json ("Ġthe"), NUL-terminated; NULL if unused */
    size_t *n_text;        /* [V'] its length in bytes */
    uint32_t *vocab_slots; /* open-addressing table: id + 1 of the token hashed there, 0 = empty */
    uint32_t vocab_mask;   /* table size - 1 (a power of two, at least twice the vocabulary) */
    int n_merges;
    int *merge_left, *merge_right, *merge_result; /* [n_merges] ids, index = rank */
    uint32_t *merge_slots;                        /* open-addressing table: rank + 1 of the pair hashed there */
    uint32_t merge_mask;
    int byte_id[256]; /* id of the one-symbol token of every byte */
} bpe_model;

/* Reads the "model" object of tokenizer.json. Accepts only what byte-level
 * BPE needs: type "BPE", no dropout, no unk token, no subword prefix or
 * suffix, no byte fallback, ignore_merges false; vocab as an object of
 * token -> id; merges as "a b" strings or [a, b] lists. Every merge part and
 * result must be in the vocabulary, and so must the symbol of every byte.
 * `origin` (the file name) starts every error message. */
int bpe_build(bpe_model *m, json_t *model, const char *origin, sp_error *err);
void bpe_free(bpe_model *m);

/* Id of the vocabulary entry text[0..len), or -1. */
int bpe_lookup(const bpe_model *m, const char *text, size_t len);

/* GPT-2's reversible byte <-> printable code point mapping: bytes that are
 * printable Latin-1 map to themselves, the other 68 to U+0100..U+0143. */
uint32_t bpe_byte_to_cp(unsigned char b);
int bpe_cp_to_byte(uint32_t cp); /* the byte, or -1 for a code point outside the mapping */

/* Scratch memory of bpe_encode_word, reused across words; zero-initialise. */
typedef struct {
    struct bpe_symbol *sym;
    struct bpe_candidate *heap;
    size_t sym_cap, heap_cap;
} bpe_scratch;
void bpe_scratch_free(bpe_scratch *s);

/* Encodes one pre-tokenized word given as raw bytes (the byte-level mapping
 * is implied: each byte starts as the token byte_id[b]). Writes at most n
 * ids to out and returns how many. Merges are applied lowest rank first,
 * leftmost first among equal ranks, exactly as the `tokenizers` crate does. */
size_t bpe_encode_word(const bpe_model *m, const unsigned char *word, size_t n, bpe_scratch *s, int *out);

#endif
