// reduce.cuh: row reductions (softmax, layer norm, global average pool) over a LOADER.
//
// A loader is a functor `float operator()(i64 i, bool first) const` giving element i of the
// reduction's input; `first` is true exactly once per element (in the first pass), which is
// when a fused elementwise prologue writes the intermediate tensors it must keep.  The plain
// kernels (norm.cu, pool.cu) use WbLoad; generated fused kernels pass their own prologue.
// One block (power-of-two threads, shared memory of blockDim.x floats) per row; rows are
// visited grid-stride.  Fixed reduction order: bitwise reproducible.
#pragma once
#include "common.cuh"

struct WbLoad {
    const float* __restrict__ x;
    __device__ __forceinline__ float operator()(i64 i, bool) const { return x[i]; }
};

// Softmax of scale * x along an axis of length L; the tensor is viewed as (outer, L, inner),
// row r = (o, j) with o = r / inner, j = r % inner.
template <class Load>
__device__ void wb_softmax_rows(const Load& load, float* __restrict__ y, i64 rows, i64 L,
                                i64 inner, float scale, i64 row_len, i64 row_stride,
                                float* smem) {
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const i64 base = (r / inner) * L * inner + (r % inner);
        float m = -WB_INF;
        for (i64 j = threadIdx.x; j < L; j += blockDim.x)
            m = fmaxf(m, scale * load(base + j * inner, true));
        m = wb_block_max(m, smem);
        float s = 0.0f;
        for (i64 j = threadIdx.x; j < L; j += blockDim.x)
            s += expf(scale * load(base + j * inner, false) - m);
        s = wb_block_sum(s, smem);
        for (i64 j = threadIdx.x; j < L; j += blockDim.x) {
            const i64 e = base + j * inner;
            y[wb_store_index(e, row_len, row_stride)] = expf(scale * load(e, false) - m) / s;
        }
    }
}

// Layer norm over the last axis (length D); params = (gamma, beta), 2 rows of D.
template <class Load>
__device__ void wb_layernorm_rows(const Load& load, const float* __restrict__ params,
                                  float* __restrict__ y, i64 rows, i64 D, float eps,
                                  i64 row_len, i64 row_stride, float* smem) {
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        const i64 base = r * D;
        float s = 0.0f;
        for (i64 j = threadIdx.x; j < D; j += blockDim.x) s += load(base + j, true);
        const float mean = wb_block_sum(s, smem) / (float)D;
        float q = 0.0f;
        for (i64 j = threadIdx.x; j < D; j += blockDim.x) {
            const float d = load(base + j, false) - mean;
            q += d * d;
        }
        const float var = wb_block_sum(q, smem) / (float)D;
        const float inv = 1.0f / sqrtf(var + eps);
        for (i64 j = threadIdx.x; j < D; j += blockDim.x) {
            const float v = (load(base + j, false) - mean) * inv * params[j] + params[D + j];
            y[wb_store_index(base + j, row_len, row_stride)] = v;
        }
    }
}

// Mean over each row of HW elements (global average pool: rows = N * C planes).
template <class Load>
__device__ void wb_mean_rows(const Load& load, float* __restrict__ y, i64 rows, i64 HW,
                             i64 row_len, i64 row_stride, float* smem) {
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        float s = 0.0f;
        for (i64 j = threadIdx.x; j < HW; j += blockDim.x) s += load(r * HW + j, true);
        s = wb_block_sum(s, smem);
        if (threadIdx.x == 0) y[wb_store_index(r, row_len, row_stride)] = s / (float)HW;
    }
}
