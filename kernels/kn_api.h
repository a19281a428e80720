/* kn_api.h — what every launcher header includes: the CUDA runtime types (or the emulator's, under -DKN_EMU) and C
 * linkage. Launchers are asynchronous on `stream` and return the launch's cudaError_t (cudaErrorInvalidValue for
 * arguments outside their contract). Device pointers only; bf16 is uint16_t. */
#ifndef SPECULA_KN_API_H
#define SPECULA_KN_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef KN_EMU
#include "emu.h"
#else
#include <cuda_runtime.h>
#endif

#ifdef __cplusplus
#define KN_API extern "C"
#else
#define KN_API
#endif

#endif
