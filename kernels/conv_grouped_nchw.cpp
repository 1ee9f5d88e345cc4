// ConvDirectGroupedNchwFwd: grouped and depthwise 2-D convolution in NCHW (channels-first
// MobileNet, EfficientNet, ResNeXt layers) on CUDA cores / vector ALUs.
//
// A block works on one output channel's plane of one image (blockIdx.x = n * K + k): KILN_TX x
// KILN_TY threads, x along a row, y over rows (blockIdx.y picks KILN_TY rows). Each thread
// computes KILN_PX outputs of its row, KILN_TX apart (blockIdx.z picks KILN_TX * KILN_PX
// columns), so that a warp's loads of an input row and its stores are contiguous. The output
// channel's filter (C/groups x R x S values) is staged in shared memory as FP32 and read by
// every thread at the same address (a broadcast); input rows are read from global memory, the
// rows and columns a filter overlaps again from the L1 cache. FP32 accumulation; the fused
// epilogue (epilogue.h) applies to each sum.
//
// Launch: grid (N * K, ceil(P / KILN_TY), ceil(Q / (KILN_TX * KILN_PX))), block (KILN_TX,
// KILN_TY), dynamic shared memory: C/groups x R x S x 4 bytes. channels_last = 0, 2-D.
#include "epilogue.h"

#if !defined(KILN_TX) || !defined(KILN_TY) || !defined(KILN_PX)
#error "the perf config defines KILN_TX, KILN_TY and KILN_PX"
#endif

extern "C" __global__ void conv_grouped_nchw_fwd(const kiln_t* __restrict__ x,
                                                 const kiln_t* __restrict__ w,
                                                 kiln_t* __restrict__ y, KilnConvArgs a,
                                                 KilnEpilogue e) {
  extern __shared__ float kiln_filter[];  // [input channel in group][fy][fx]
  const kiln_i32 cpg = a.c / a.groups;     // input channels per group
  const kiln_i32 kpg = a.k / a.groups;     // output channels per group
  const kiln_i32 window = a.fil_h * a.fil_w;
  const kiln_i32 taps = cpg * window;
  const kiln_i64 plane = blockIdx.x;  // n * K + k
  const kiln_i32 k = (kiln_i32)(plane % a.k);
  const kiln_i32 n = (kiln_i32)(plane / a.k);

  const kiln_i32 tid = (kiln_i32)(threadIdx.y * blockDim.x + threadIdx.x);
  for (kiln_i32 i = tid; i < taps; i += (kiln_i32)(blockDim.x * blockDim.y))
    kiln_filter[i] = kiln_load(w, (kiln_i64)k * taps + i);
  __syncthreads();

  const kiln_i32 oh = (kiln_i32)(blockIdx.y * KILN_TY + threadIdx.y);
  if (oh >= a.out_h) return;
  const kiln_i32 ow0 = (kiln_i32)(blockIdx.z * (KILN_TX * KILN_PX) + threadIdx.x);
  float acc[KILN_PX];
  for (int j = 0; j < KILN_PX; ++j) acc[j] = 0.0f;
  const kiln_i32 group_c0 = (k / kpg) * cpg;
  for (kiln_i32 c = 0; c < cpg; ++c) {
    const kiln_t* xc = x + ((kiln_i64)n * a.c + group_c0 + c) * a.in_h * a.in_w;
    const float* fc = kiln_filter + c * window;
    for (kiln_i32 fy = 0; fy < a.fil_h; ++fy) {
      const kiln_i32 ih = oh * a.stride_h - a.pad_h + fy * a.dil_h;
      if (ih < 0 || ih >= a.in_h) continue;
      const kiln_t* row = xc + (kiln_i64)ih * a.in_w;
      for (kiln_i32 fx = 0; fx < a.fil_w; ++fx) {
        const float wv = fc[fy * a.fil_w + fx];
        for (int j = 0; j < KILN_PX; ++j) {
          const kiln_i32 ow = ow0 + j * KILN_TX;
          const kiln_i32 iw = ow * a.stride_w - a.pad_w + fx * a.dil_w;
          if (ow < a.out_w && iw >= 0 && iw < a.in_w) acc[j] += kiln_load(row, iw) * wv;
        }
      }
    }
  }
  const kiln_i64 out_row = (plane * a.out_h + oh) * a.out_w;
  for (int j = 0; j < KILN_PX; ++j) {
    const kiln_i32 ow = ow0 + j * KILN_TX;
    if (ow < a.out_w) kiln_store_nchw(y, out_row + ow, k, acc[j], e);
  }
}
