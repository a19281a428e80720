/* cuda_backend.h — what the files of the CUDA backend share beyond
 * backend.h: backend_cuda.cu holds the stream and the failure record,
 * mtp_device.cu the MTP chain drafted on the device (backend.h: embed_drawn,
 * draft, accept_drawn) with scratch of its own. Internal to optimized/cuda. */
#ifndef SPECULA_CUDA_BACKEND_H
#define SPECULA_CUDA_BACKEND_H

extern "C" {
#include "backend.h"
}

#include "kn_api.h"

typedef struct cuda_mtp cuda_mtp;

/* backend_cuda.cu */
cudaStream_t cuda_stream(engine_backend *b);
/* Records the first failure, as every op of the backend does. */
void cuda_check(engine_backend *b, cudaError_t e, const char *what);
/* Ends a pass's open capture and launches its graph (graph_cache.h): first thing in an op that is not a pass's. */
void cuda_flush(engine_backend *b);
/* Device scratch of at least `bytes`, grown (never shrunk) in *p of capacity *cap bytes. */
void *cuda_scratch(engine_backend *b, void **p, size_t *cap, size_t bytes, const char *what);
/* The mtp_device.cu state of b. */
cuda_mtp **cuda_mtp_of(engine_backend *b);

/* mtp_device.cu: fills b's ops of the MTP chain drafted on the device, and frees their scratch. */
void cuda_mtp_install(engine_backend *b);
void cuda_mtp_release(engine_backend *b);

#endif
