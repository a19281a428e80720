/* matvec_cublas.cu — gpucheck's baseline for the matvec family: cuBLAS's GEMM on the same bf16 weights. It lives
 * with the harness, not with the kernels, so that only gpucheck links libcublas: the engine's binary then loads
 * on a machine whose CUDA install has the runtime but not cuBLAS. */
#include "gc.cuh"

#ifdef KN_HAVE_CUBLAS
#include <cublas_v2.h>

/* X is rounded to bf16 by a small kernel (cublasGemmEx needs A and B of one type), then one GEMM with bf16 inputs,
 * fp32 output and CUBLAS_COMPUTE_32F. The conversion is part of the timed call. */
static cublasHandle_t handle;
static uint16_t *x_bf16;
static size_t x_bf16_elems;

static cudaError_t launch_cublas(float *Y, const uint16_t *W, const float *X, int m, int n_out, int n_in,
                                 cudaStream_t s) {
    if (m < 1 || m > KN_MATVEC_MAX_M || n_out < 1 || n_in < 1) return cudaErrorInvalidValue;
    if (!handle && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return cudaErrorNotSupported;
    const size_t need = (size_t)m * n_in;
    if (need > x_bf16_elems) {
        cudaFree(x_bf16);
        x_bf16 = NULL;
        cudaError_t e = cudaMalloc((void **)&x_bf16, need * sizeof(uint16_t));
        if (e != cudaSuccess) return e;
        x_bf16_elems = need;
    }
    cudaError_t e = kn_f32_to_bf16(x_bf16, X, (long)need, s);
    if (e != cudaSuccess) return e;
    if (cublasSetStream(handle, s) != CUBLAS_STATUS_SUCCESS) return cudaErrorNotSupported;
    const float alpha = 1.0f, beta = 0.0f;
    /* column-major view: Yᵀ[n_out, m] = op(W)[n_out, n_in] · Xᵀ[n_in, m] */
    cublasStatus_t st =
        cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n_out, m, n_in, &alpha, W, CUDA_R_16BF, n_in, x_bf16,
                     CUDA_R_16BF, n_in, &beta, Y, CUDA_R_32F, n_out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    return st == CUBLAS_STATUS_SUCCESS ? cudaGetLastError() : cudaErrorUnknown;
}

static const kn_matvec_version baseline = {"cublas-xbf16",
                                           "baseline: X to bf16, then cublasGemmEx bf16 in, fp32 out, COMPUTE_32F",
                                           launch_cublas,
                                           KN_MATVEC_MAX_M,
                                           1,
                                           KN_MV_ALONE,
                                           NULL};

const kn_matvec_version *gc_matvec_baseline(void) { return &baseline; }
#else
const kn_matvec_version *gc_matvec_baseline(void) { return NULL; }
#endif
