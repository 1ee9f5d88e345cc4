// ConvDirectDepthwiseNchwFwd: depthwise 2-D convolution in NCHW (one input channel per group,
// any channel multiplier) on CUDA cores / vector ALUs, for the small planes of late stages.
//
// The threads cover the outputs flat: thread t computes KILN_PX neighbouring outputs of one row,
// rows numbered (n * K + k) * P + p, so consecutive threads walk a row, then the next rows and
// planes, with no idle threads past a plane's edge. A 7x7 or 10x10 plane in a
// one-block-per-plane kernel leaves most of each block idle and needs several waves of
// blocks; here the whole layer is one wave. The filter taps are read straight from global
// memory: the threads of a plane read the same address (one L1 line serves the warp), so no
// shared memory and no barrier. FP32 accumulation; the fused epilogue (epilogue.h) applies to
// each sum.
//
// Launch: grid (ceil(N * K * P * ceil(Q / KILN_PX) / KILN_THREADS)), block (KILN_THREADS);
// that product is below 2^31 (the solver checks it), so the index math is 32-bit.
// channels_last = 0, 2-D.
#include "epilogue.h"

#if !defined(KILN_THREADS) || !defined(KILN_PX)
#error "the perf config defines KILN_THREADS and KILN_PX"
#endif

extern "C" __global__ void conv_depthwise_nchw_fwd(const kiln_t* __restrict__ x,
                                                   const kiln_t* __restrict__ w,
                                                   kiln_t* __restrict__ y, KilnConvArgs a,
                                                   KilnEpilogue e) {
  const kiln_u32 strips = ((kiln_u32)a.out_w + KILN_PX - 1) / KILN_PX;  // threads per row
  const kiln_u32 rows = (kiln_u32)a.n * (kiln_u32)a.k * (kiln_u32)a.out_h;
  const kiln_u32 t = blockIdx.x * KILN_THREADS + threadIdx.x;
  if (t >= rows * strips) return;
  const kiln_u32 row = t / strips;  // (n * K + k) * P + p
  const kiln_i32 ow0 = (kiln_i32)(t - row * strips) * KILN_PX;
  const kiln_u32 plane = row / (kiln_u32)a.out_h;  // n * K + k
  const kiln_i32 oh = (kiln_i32)(row - plane * (kiln_u32)a.out_h);
  const kiln_u32 n = plane / (kiln_u32)a.k;
  const kiln_i32 k = (kiln_i32)(plane - n * (kiln_u32)a.k);
  // Depthwise: group g = k / (K / groups) reads input channel g alone.
  const kiln_i32 c = k / (a.k / a.groups);
  const kiln_t* xc = x + ((kiln_i64)n * a.c + c) * a.in_h * a.in_w;
  const kiln_t* wk = w + (kiln_i64)k * a.fil_h * a.fil_w;

  float acc[KILN_PX];
  for (int j = 0; j < KILN_PX; ++j) acc[j] = 0.0f;
  for (kiln_i32 fy = 0; fy < a.fil_h; ++fy) {
    const kiln_i32 ih = oh * a.stride_h - a.pad_h + fy * a.dil_h;
    if (ih < 0 || ih >= a.in_h) continue;
    const kiln_t* in_row = xc + (kiln_i64)ih * a.in_w;
    for (kiln_i32 fx = 0; fx < a.fil_w; ++fx) {
      const float wv = kiln_load(wk, fy * a.fil_w + fx);
      for (int j = 0; j < KILN_PX; ++j) {
        const kiln_i32 ow = ow0 + j;
        const kiln_i32 iw = ow * a.stride_w - a.pad_w + fx * a.dil_w;
        if (ow < a.out_w && iw >= 0 && iw < a.in_w) acc[j] += kiln_load(in_row, iw) * wv;
      }
    }
  }
  const kiln_i64 out_row = (kiln_i64)row * a.out_w;
  for (int j = 0; j < KILN_PX; ++j) {
    const kiln_i32 ow = ow0 + j;
    if (ow < a.out_w) kiln_store_nchw(y, out_row + ow, k, acc[j], e);
  }
}
