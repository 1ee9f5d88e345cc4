// mma_narrow.cu: ConvMmaNarrowFwd, tensor-core 2-D convolution in NHWC FP16 / BF16 for layers
// with few output channels (K <= 8 * KILN_NT: the RGB, mask or depth heads of decoders and
// segmentation networks), NVIDIA sm_80+ (mma.sync, ldmatrix, cp.async).
//
// Why its own kernel: with K this small a GEMM tile is mostly padding, and an implicit GEMM
// that gathers each filter tap's input rows from L2 reads the input R*S times; such layers are
// bound by that traffic, not by math. Here a block loads the input patch its output tile needs
// ONCE per channel chunk into shared memory (zero-filled at the image's edges) and every filter
// tap reads its A operand straight out of that patch: ldmatrix takes one row address per lane,
// so tap (r, s) is the same patch at another offset, no im2col.
//
// A block computes a KILN_BH x KILN_BW tile of output pixels (rows x columns of one image) for
// all K <= 8 * KILN_NT output channels. The tile is cut into m16 groups (16 pixels of one
// output row); each of the KILN_WARPS warps owns KILN_GPW of them. Per chunk of KILN_CC input
// channels, double-buffered with cp.async: the patch (rows x columns x KILN_CC, 16-byte granules
// XOR-swizzled by pixel so that 8 consecutive pixels hit 8 different bank groups) and the
// filter slice [tap][K padded to 8 * KILN_NT][KILN_CC] (same swizzle by row). Products are
// mma.sync m16n8k16 with FP32 accumulators; the epilogue rounds to the element type and stores
// the K channels of each pixel, masking pixels past the image and channels past K.
//
// Launch: grid (ceil(OW / KILN_BW) * ceil(OH / KILN_BH), N), block 32 * KILN_WARPS; dynamic
// shared memory 2 * (patch + filter slice) bytes (src/solvers/narrow.rs computes the same).
// Needs groups = 1, C % 8 == 0 (16-byte granules), K <= 8 * KILN_NT, channels_last, 2-D.
#include "epilogue.h"
#include "nv_shared.h"

#if !defined(KILN_BH) || !defined(KILN_BW) || !defined(KILN_WARPS) || !defined(KILN_CC) || \
    !defined(KILN_NT)
#error "the perf config defines KILN_BH, KILN_BW, KILN_WARPS, KILN_CC and KILN_NT"
#endif
#if !defined(KILN_DTYPE_FP16) && !defined(KILN_DTYPE_BF16)
  #error "mma_narrow.cu builds for FP16 or BF16"
#endif

// 16-byte granules of one pixel's chunk, and the swizzle shift that makes (pixel mod 8) ->
// (bank group) a bijection: granule g of pixel p sits at g ^ ((p >> SHIFT) & (G - 1)).
#define KILN_G (KILN_CC / 8)
#if KILN_G == 2
  #define KILN_SWZ_SHIFT 2
#elif KILN_G == 4
  #define KILN_SWZ_SHIFT 1
#elif KILN_G == 8
  #define KILN_SWZ_SHIFT 0
#else
  #error "KILN_CC is 16, 32 or 64"
#endif
#define KILN_N (8 * KILN_NT)                              // output channels a block covers
#define KILN_GROUPS (KILN_BH * KILN_BW / 16)              // m16 groups in the tile
#define KILN_GPW (KILN_GROUPS / KILN_WARPS)               // m16 groups per warp
#define KILN_THREADS (32 * KILN_WARPS)
static_assert(KILN_BW % 16 == 0, "tile width is whole m16 groups");
static_assert(KILN_GROUPS % KILN_WARPS == 0, "every warp gets as many m16 groups");

// Byte offset of granule g of row (pixel) `row` in a swizzled [row][KILN_G] buffer.
static __device__ KILN_INLINE kiln_u32 kiln_granule(kiln_u32 row, kiln_u32 g) {
  return (row * KILN_G + (g ^ ((row >> KILN_SWZ_SHIFT) & (KILN_G - 1)))) * 16;
}

// Stages channel chunk [c0, c0 + KILN_CC) of the patch and of the filter slice.
static __device__ KILN_INLINE void kiln_stage_chunk(kiln_u32 patch, kiln_u32 filter,
                                                    const kiln_t* __restrict__ x,
                                                    const kiln_t* __restrict__ w,
                                                    const KilnConvArgs& a, const KilnPatch& pt,
                                                    kiln_i32 n, kiln_i32 c0) {
  const kiln_i32 pixels = pt.rows * pt.cols;
  for (kiln_i32 i = (kiln_i32)threadIdx.x; i < pixels * KILN_G; i += KILN_THREADS) {
    const kiln_i32 pix = i / KILN_G, g = i - pix * KILN_G;
    const kiln_i32 pr = pix / pt.cols, ih = pt.ih0 + pr, iw = pt.iw0 + (pix - pr * pt.cols);
    const kiln_i32 c = c0 + g * 8;
    const bool valid = ih >= 0 && ih < a.in_h && iw >= 0 && iw < a.in_w && c < a.c;
    const kiln_t* src = valid ? x + ((((kiln_i64)n * a.in_h + ih) * a.in_w + iw) * a.c + c) : x;
    kiln_cp16(patch + kiln_granule((kiln_u32)pix, (kiln_u32)g), src, valid);
  }
  const kiln_i32 taps = a.fil_h * a.fil_w;
  for (kiln_i32 i = (kiln_i32)threadIdx.x; i < taps * KILN_N * KILN_G; i += KILN_THREADS) {
    const kiln_i32 row = i / KILN_G, g = i - row * KILN_G;
    const kiln_i32 tap = row / KILN_N, k = row - tap * KILN_N;
    const kiln_i32 c = c0 + g * 8;
    const bool valid = k < a.k && c < a.c;
    const kiln_t* src = valid ? w + (((kiln_i64)k * taps + tap) * a.c + c) : w;
    kiln_cp16(filter + kiln_granule((kiln_u32)row, (kiln_u32)g), src, valid);
  }
  asm volatile("cp.async.commit_group;" ::: "memory");
}

extern "C" __global__ void __launch_bounds__(KILN_THREADS)
    kiln_mma_narrow(const kiln_t* __restrict__ x, const kiln_t* __restrict__ w,
                    kiln_t* __restrict__ y, KilnConvArgs a, KilnEpilogue ep) {
  extern __shared__ __align__(128) unsigned char kiln_dyn_smem[];
  kiln_pdl_enter();
  const KilnPatch pt = kiln_tile_patch(a, KILN_BH, KILN_BW);
  const kiln_i32 n = (kiln_i32)blockIdx.y;
  const kiln_u32 patch_bytes = (kiln_u32)(pt.rows * pt.cols) * KILN_G * 16;
  const kiln_u32 filter_bytes = (kiln_u32)(a.fil_h * a.fil_w * KILN_N) * KILN_G * 16;
  const kiln_u32 base = kiln_smem(kiln_dyn_smem);
  const kiln_u32 stage_bytes = patch_bytes + filter_bytes;

  const kiln_i32 lane = (kiln_i32)(threadIdx.x & 31), warp = (kiln_i32)(threadIdx.x >> 5);
  // The patch pixel this lane's ldmatrix row starts at, per m16 group, for tap (0, 0).
  kiln_u32 pix0[KILN_GPW];
#pragma unroll
  for (int q = 0; q < KILN_GPW; ++q) {
    pix0[q] = kiln_m16_patch_pixel(a, pt, warp * KILN_GPW + q, (lane & 7) + ((lane >> 3) & 1) * 8,
                                   KILN_BW);
  }
  float acc[KILN_GPW][KILN_NT][4];
#pragma unroll
  for (int q = 0; q < KILN_GPW; ++q)
#pragma unroll
    for (int t = 0; t < KILN_NT; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[q][t][e] = 0.0f;

  const kiln_i32 chunks = (a.c + KILN_CC - 1) / KILN_CC;
  kiln_stage_chunk(base, base + patch_bytes, x, w, a, pt, n, 0);
  for (kiln_i32 ci = 0; ci < chunks; ++ci) {
    const kiln_u32 stage = base + (kiln_u32)(ci & 1) * stage_bytes;
    if (ci + 1 < chunks) {
      const kiln_u32 next = base + (kiln_u32)((ci + 1) & 1) * stage_bytes;
      kiln_stage_chunk(next, next + patch_bytes, x, w, a, pt, n, (ci + 1) * KILN_CC);
      asm volatile("cp.async.wait_group 1;" ::: "memory");
    } else {
      asm volatile("cp.async.wait_group 0;" ::: "memory");
    }
    __syncthreads();
    const kiln_u32 patch = stage, filter = stage + patch_bytes;
    for (kiln_i32 r = 0; r < a.fil_h; ++r) {
      for (kiln_i32 s = 0; s < a.fil_w; ++s) {
        const kiln_u32 shift = (kiln_u32)(r * a.dil_h * pt.cols + s * a.dil_w);
        const kiln_u32 tap_row = (kiln_u32)((r * a.fil_w + s) * KILN_N);
#pragma unroll
        for (int j = 0; j < KILN_CC / 16; ++j) {
          // B: lanes 0-7 address n-tile 0's k 0-7, 8-15 its k 8-15, 16-31 n-tile 1's.
          kiln_u32 b[KILN_NT][2];
          {
            const kiln_u32 row = tap_row + (kiln_u32)((lane >> 4) * 8 * (KILN_NT - 1) + (lane & 7));
            const kiln_u32 addr = filter + kiln_granule(row, (kiln_u32)(2 * j + ((lane >> 3) & 1)));
#if KILN_NT == 1
            kiln_ldsm_x2(b[0][0], b[0][1], addr);
#else
            kiln_ldsm_x4(b[0][0], b[0][1], b[1][0], b[1][1], addr);
#endif
          }
#pragma unroll
          for (int q = 0; q < KILN_GPW; ++q) {
            const kiln_u32 pix = pix0[q] + shift;
            const kiln_u32 addr = patch + kiln_granule(pix, (kiln_u32)(2 * j + (lane >> 4)));
            kiln_u32 a0, a1, a2, a3;
            kiln_ldsm_x4(a0, a1, a2, a3, addr);
#pragma unroll
            for (int t = 0; t < KILN_NT; ++t)
              kiln_mma16(acc[q][t], a0, a1, a2, a3, b[t][0], b[t][1]);
          }
        }
      }
    }
    __syncthreads();  // the next iteration stages into the buffer just read
  }

  kiln_m16_store<KILN_GPW, KILN_NT, KILN_BW>(y, a, pt, n, warp * KILN_GPW, 0, lane, ep,
                                             [&](int q, int t, int e) { return acc[q][t][e]; });
}
