// common.cuh: helpers shared by every workbench kernel (float32, row-major / NCHW).
//
// Conventions (workbench/gpu/kernels.py reads the kernel signatures from these sources):
//   * Tensors are float32 and contiguous, except an op's OUTPUT, which is written through a
//     "row" mapping so that producers can write straight into their slice of a concat output:
//     element e of the op's logical output goes to y[(e / row_len) * row_stride + e % row_len].
//     A plain contiguous output passes row_len == row_stride.
//   * Sizes are `long long` (i64), small geometry `int`, scalars `float`.
//   * Optional pointers (a bias) may be null.
//   * No atomics anywhere: every reduction has a fixed order, so results are bitwise
//     reproducible whatever the stream schedule.
#pragma once

typedef long long i64;
typedef unsigned long long u64;

// NVRTC compiles without the host headers, so no math.h macros: our own infinity.
#define WB_INF __int_as_float(0x7f800000)

#define WB_GRID_STRIDE(i, n)                                                   \
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n);         \
         i += (i64)gridDim.x * blockDim.x)

__device__ __forceinline__ i64 wb_store_index(i64 e, i64 row_len, i64 row_stride) {
    if (row_len == row_stride) return e;
    return (e / row_len) * row_stride + (e % row_len);
}

// Activation / unary codes (workbench.gpu.kernels.UNARY_CODES mirrors this table).
#define WB_ID 0
#define WB_RELU 1
#define WB_GELU 2
#define WB_SIGMOID 3
#define WB_TANH 4
#define WB_EXP 5
#define WB_LOG 6
#define WB_NEG 7
#define WB_ABS 8
#define WB_SQRT 9
#define WB_ATAN 10

__device__ __forceinline__ float wb_gelu(float x) {
    // tanh approximation, as workbench.reference._gelu
    const float k = 0.7978845608028654f;  // sqrt(2 / pi)
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

__device__ __forceinline__ float wb_unary(float x, int code) {
    switch (code) {
        case WB_RELU: return x > 0.0f ? x : 0.0f;
        case WB_GELU: return wb_gelu(x);
        case WB_SIGMOID: return 1.0f / (1.0f + expf(-x));
        case WB_TANH: return tanhf(x);
        case WB_EXP: return expf(x);
        case WB_LOG: return logf(x);
        case WB_NEG: return -x;
        case WB_ABS: return fabsf(x);
        case WB_SQRT: return sqrtf(x);
        case WB_ATAN: return atanf(x);
        default: return x;
    }
}

// Binary codes (workbench.gpu.kernels.BINARY_CODES).
#define WB_ADD 0
#define WB_SUB 1
#define WB_MUL 2
#define WB_DIV 3

__device__ __forceinline__ float wb_binary(float a, float b, int code) {
    switch (code) {
        case WB_SUB: return a - b;
        case WB_MUL: return a * b;
        case WB_DIV: return a / b;
        default: return a + b;
    }
}

// Inference batch norm of one element: params hold gamma, beta, mean, var (4 rows of C).
__device__ __forceinline__ float wb_batchnorm(float x, const float* __restrict__ p, i64 c, i64 C,
                                              float eps) {
    const float scale = p[c] / sqrtf(p[3 * C + c] + eps);
    return x * scale + (p[C + c] - p[2 * C + c] * scale);
}

// Block-wide sum with a fixed tree order (deterministic).  blockDim.x must be a power of two
// <= 1024; `smem` holds blockDim.x floats.  Every thread gets the total.
__device__ __forceinline__ float wb_block_sum(float v, float* smem) {
    const int t = threadIdx.x;
    smem[t] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) smem[t] += smem[t + s];
        __syncthreads();
    }
    const float total = smem[0];
    __syncthreads();
    return total;
}

__device__ __forceinline__ float wb_block_max(float v, float* smem) {
    const int t = threadIdx.x;
    smem[t] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) smem[t] = fmaxf(smem[t], smem[t + s]);
        __syncthreads();
    }
    const float total = smem[0];
    __syncthreads();
    return total;
}

__device__ __forceinline__ u64 wb_globaltimer() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
