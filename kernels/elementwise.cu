// elementwise.cu: activations, binary ops, k-way add, inference batch norm, copies.
// Grid-stride loops; launched with 256 threads and ceil(n / 1024) blocks (4 elements each).
#include "common.cuh"

// y = f(x) for f in the unary table of common.cuh (relu, gelu, sigmoid, tanh, exp, ...).
extern "C" __global__ void unary(const float* __restrict__ x, float* __restrict__ y, i64 n,
                                 int code, i64 row_len, i64 row_stride) {
    WB_GRID_STRIDE(e, n) { y[wb_store_index(e, row_len, row_stride)] = wb_unary(x[e], code); }
}

// y = a (op) b for op in add, sub, mul, div.
extern "C" __global__ void binary(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ y, i64 n, int code, i64 row_len,
                                  i64 row_stride) {
    WB_GRID_STRIDE(e, n) {
        y[wb_store_index(e, row_len, row_stride)] = wb_binary(a[e], b[e], code);
    }
}

// y = x0 + x1 + ... + x{k-1}, summed left to right; `ptrs` is a device table of k pointers.
extern "C" __global__ void add_n(const u64* __restrict__ ptrs, int k, float* __restrict__ y,
                                 i64 n, i64 row_len, i64 row_stride) {
    WB_GRID_STRIDE(e, n) {
        float s = ((const float*)ptrs[0])[e];
        for (int j = 1; j < k; ++j) s += ((const float*)ptrs[j])[e];
        y[wb_store_index(e, row_len, row_stride)] = s;
    }
}

// Inference batch norm over axis 1: x viewed as (outer, C, inner); params = (4, C) holding
// gamma, beta, running mean, running var.  `act` applies an activation after it.
extern "C" __global__ void batchnorm(const float* __restrict__ x, const float* __restrict__ params,
                                     float* __restrict__ y, i64 n, i64 C, i64 inner, float eps,
                                     int act, i64 row_len, i64 row_stride) {
    WB_GRID_STRIDE(e, n) {
        const i64 c = (e / inner) % C;
        y[wb_store_index(e, row_len, row_stride)] =
            wb_unary(wb_batchnorm(x[e], params, c, C, eps), act);
    }
}

// y = x (n elements), written through the row mapping: copies a concat input into its slice,
// or any identity op (h2d, d2h, d2d, print, assign).
extern "C" __global__ void copy_rows(const float* __restrict__ x, float* __restrict__ y, i64 n,
                                     i64 row_len, i64 row_stride) {
    WB_GRID_STRIDE(e, n) { y[wb_store_index(e, row_len, row_stride)] = x[e]; }
}
