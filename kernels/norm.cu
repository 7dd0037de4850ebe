// norm.cu: softmax along an axis and layer norm over the last axis.
// One block of 256 threads per row (grid = min(rows, 65535), rows visited grid-stride).
#include "reduce.cuh"

// softmax(scale * x) along an axis of length L; x viewed as (outer, L, inner), rows = outer*inner.
extern "C" __global__ void softmax(const float* __restrict__ x, float* __restrict__ y, i64 rows,
                                   i64 L, i64 inner, float scale, i64 row_len, i64 row_stride) {
    __shared__ float smem[256];
    WbLoad load{x};
    wb_softmax_rows(load, y, rows, L, inner, scale, row_len, row_stride, smem);
}

// (x - mean) / sqrt(var + eps) * gamma + beta over rows of D; params = (2, D).
extern "C" __global__ void layernorm(const float* __restrict__ x, const float* __restrict__ params,
                                     float* __restrict__ y, i64 rows, i64 D, float eps,
                                     i64 row_len, i64 row_stride) {
    __shared__ float smem[256];
    WbLoad load{x};
    wb_layernorm_rows(load, params, y, rows, D, eps, row_len, row_stride, smem);
}
