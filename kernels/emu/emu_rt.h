/* emu_rt.h — the subset of the CUDA runtime the engine's CUDA backend uses (memory as host memory, streams, stream
 * capture into graphs), around the emulated kernels. Work runs when it is issued, but host code a GPU would reject
 * fails here too: while a stream captures, a launch or asynchronous copy on it is recorded with its arguments by
 * value, and a call that would wait for the device fails with CUDA's error and invalidates the capture. */
#ifndef SPECULA_KN_EMU_RT_H
#define SPECULA_KN_EMU_RT_H

#include <stddef.h>

/* The runtime's error codes beyond emu.h's that these calls return (CUDA's values). */
enum {
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorIllegalState = 401,
    cudaErrorStreamCaptureUnsupported = 900,
    cudaErrorStreamCaptureInvalidated = 901,
    cudaErrorStreamCaptureImplicit = 906,
    cudaErrorGraphExecUpdateFailure = 910
};

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
};
enum cudaStreamCaptureMode {
    cudaStreamCaptureModeGlobal = 0,
    cudaStreamCaptureModeThreadLocal = 1,
    cudaStreamCaptureModeRelaxed = 2
};
enum cudaStreamCaptureStatus {
    cudaStreamCaptureStatusNone = 0,
    cudaStreamCaptureStatusActive = 1,
    cudaStreamCaptureStatusInvalidated = 2
};
enum cudaGraphExecUpdateResult {
    cudaGraphExecUpdateSuccess = 0,
    cudaGraphExecUpdateError = 1,
    cudaGraphExecUpdateErrorTopologyChanged = 2,
    cudaGraphExecUpdateErrorNodeTypeChanged = 3,
    cudaGraphExecUpdateErrorFunctionChanged = 4,
    cudaGraphExecUpdateErrorParametersChanged = 5
};
#define cudaStreamDefault 0x0
#define cudaStreamNonBlocking 0x1

typedef struct emu_graph *cudaGraph_t;
typedef struct emu_graph_exec *cudaGraphExec_t;
typedef struct emu_node *cudaGraphNode_t;
typedef struct {
    cudaGraphExecUpdateResult result;
    cudaGraphNode_t errorNode, errorFromNode;
} cudaGraphExecUpdateResultInfo;

/* The device as the emulator describes itself (gpucheck --probe): one device, an H200's per-block and per-SM
 * limits, the SM count emu_set_sm_count set, the host's memory. */
typedef struct {
    char name[256];
    size_t totalGlobalMem, sharedMemPerBlock, sharedMemPerBlockOptin, sharedMemPerMultiprocessor;
    int regsPerBlock, regsPerMultiprocessor, maxThreadsPerBlock, maxThreadsPerMultiProcessor;
    int multiProcessorCount, l2CacheSize, persistingL2CacheMaxSize, memoryBusWidth, major, minor;
} cudaDeviceProp;
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int dev);
cudaError_t cudaRuntimeGetVersion(int *version); /* 0: not CUDA's */
cudaError_t cudaDriverGetVersion(int *version);

cudaError_t cudaMalloc(void **p, size_t bytes); /* host memory of exactly `bytes` (AddressSanitizer sees overruns) */
cudaError_t cudaFree(void *p);
cudaError_t cudaMallocHost(void **p, size_t bytes); /* "pinned": the host memory a captured copy may read or write */
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemset(void *p, int value, size_t bytes);
/* During a capture a copy that reads or writes host memory needs it pinned (cudaMallocHost), and its kind given
 * (cudaMemcpyDefault is refused: the emulator cannot tell device memory from host memory). */
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s);
cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s);
cudaError_t cudaDeviceSynchronize(void);

cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);

/* Capture (not on the legacy stream, NULL). Global and thread-local modes forbid the calls that may wait
 * (cudaMalloc, cudaFree, cudaMallocHost, cudaFreeHost) as well; relaxed mode allows those. */
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph); /* an invalidated capture: no graph */
cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus *status);
/* nodes NULL: *count = the number of nodes; else the first *count of them. */
cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t *nodes, size_t *count);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g, unsigned long long flags);
/* The executable graph takes g's parameters (kernel arguments, grids, copy addresses) when g has its topology:
 * as many nodes, of the same kinds, each kernel node running the same kernel; else it is left as it was. */
cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t g, cudaGraphExecUpdateResultInfo *info);
/* Runs the nodes in their order. */
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s);
cudaError_t cudaGraphDestroy(cudaGraph_t g);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);

/* ---- what emu_launch (emu.h) calls ---------------------------------------------------------------- */

/* 1 when a launch on s is to be recorded, not run; a launch on a stream that may not take work now (the
 * legacy stream while a capture is open) fails with the capture invalidated. *err: the launch's error. */
int emu_launch_recorded(cudaStream_t s, cudaError_t *err);
/* Records a kernel node on the capturing stream s: body(arg) per thread at replay. The node keeps arg, a copy
 * the caller allocated (clone makes another for an executable graph, drop frees one). A copy that holds a
 * pointer into the host thread's stack — a lambda capturing the launcher's locals by reference, or the
 * address of a host local — would be read after that frame is gone: refused, with a message, the capture
 * invalidated. */
cudaError_t emu_record_kernel(cudaStream_t s, dim3 grid, dim3 block, size_t smem, void (*body)(void *), void *arg,
                              size_t arg_size, void *(*clone)(const void *), void (*drop)(void *));

#endif
