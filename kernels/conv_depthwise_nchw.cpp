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
// KILN_DW_FIL > 0 builds the object for one square filter size and horizontal stride
// (KILN_DW_S, undilated rows): the tap loops unroll, each thread loads its filter and the input
// strip of every filter row up front, and all those loads are in flight together, one trip to
// memory instead of one per tap. At batch 1 a layer is a few microseconds and that latency is
// most of it. KILN_DW_FIL = 0 keeps the loops over the problem's filter, any size.
//
// Launch: grid (ceil(N * K * P * ceil(Q / KILN_PX) / KILN_THREADS)), block (KILN_THREADS);
// that product is below 2^31 (the solver checks it), so the index math is 32-bit.
// channels_last = 0, 2-D.
#include "epilogue.h"

#if !defined(KILN_THREADS) || !defined(KILN_PX) || !defined(KILN_DW_FIL) || !defined(KILN_DW_S)
#error "the perf config defines KILN_THREADS, KILN_PX, KILN_DW_FIL and KILN_DW_S"
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
#if KILN_DW_FIL > 0
  // The input columns the thread's outputs read in one filter row.
  constexpr int kStrip = (KILN_PX - 1) * KILN_DW_S + KILN_DW_FIL;
  const kiln_i32 iw0 = ow0 * KILN_DW_S - a.pad_w;
  float taps[KILN_DW_FIL * KILN_DW_FIL];
#pragma unroll
  for (int i = 0; i < KILN_DW_FIL * KILN_DW_FIL; ++i) taps[i] = kiln_load(wk, i);
#pragma unroll
  for (int fy = 0; fy < KILN_DW_FIL; ++fy) {
    const kiln_i32 ih = oh * a.stride_h - a.pad_h + fy * a.dil_h;
    const bool row_in = ih >= 0 && ih < a.in_h;
    // Off the plane the row pointer stays at row 0: every load below is predicated off.
    const kiln_t* in_row = xc + (kiln_i64)(row_in ? ih : 0) * a.in_w;
    float strip[kStrip];
#pragma unroll
    for (int i = 0; i < kStrip; ++i) {
      const kiln_i32 iw = iw0 + i;
      strip[i] = row_in && iw >= 0 && iw < a.in_w ? kiln_load(in_row, iw) : 0.0f;
    }
#pragma unroll
    for (int fx = 0; fx < KILN_DW_FIL; ++fx) {
#pragma unroll
      for (int j = 0; j < KILN_PX; ++j) acc[j] += strip[j * KILN_DW_S + fx] * taps[fy * KILN_DW_FIL + fx];
    }
  }
#else
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
#endif
  const kiln_i64 out_row = (kiln_i64)row * a.out_w;
  for (int j = 0; j < KILN_PX; ++j) {
    const kiln_i32 ow = ow0 + j;
    if (ow < a.out_w) kiln_store_nchw(y, out_row + ow, k, acc[j], e);
  }
}
