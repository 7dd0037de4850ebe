// spin.cu: the calibrated spin kernel for toy graphs, and the timestamp kernel.
//
// spin: every block first reads element 0 of each input (a device table of `n_in` pointers),
// then busy-waits `spin_ns` nanoseconds of %globaltimer, then writes
// v = 1 + sum of those elements to every element of its output.  The grid size is the op's
// thread_blocks (how much of the device it fills) and the block size is chosen so that only
// the cost model's blocks_per_sm blocks fit on one SM; spin_ns comes from duration_us minus
// the calibrated launch overhead, divided by the number of waves.  Reading BEFORE spinning
// makes a missing sync visible: a consumer that starts early reads its producer's output before
// the producer wrote it.
//
// stamp: writes %globaltimer (ns) into slots[index]; launched <<<1, 1>>> on a stream, it marks
// a point of that stream's timeline (used for per-op timelines inside CUDA graphs, where event
// timing is not available).
#include "common.cuh"

extern "C" __global__ void spin(const u64* __restrict__ in_ptrs, int n_in, float* __restrict__ y,
                                i64 n, i64 spin_ns, i64 row_len, i64 row_stride) {
    float v = 1.0f;
    for (int k = 0; k < n_in; ++k) v += ((const float*)in_ptrs[k])[0];
    const u64 t0 = wb_globaltimer();
    if (spin_ns > 0) {
        while ((i64)(wb_globaltimer() - t0) < spin_ns) {
        }
    }
    WB_GRID_STRIDE(e, n) { y[wb_store_index(e, row_len, row_stride)] = v; }
}

extern "C" __global__ void stamp(u64* __restrict__ slots, int index) {
    if (blockIdx.x == 0 && threadIdx.x == 0) slots[index] = wb_globaltimer();
}
