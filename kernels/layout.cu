// layout.cu: permute axes (transpose) into a contiguous output.
// Rank <= 6: the output shape is (d0..d5) (leading dims 1 when the rank is smaller) and s_k is
// the input stride (in elements) of the input axis that becomes output axis k.
#include "common.cuh"

extern "C" __global__ void transpose6(const float* __restrict__ x, float* __restrict__ y, i64 n,
                                      i64 d0, i64 d1, i64 d2, i64 d3, i64 d4, i64 d5, i64 s0,
                                      i64 s1, i64 s2, i64 s3, i64 s4, i64 s5, i64 row_len,
                                      i64 row_stride) {
    WB_GRID_STRIDE(e, n) {
        i64 t = e;
        const i64 i5 = t % d5; t /= d5;
        const i64 i4 = t % d4; t /= d4;
        const i64 i3 = t % d3; t /= d3;
        const i64 i2 = t % d2; t /= d2;
        const i64 i1 = t % d1; t /= d1;
        const i64 i0 = t;
        const i64 src = i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3 + i4 * s4 + i5 * s5;
        y[wb_store_index(e, row_len, row_stride)] = x[src];
    }
}
