// pool.cu: max / average pooling (NCHW) and the global average pool.
//   pool2d:         one thread per output element; mode 0 = max (padding never wins),
//                   mode 1 = average with the padding counted in the divisor (kh * kw),
//                   PyTorch's count_include_pad=True default.
//   global_avgpool: one block of 256 threads per (n, c) plane, fixed-order tree sum.
#include "reduce.cuh"

extern "C" __global__ void pool2d(const float* __restrict__ x, float* __restrict__ y, int N,
                                  int C, int H, int W, int Ho, int Wo, int kh, int kw, int sh,
                                  int sw, int ph, int pw, int mode, i64 row_len,
                                  i64 row_stride) {
    const i64 total = (i64)N * C * Ho * Wo;
    WB_GRID_STRIDE(e, total) {
        const int wo = (int)(e % Wo);
        i64 t = e / Wo;
        const int ho = (int)(t % Ho);
        const i64 nc = t / Ho;
        const float* xp = x + nc * H * W;
        float acc = mode == 0 ? -WB_INF : 0.0f;
        for (int r = 0; r < kh; ++r) {
            const int hi = ho * sh - ph + r;
            if (hi < 0 || hi >= H) continue;
            for (int s = 0; s < kw; ++s) {
                const int wi = wo * sw - pw + s;
                if (wi < 0 || wi >= W) continue;
                const float v = xp[(i64)hi * W + wi];
                acc = mode == 0 ? fmaxf(acc, v) : acc + v;
            }
        }
        if (mode != 0) acc = acc / (float)(kh * kw);
        y[wb_store_index(e, row_len, row_stride)] = acc;
    }
}

extern "C" __global__ void global_avgpool(const float* __restrict__ x, float* __restrict__ y,
                                          i64 planes, i64 hw, i64 row_len, i64 row_stride) {
    __shared__ float smem[256];
    WbLoad load{x};
    wb_mean_rows(load, y, planes, hw, row_len, row_stride, smem);
}
