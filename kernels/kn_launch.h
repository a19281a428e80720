/* kn_launch.h — what every launch through KN_LAUNCH (kn_common.cuh) reports: its error, and the first launch that
 * failed, named. In debug mode each launch is also waited for at once, so a fault a GPU would report at some later
 * wait is charged to the kernel that made it. */
#ifndef SPECULA_KN_LAUNCH_H
#define SPECULA_KN_LAUNCH_H

#include "kn_api.h"

/* Debug mode on (1) or off (0, the default: launches stay asynchronous). A capturing stream cannot be waited on,
 * so its launches are not waited for: a caller in debug mode turns its graphs off. Returns the previous mode. */
KN_API int kn_debug_launches(int on);
/* The first launch that failed since the start or the last kn_launch_failure_clear: "LAUNCHER: KERNEL<<<grid
 * (x,y,z), block (x,y,z), N B dynamic shared>>>: ERROR", or "" when none did. */
KN_API const char *kn_launch_failure(void);
KN_API void kn_launch_failure_clear(void);

#ifdef __cplusplus
/* KN_LAUNCH's tail: `launched` is the launch's own error; in debug mode the stream is waited for too. */
cudaError_t kn_launch_result(const char *launcher, const char *kernel, dim3 grid, dim3 block, size_t smem,
                             cudaStream_t stream, cudaError_t launched);
#endif

#endif
