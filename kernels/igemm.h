// Implicit GEMM forward convolution, shared by ConvImplicitGemmFwd (any filter) and
// ConvGemm1x1Fwd (1x1 filter, stride 1, no padding: B is x itself, no im2col arithmetic).
// Per group: Y[m = k][col = (n, od, oh, ow)] = sum_r W[m][r] * B[r][col], r = (c, fd, fy, fx).
// A block of 256 threads computes a KILN_BM x KILN_BN tile, stepping over r by KILN_BK with
// both operands staged in shared memory as FP32; each thread owns a (BM/16) x (BN/16) micro-tile.
// Perf config (compile options): KILN_BM, KILN_BN, KILN_BK.
#pragma once
#include "epilogue.h"

#ifndef KILN_BM
#define KILN_BM 64
#endif
#ifndef KILN_BN
#define KILN_BN 64
#endif
#ifndef KILN_BK
#define KILN_BK 16
#endif
#define KILN_TM (KILN_BM / 16)
#define KILN_TN (KILN_BN / 16)

static __device__ KILN_INLINE kiln_i64 kiln_x_index(const KilnConvArgs& a, kiln_i32 n, kiln_i32 c, kiln_i32 d, kiln_i32 h, kiln_i32 w) {
  return a.channels_last ? ((((kiln_i64)n * a.in_d + d) * a.in_h + h) * a.in_w + w) * a.c + c
                         : ((((kiln_i64)n * a.c + c) * a.in_d + d) * a.in_h + h) * a.in_w + w;
}

static __device__ KILN_INLINE void kiln_igemm_body(const kiln_t* __restrict__ x, const kiln_t* __restrict__ w,
                                                   kiln_t* __restrict__ y, const KilnConvArgs& a,
                                                   const KilnEpilogue& e) {
  __shared__ float As[KILN_BK][KILN_BM];
  __shared__ float Bs[KILN_BK][KILN_BN];
  const kiln_i32 tid = threadIdx.x;
  const kiln_i32 cpg = a.c / a.groups, kpg = a.k / a.groups;
  const kiln_i32 g = blockIdx.z;
  const kiln_i32 fsz = a.fil_d * a.fil_h * a.fil_w;
  const kiln_i32 R = cpg * fsz;
  const kiln_i32 osp = a.out_d * a.out_h * a.out_w;
  const kiln_i64 cols = (kiln_i64)a.n * osp;
  const kiln_i32 m0 = blockIdx.y * KILN_BM;
  const kiln_i64 col0 = (kiln_i64)blockIdx.x * KILN_BN;
  const kiln_i32 trow = tid / 16, tcol = tid % 16;
  float acc[KILN_TM][KILN_TN];
  for (int i = 0; i < KILN_TM; ++i)
    for (int j = 0; j < KILN_TN; ++j) acc[i][j] = 0.0f;

  for (kiln_i32 r0 = 0; r0 < R; r0 += KILN_BK) {
    // A tile: weights of group g, rows m (output channel), columns r.
    for (kiln_i32 i = tid; i < KILN_BK * KILN_BM; i += 256) {
      const kiln_i32 rr = i / KILN_BM, mm = i % KILN_BM;
      const kiln_i32 m = m0 + mm, r = r0 + rr;
      float v = 0.0f;
      if (m < kpg && r < R) {
        const kiln_i32 k = g * kpg + m;
        const kiln_i32 cg = r / fsz, f = r % fsz;
        // NC[D]HW weights: (k, cg, f); channels-last weights: (k, f, cg).
        const kiln_i64 wi = a.channels_last ? ((kiln_i64)k * fsz + f) * cpg + cg : ((kiln_i64)k * cpg + cg) * fsz + f;
        v = kiln_load(w, wi);
      }
      As[rr][mm] = v;
    }
    // B tile: im2col of x, rows r, columns (n, od, oh, ow).
    for (kiln_i32 i = tid; i < KILN_BK * KILN_BN; i += 256) {
      const kiln_i32 rr = i / KILN_BN, nn = i % KILN_BN;
      const kiln_i32 r = r0 + rr;
      const kiln_i64 col = col0 + nn;
      float v = 0.0f;
      if (r < R && col < cols) {
        const kiln_i32 n = (kiln_i32)(col / osp);
        const kiln_i32 sp = (kiln_i32)(col % osp);
        const kiln_i32 c = g * cpg + r / fsz;
#if defined(KILN_GEMM_1X1)
        const kiln_i32 ow = sp % a.out_w, oh = (sp / a.out_w) % a.out_h, od = sp / (a.out_w * a.out_h);
        v = kiln_load(x, kiln_x_index(a, n, c, od, oh, ow));
#else
        const kiln_i32 f = r % fsz;
        const kiln_i32 fx = f % a.fil_w, fy = (f / a.fil_w) % a.fil_h, fd = f / (a.fil_w * a.fil_h);
        const kiln_i32 ow = sp % a.out_w, oh = (sp / a.out_w) % a.out_h, od = sp / (a.out_w * a.out_h);
        const kiln_i32 id = od * a.stride_d - a.pad_d + fd * a.dil_d;
        const kiln_i32 ih = oh * a.stride_h - a.pad_h + fy * a.dil_h;
        const kiln_i32 iw = ow * a.stride_w - a.pad_w + fx * a.dil_w;
        if (id >= 0 && id < a.in_d && ih >= 0 && ih < a.in_h && iw >= 0 && iw < a.in_w)
          v = kiln_load(x, kiln_x_index(a, n, c, id, ih, iw));
#endif
      }
      Bs[rr][nn] = v;
    }
    __syncthreads();
    for (kiln_i32 rr = 0; rr < KILN_BK; ++rr) {
      float av[KILN_TM], bv[KILN_TN];
      for (int i = 0; i < KILN_TM; ++i) av[i] = As[rr][trow + 16 * i];
      for (int j = 0; j < KILN_TN; ++j) bv[j] = Bs[rr][tcol + 16 * j];
      for (int i = 0; i < KILN_TM; ++i)
        for (int j = 0; j < KILN_TN; ++j) acc[i][j] += av[i] * bv[j];
    }
    __syncthreads();
  }
  for (int i = 0; i < KILN_TM; ++i) {
    const kiln_i32 m = m0 + trow + 16 * i;
    if (m >= kpg) continue;
    const kiln_i32 k = g * kpg + m;
    for (int j = 0; j < KILN_TN; ++j) {
      const kiln_i64 col = col0 + tcol + 16 * j;
      if (col >= cols) continue;
      const kiln_i32 n = (kiln_i32)(col / osp), sp = (kiln_i32)(col % osp);
      if (a.channels_last)
        kiln_store_nhwc(y, (kiln_i64)n * osp + sp, k, acc[i][j], e);
      else
        kiln_store_nchw(y, ((kiln_i64)n * a.k + k) * osp + sp, k, acc[i][j], e);
    }
  }
}
