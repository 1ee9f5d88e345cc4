// ConvDirectTiledFwd: 2-D, channels-first direct convolution. A block computes a
// KILN_TILE_H x KILN_TILE_W tile of output pixels for KILN_KPB output channels of one group and
// one image: it stages the input patch the tile needs and the KPB filters in shared memory, one
// input channel at a time, and each thread accumulates KPB outputs in FP32.
// Perf config (compile options): KILN_TILE_H, KILN_TILE_W, KILN_KPB.
#include "epilogue.h"

#ifndef KILN_TILE_H
#define KILN_TILE_H 8
#endif
#ifndef KILN_TILE_W
#define KILN_TILE_W 8
#endif
#ifndef KILN_KPB
#define KILN_KPB 4
#endif
// Shared-memory bounds: the solver is applicable only where the patch and filters fit
// (src/solvers.rs computes the same numbers).
#define KILN_PATCH_MAX 2048
#define KILN_FILTER_MAX 1024

extern "C" __global__ void conv_tiled_fwd(const kiln_t* __restrict__ x, const kiln_t* __restrict__ w,
                                          kiln_t* __restrict__ y, KilnConvArgs a,
                                          KilnEpilogue e) {
  __shared__ float patch[KILN_PATCH_MAX];
  __shared__ float filt[KILN_FILTER_MAX];
  const kiln_i32 tid = threadIdx.x;
  const kiln_i32 tx = tid % KILN_TILE_W, ty = tid / KILN_TILE_W;
  const kiln_i32 tiles_w = (a.out_w + KILN_TILE_W - 1) / KILN_TILE_W;
  const kiln_i32 ow0 = (blockIdx.x % tiles_w) * KILN_TILE_W, oh0 = (blockIdx.x / tiles_w) * KILN_TILE_H;
  const kiln_i32 kpg = a.k / a.groups, cpg = a.c / a.groups;
  const kiln_i32 kblocks = (kpg + KILN_KPB - 1) / KILN_KPB;
  const kiln_i32 g = blockIdx.y / kblocks, k0 = g * kpg + (blockIdx.y % kblocks) * KILN_KPB;
  const kiln_i32 n = blockIdx.z;
  const kiln_i32 ph = (KILN_TILE_H - 1) * a.stride_h + (a.fil_h - 1) * a.dil_h + 1;
  const kiln_i32 pw = (KILN_TILE_W - 1) * a.stride_w + (a.fil_w - 1) * a.dil_w + 1;
  const kiln_i32 ih0 = oh0 * a.stride_h - a.pad_h, iw0 = ow0 * a.stride_w - a.pad_w;
  const kiln_i32 fsz = a.fil_h * a.fil_w;
  const kiln_i32 nthreads = KILN_TILE_H * KILN_TILE_W;
  float acc[KILN_KPB];
  for (int j = 0; j < KILN_KPB; ++j) acc[j] = 0.0f;
  for (kiln_i32 cg = 0; cg < cpg; ++cg) {
    const kiln_i32 c = g * cpg + cg;
    const kiln_i64 xbase = ((kiln_i64)n * a.c + c) * a.in_h * a.in_w;
    for (kiln_i32 i = tid; i < ph * pw; i += nthreads) {
      const kiln_i32 ih = ih0 + i / pw, iw = iw0 + i % pw;
      patch[i] = (ih >= 0 && ih < a.in_h && iw >= 0 && iw < a.in_w) ? kiln_load(x, xbase + (kiln_i64)ih * a.in_w + iw) : 0.0f;
    }
    for (kiln_i32 i = tid; i < KILN_KPB * fsz; i += nthreads) {
      const kiln_i32 kk = k0 + i / fsz;
      filt[i] = (kk < g * kpg + kpg) ? kiln_load(w, ((kiln_i64)kk * cpg + cg) * fsz + i % fsz) : 0.0f;
    }
    __syncthreads();
    for (kiln_i32 fy = 0; fy < a.fil_h; ++fy) {
      for (kiln_i32 fx = 0; fx < a.fil_w; ++fx) {
        const float v = patch[(ty * a.stride_h + fy * a.dil_h) * pw + tx * a.stride_w + fx * a.dil_w];
        for (int j = 0; j < KILN_KPB; ++j) acc[j] += v * filt[j * fsz + fy * a.fil_w + fx];
      }
    }
    __syncthreads();
  }
  const kiln_i32 oh = oh0 + ty, ow = ow0 + tx;
  if (oh >= a.out_h || ow >= a.out_w) return;
  for (int j = 0; j < KILN_KPB; ++j) {
    const kiln_i32 k = k0 + j;
    if (k < g * kpg + kpg) kiln_store_nchw(y, (((kiln_i64)n * a.k + k) * a.out_h + oh) * a.out_w + ow, k, acc[j], e);
  }
}
