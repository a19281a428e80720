/* kv_block.h — the block size of the paged KV cache, shared by the reference's kv_pool (model/state.h) and the
 * CUDA kernels' paged layout (kernels/kn_paged.h), so the two page a sequence alike. */
#ifndef SPECULA_KV_BLOCK_H
#define SPECULA_KV_BLOCK_H

#define KV_BLOCK_SIZE 16 /* consecutive positions of one sequence per KV block */

#endif
