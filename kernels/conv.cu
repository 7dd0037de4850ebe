// conv.cu: 2-D convolution, NCHW input, weights (K, C / groups, kh, kw), optional bias (K),
// optional activation before (pre_act, on in-bounds input values only: padding stays 0) and
// after (act) the convolution.  No dilation.
//
//   conv2d_direct: one thread per output element (any groups; depthwise convs use it).
//   conv2d_igemm:  implicit GEMM for groups == 1: output rows m = (n, ho, wo), columns = output
//                  channels, reduction over k = (c, r, s); 64 x 64 output tiles, k steps of 16,
//                  256 threads with 4 x 4 outputs each (grid: ceil(M/64) x ceil(K/64), matching
//                  the thread-block estimate of workbench.models._layers).
#include "common.cuh"

extern "C" __global__ void conv2d_direct(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
    float* __restrict__ y, int N, int C, int H, int W, int K, int Ho, int Wo, int kh, int kw,
    int sh, int sw, int ph, int pw, int groups, int act, int pre_act, i64 row_len,
    i64 row_stride) {
    const i64 total = (i64)N * K * Ho * Wo;
    const int cpg = C / groups;  // input channels per group
    const int kpg = K / groups;  // output channels per group
    WB_GRID_STRIDE(e, total) {
        const int wo = (int)(e % Wo);
        i64 t = e / Wo;
        const int ho = (int)(t % Ho);
        t /= Ho;
        const int co = (int)(t % K);
        const int n = (int)(t / K);
        const int c0 = (co / kpg) * cpg;
        float acc = 0.0f;
        for (int ci = 0; ci < cpg; ++ci) {
            const float* xp = x + ((i64)n * C + c0 + ci) * H * W;
            const float* wp = w + ((i64)co * cpg + ci) * kh * kw;
            for (int r = 0; r < kh; ++r) {
                const int hi = ho * sh - ph + r;
                if (hi < 0 || hi >= H) continue;
                for (int s = 0; s < kw; ++s) {
                    const int wi = wo * sw - pw + s;
                    if (wi < 0 || wi >= W) continue;
                    acc += wb_unary(xp[(i64)hi * W + wi], pre_act) * wp[r * kw + s];
                }
            }
        }
        if (bias) acc += bias[co];
        y[wb_store_index(e, row_len, row_stride)] = wb_unary(acc, act);
    }
}

#define WB_TM 64
#define WB_TN 64
#define WB_TK 16

extern "C" __global__ void __launch_bounds__(256) conv2d_igemm(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
    float* __restrict__ y, int N, int C, int H, int W, int K, int Ho, int Wo, int kh, int kw,
    int sh, int sw, int ph, int pw, int act, int pre_act, i64 row_len, i64 row_stride) {
    __shared__ float As[WB_TK][WB_TM + 4];  // As[k][m]
    __shared__ float Bs[WB_TK][WB_TN + 4];  // Bs[k][n]
    const i64 M = (i64)N * Ho * Wo;
    const int KK = C * kh * kw;
    const i64 m0 = (i64)blockIdx.x * WB_TM;
    const int n0 = blockIdx.y * WB_TN;
    const int tid = threadIdx.x;
    const int tx = tid % 16, ty = tid / 16;
    float acc[4][4];
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < KK; k0 += WB_TK) {
        for (int q = 0; q < 4; ++q) {  // A tile: 64 x 16 gathered input values
            const int idx = tid + q * 256;
            const int mm = idx % WB_TM, kk = idx / WB_TM;
            const i64 m = m0 + mm;
            const int k = k0 + kk;
            float v = 0.0f;
            if (m < M && k < KK) {
                const int wo = (int)(m % Wo);
                const i64 t = m / Wo;
                const int ho = (int)(t % Ho);
                const int n = (int)(t / Ho);
                const int s = k % kw;
                const int r = (k / kw) % kh;
                const int c = k / (kw * kh);
                const int hi = ho * sh - ph + r, wi = wo * sw - pw + s;
                if (hi >= 0 && hi < H && wi >= 0 && wi < W)
                    v = wb_unary(x[(((i64)n * C + c) * H + hi) * W + wi], pre_act);
            }
            As[kk][mm] = v;
        }
        for (int q = 0; q < 4; ++q) {  // B tile: 16 x 64 weights, coalesced along k
            const int idx = tid + q * 256;
            const int kk = idx % WB_TK, nn = idx / WB_TK;
            const int co = n0 + nn, k = k0 + kk;
            Bs[kk][nn] = (co < K && k < KK) ? w[(i64)co * KK + k] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < WB_TK; ++kk) {
            float a[4], b[4];
            for (int i = 0; i < 4; ++i) a[i] = As[kk][ty * 4 + i];
            for (int j = 0; j < 4; ++j) b[j] = Bs[kk][tx * 4 + j];
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < 4; ++i) {
        const i64 m = m0 + ty * 4 + i;
        if (m >= M) continue;
        const int wo = (int)(m % Wo);
        const i64 t = m / Wo;
        const int ho = (int)(t % Ho);
        const int n = (int)(t / Ho);
        for (int j = 0; j < 4; ++j) {
            const int co = n0 + tx * 4 + j;
            if (co >= K) continue;
            float v = acc[i][j];
            if (bias) v += bias[co];
            const i64 e = (((i64)n * K + co) * Ho + ho) * Wo + wo;
            y[wb_store_index(e, row_len, row_stride)] = wb_unary(v, act);
        }
    }
}
