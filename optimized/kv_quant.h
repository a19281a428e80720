/* kv_quant.h — the formats of the engine's KV cache: one head's vector of Dh floats kept as one row of
 * kv_row_bytes bytes. f32 and bf16 keep the floats; q8 and q4 keep symmetric integers with one float32 scale per
 * block of KVQ_BLOCK elements, and q4 is meant for rows rotated first (kvq_rotate). Plain C: the host sizes the
 * pool with it, the CPU backend writes and reads rows with it. */
#ifndef SPECULA_KV_QUANT_H
#define SPECULA_KV_QUANT_H

#include <stddef.h>

#include "error.h"

/* KV_DEFAULT: the backend's own element (float32 on the CPU, bf16 on a GPU), so zeroed options keep it. */
typedef enum { KV_DEFAULT = 0, KV_F32, KV_BF16, KV_Q8, KV_Q4 } kv_format;

/* Elements per scale. 32 is the group size of KIVI and of ggml's Q8_0/Q4_0: one float32 scale costs 1 bit per
 * element (q8: 9 bits, q4: 5 bits an element), and a block is small enough that one outlier coarsens only its
 * own 31 neighbours. A head narrower than a block (Dh < 32) is one block; a last partial block has its own. */
#define KVQ_BLOCK 32

const char *kv_format_name(kv_format f);             /* "f32", "bf16", "q8", "q4" ("default" for KV_DEFAULT) */
int kv_format_parse(const char *name, kv_format *f); /* 0, or −1 for a name that is none of the four */
/* Bytes of one row of Dh elements: f32 4·Dh, bf16 2·Dh, q8 4·⌈Dh/32⌉ + Dh, q4 4·⌈Dh/32⌉ + Dh/2. */
size_t kv_row_bytes(kv_format f, int Dh);
/* 0, or −1 with a message when format f cannot hold heads of Dh (q4 packs two elements a byte: Dh even). */
int kv_format_check(kv_format f, int Dh, sp_error *err);
/* 1 for the formats whose rows are rotated before they are stored (q4), else 0. */
int kv_format_rotates(kv_format f);

/* row = x[Dh] in format f. q8: per block s = max|x|/127 and q = round(x/s) in [−127, 127], so every element is
 * off by at most s/2 when read back; q4: s = max|x|/7, q in [−7, 7] (two a byte), off by at most s/2. */
void kv_row_store(kv_format f, void *row, const float *x, int Dh);
/* x[Dh] = the row read back (s·q for the quantised formats). */
void kv_row_load(kv_format f, float *x, const void *row, int Dh);
/* The scale of block b of a quantised row (the s above). */
float kv_row_scale(const void *row, int b);

/* The incoherence rotation of q4 (the randomised Hadamard transform of QuaRot and QuIP#, applied before the
 * per-block scalar quantisation of KIVI / KVQuant; this is our own code after the papers' description): each
 * group of n consecutive elements, n the largest power of two dividing Dh, becomes H·S·x/√n — S fixed seeded
 * signs, H the n×n Walsh–Hadamard matrix, done as a fast transform in n·log2 n adds. The map is orthogonal, so
 * applied to a query and to the keys it keeps every q·k, and an outlier is spread over its group instead of
 * setting the scale of its block. kvq_unrotate is its inverse (S·H·x/√n). */
int kvq_rotation_size(int Dh);
void kvq_rotate(float *x, int Dh);
void kvq_unrotate(float *x, int Dh);

#endif
