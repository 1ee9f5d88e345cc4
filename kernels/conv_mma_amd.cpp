// AMD matrix-core implicit GEMM: 2-D NHWC FP16/BF16 forward convolution, one group, FP32
// accumulation. Rows of the GEMM are output pixels (n, oh, ow), columns output channels k, the
// reduction r = (fy, fx, c) with c fastest, so a pixel's window and a filter's KRSC row are
// read in the same order. A block of 256 threads computes a 64 x 64 tile, stepping over r by
// 16 with both operands staged in LDS as raw 16-bit values.
//
// - gfx90a/gfx942 (wave64, ConvMfmaImplicitGemmFwd): 4 waves, each a 32 x 32 tile with
//   v_mfma_f32_32x32x8 (f16, or bf16_1k), two per step.
// - gfx1100/gfx1151 (wave32, ConvWmmaImplicitGemmFwd): 8 waves, each two 16 x 16 tiles with
//   v_wmma_f32_16x16x16 (f16 or bf16), one per tile and step.
//
// Operand and result layouts are the ISA's (AMD's matrix instruction calculator: MFMA 32x32x8
// A[i][k] in lane i + 32 * (k / 4), half k % 4; D[i][j] in lane j + 32 * ((i / 4) % 2),
// register 4 * (i / 8) + i % 4. WMMA A[i][k] in lanes i and i + 16, half k; D[i][j] in lane
// j + 16 * (i % 2), register i / 2).
#include "epilogue.h"

#if defined(KILN_DTYPE_FP32)
  #error "the matrix-core solvers take FP16 or BF16"
#endif

// The perf config: output pixels and channels per block, reduction per step. The wave
// layout below is written for 64 x 64 x 16 (the one config the manifest compiles).
#ifndef KILN_MMA_BM
  #define KILN_MMA_BM 64
#endif
#ifndef KILN_MMA_BN
  #define KILN_MMA_BN 64
#endif
#ifndef KILN_MMA_BK
  #define KILN_MMA_BK 16
#endif
#if KILN_MMA_BM != 64 || KILN_MMA_BN != 64 || KILN_MMA_BK != 16
  #error "conv_mma_amd.cpp is written for a 64 x 64 x 16 block tile"
#endif
#define KILN_MMA_LD (KILN_MMA_BK + 2)  // LDS row pitch (u16), padded against bank conflicts

typedef short kiln_s4 __attribute__((ext_vector_type(4)));
typedef short kiln_s16 __attribute__((ext_vector_type(16)));
typedef _Float16 kiln_h4 __attribute__((ext_vector_type(4)));
typedef _Float16 kiln_h16 __attribute__((ext_vector_type(16)));
typedef float kiln_f16v __attribute__((ext_vector_type(16)));
typedef float kiln_f8v __attribute__((ext_vector_type(8)));

// The A operand's element (pixel m, reduction r): the input under the filter tap, 0 in the
// padding and past the ends.
static __device__ KILN_INLINE kiln_u16 kiln_mma_a(const kiln_u16* __restrict__ x, const KilnConvArgs& a,
                                                  kiln_i64 pixels, kiln_i64 m, kiln_i32 r, kiln_i32 R) {
  if (m >= pixels || r >= R) return 0;
  const kiln_i32 osp = a.out_h * a.out_w;
  const kiln_i32 n = (kiln_i32)(m / osp), sp = (kiln_i32)(m % osp);
  const kiln_i32 oh = sp / a.out_w, ow = sp % a.out_w;
  const kiln_i32 c = r % a.c, f = r / a.c;
  const kiln_i32 fx = f % a.fil_w, fy = f / a.fil_w;
  const kiln_i32 ih = oh * a.stride_h - a.pad_h + fy * a.dil_h;
  const kiln_i32 iw = ow * a.stride_w - a.pad_w + fx * a.dil_w;
  if (ih < 0 || ih >= a.in_h || iw < 0 || iw >= a.in_w) return 0;
  return x[(((kiln_i64)n * a.in_h + ih) * a.in_w + iw) * a.c + c];
}

// Stages one reduction step: A (pixels x 16) and B (channels x 16), both r-contiguous.
static __device__ KILN_INLINE void kiln_mma_stage(kiln_u16 (*As)[KILN_MMA_LD], kiln_u16 (*Bs)[KILN_MMA_LD],
                                                  const kiln_u16* __restrict__ x, const kiln_u16* __restrict__ w,
                                                  const KilnConvArgs& a, kiln_i64 pixels, kiln_i64 m0,
                                                  kiln_i32 k0, kiln_i32 r0, kiln_i32 R) {
  for (kiln_i32 i = threadIdx.x; i < KILN_MMA_BM * KILN_MMA_BK; i += 256) {
    const kiln_i32 row = i / KILN_MMA_BK, rr = i % KILN_MMA_BK;
    As[row][rr] = kiln_mma_a(x, a, pixels, m0 + row, r0 + rr, R);
  }
  for (kiln_i32 i = threadIdx.x; i < KILN_MMA_BN * KILN_MMA_BK; i += 256) {
    const kiln_i32 col = i / KILN_MMA_BK, rr = i % KILN_MMA_BK;
    const kiln_i32 k = k0 + col, r = r0 + rr;
    // Channels-last weights: K x FH x FW x C, so filter k's reduction row starts at k * R.
    Bs[col][rr] = (k < a.k && r < R) ? w[(kiln_i64)k * R + r] : (kiln_u16)0;
  }
}

// A block's place in the GEMM: the reduction length, the output pixels, and its first pixel
// and channel.
struct KilnMmaTile {
  kiln_i32 R;
  kiln_i64 pixels, m0;
  kiln_i32 k0;
};

static __device__ KILN_INLINE KilnMmaTile kiln_mma_tile(const KilnConvArgs& a) {
  KilnMmaTile t;
  t.R = a.c * a.fil_h * a.fil_w;
  t.pixels = (kiln_i64)a.n * a.out_h * a.out_w;
  t.m0 = (kiln_i64)blockIdx.x * KILN_MMA_BM;
  t.k0 = blockIdx.y * KILN_MMA_BN;
  return t;
}

#if defined(__gfx90a__) || defined(__gfx942__)
extern "C" __global__ void conv_mfma_fwd(
    const kiln_t* __restrict__ x, const kiln_t* __restrict__ w, kiln_t* __restrict__ y,
    KilnConvArgs a, KilnEpilogue e) {
  __shared__ kiln_u16 As[KILN_MMA_BM][KILN_MMA_LD];
  __shared__ kiln_u16 Bs[KILN_MMA_BN][KILN_MMA_LD];
  const KilnMmaTile tile = kiln_mma_tile(a);
  const kiln_i32 R = tile.R, k0 = tile.k0;
  const kiln_i64 pixels = tile.pixels, m0 = tile.m0;
  const kiln_i32 lane = threadIdx.x % 64, wave = threadIdx.x / 64;
  const kiln_i32 wm = 32 * (wave / 2), wn = 32 * (wave % 2);
  kiln_f16v acc = {};
  for (kiln_i32 r0 = 0; r0 < R; r0 += KILN_MMA_BK) {
    kiln_mma_stage(As, Bs, x, w, a, pixels, m0, k0, r0, R);
    __syncthreads();
    for (kiln_i32 s = 0; s < KILN_MMA_BK; s += 8) {
      kiln_s4 av, bv;
      for (int j = 0; j < 4; ++j) {
        av[j] = (short)As[wm + lane % 32][s + 4 * (lane / 32) + j];
        bv[j] = (short)Bs[wn + lane % 32][s + 4 * (lane / 32) + j];
      }
#if defined(KILN_DTYPE_BF16)
      acc = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(av, bv, acc, 0, 0, 0);
#else
      acc = __builtin_amdgcn_mfma_f32_32x32x8f16(__builtin_bit_cast(kiln_h4, av),
                                                 __builtin_bit_cast(kiln_h4, bv), acc, 0, 0, 0);
#endif
    }
    __syncthreads();
  }
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const kiln_i64 m = m0 + wm + 8 * (j / 4) + 4 * (lane / 32) + j % 4;
    const kiln_i32 k = k0 + wn + lane % 32;
    if (m < pixels && k < a.k) kiln_store_nhwc(y, m, k, acc[j], e);
  }
}
#endif

#if defined(__gfx1100__) || defined(__gfx1151__)
extern "C" __global__ void conv_wmma_fwd(
    const kiln_t* __restrict__ x, const kiln_t* __restrict__ w, kiln_t* __restrict__ y,
    KilnConvArgs a, KilnEpilogue e) {
  __shared__ kiln_u16 As[KILN_MMA_BM][KILN_MMA_LD];
  __shared__ kiln_u16 Bs[KILN_MMA_BN][KILN_MMA_LD];
  const KilnMmaTile tile = kiln_mma_tile(a);
  const kiln_i32 R = tile.R, k0 = tile.k0;
  const kiln_i64 pixels = tile.pixels, m0 = tile.m0;
  const kiln_i32 lane = threadIdx.x % 32, wave = threadIdx.x / 32;
  const kiln_i32 wm = 16 * (wave / 2), wn = 32 * (wave % 2);
  kiln_f8v acc[2] = {};
  for (kiln_i32 r0 = 0; r0 < R; r0 += KILN_MMA_BK) {
    kiln_mma_stage(As, Bs, x, w, a, pixels, m0, k0, r0, R);
    __syncthreads();
    kiln_s16 av;
    for (int j = 0; j < 16; ++j) av[j] = (short)As[wm + lane % 16][j];
#pragma unroll
    for (int t = 0; t < 2; ++t) {
      kiln_s16 bv;
      for (int j = 0; j < 16; ++j) bv[j] = (short)Bs[wn + 16 * t + lane % 16][j];
#if defined(KILN_DTYPE_BF16)
      acc[t] = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(av, bv, acc[t]);
#else
      acc[t] = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(__builtin_bit_cast(kiln_h16, av),
                                                          __builtin_bit_cast(kiln_h16, bv), acc[t]);
#endif
    }
    __syncthreads();
  }
#pragma unroll
  for (int t = 0; t < 2; ++t) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const kiln_i64 m = m0 + wm + 2 * j + lane / 16;
      const kiln_i32 k = k0 + wn + 16 * t + lane % 16;
      if (m < pixels && k < a.k) kiln_store_nhwc(y, m, k, acc[t][j], e);
    }
  }
}
#endif
