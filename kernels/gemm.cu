// gemm.cu: batched C[b] = A[b] @ B[b] (+ bias) (then act), row-major float32.
// A[b] is M x K (batch stride stride_a), B[b] is K x N (stride_b; 0 for a shared weight),
// C[b] is M x N, contiguous (element e = (b * M + m) * N + n, written through the row
// mapping).  The project's own tiled GEMM (cuBLAS is refused during CUDA-graph capture):
// 64 x 64 tiles, k steps of 16, 256 threads with 4 x 4 outputs each;
// grid = (ceil(N / 64), ceil(M / 64), batch).
#include "common.cuh"

#define WB_GM 64
#define WB_GN 64
#define WB_GK 16

extern "C" __global__ void __launch_bounds__(256) gemm(
    const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias,
    float* __restrict__ Cout, int M, int N, int K, i64 stride_a, i64 stride_b, int act,
    i64 row_len, i64 row_stride) {
    __shared__ float As[WB_GK][WB_GM + 4];  // As[k][m]
    __shared__ float Bs[WB_GK][WB_GN + 4];  // Bs[k][n]
    const int b = blockIdx.z;
    const float* Ab = A + (i64)b * stride_a;
    const float* Bb = B + (i64)b * stride_b;
    const int m0 = blockIdx.y * WB_GM, n0 = blockIdx.x * WB_GN;
    const int tid = threadIdx.x;
    const int tx = tid % 16, ty = tid / 16;
    float acc[4][4];
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += WB_GK) {
        for (int q = 0; q < 4; ++q) {  // A tile 64 x 16, coalesced along k
            const int idx = tid + q * 256;
            const int kk = idx % WB_GK, mm = idx / WB_GK;
            const int m = m0 + mm, k = k0 + kk;
            As[kk][mm] = (m < M && k < K) ? Ab[(i64)m * K + k] : 0.0f;
        }
        for (int q = 0; q < 4; ++q) {  // B tile 16 x 64, coalesced along n
            const int idx = tid + q * 256;
            const int nn = idx % WB_GN, kk = idx / WB_GN;
            const int n = n0 + nn, k = k0 + kk;
            Bs[kk][nn] = (n < N && k < K) ? Bb[(i64)k * N + n] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < WB_GK; ++kk) {
            float a[4], bv[4];
            for (int i = 0; i < 4; ++i) a[i] = As[kk][ty * 4 + i];
            for (int j = 0; j < 4; ++j) bv[j] = Bs[kk][tx * 4 + j];
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * bv[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < 4; ++i) {
        const int m = m0 + ty * 4 + i;
        if (m >= M) continue;
        for (int j = 0; j < 4; ++j) {
            const int n = n0 + tx * 4 + j;
            if (n >= N) continue;
            float v = acc[i][j];
            if (bias) v += bias[n];
            const i64 e = ((i64)b * M + m) * N + n;
            Cout[wb_store_index(e, row_len, row_stride)] = wb_unary(v, act);
        }
    }
}
