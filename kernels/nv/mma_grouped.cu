// mma_grouped.cu: ConvMmaGroupedFwd, tensor-core grouped 2-D convolution in NHWC FP16 / BF16 for
// groups of KILN_GW = 4, 8, 16 or 24 channels in and out (C/groups = K/groups: ResNeXt's and
// RegNet's grouped 3x3 layers), NVIDIA sm_80+ (mma.sync, ldmatrix, cp.async).
//
// Why its own kernel: CUTLASS's group fprop computes a block within one group, so it needs
// K/groups to fill its 16-column tiles and reads 32 channels a step; narrower groups ran on the
// CUDA-core grouped kernel at 2.5-5x cuDNN at batch 32. Here a block covers KILN_SG whole groups
// (a slab of KILN_SG * KILN_GW <= 64 input and output channels; blockIdx.z picks the slab) over a
// KILN_BH x KILN_BW tile of one image's output pixels. It loads the tile's input patch for the
// slab's channels once into shared memory (zero-filled at the image's edges) with the slab's
// filter, and every filter tap reads its A operand from the patch (ldmatrix, one row address per
// lane), as ConvMmaNarrowFwd does: the input is read once, not once per tap.
//
// Each group multiplies its own channels only:
//  * KILN_GW a multiple of 8: a group's channels are whole 16-byte granules of a patch row; its
//    products are m16n8k16 (and m16n8k8 for an odd last granule) over them, with n8 tiles over
//    its own outputs, so nothing of another group enters them.
//  * KILN_GW = 4: one granule holds two groups (an even and an odd one). The pair's products read
//    the granule once; for each group the other's four channels are zeroed in the A fragment (a
//    register select) and the filter rows hold zeros there, so no product mixes groups: x * 0
//    would turn an inf of one group into a NaN in the other's outputs. Each group accumulates into
//    its own n8 tile, of which only its four output columns are kept.
//
// Patch rows hold 8 granules (64 channels; a 48-channel slab leaves two unused), XOR-swizzled by
// pixel so that 8 consecutive pixels hit 8 different bank groups. Filter rows are [tap][output
// channel in slab][KILN_GW channels] (for KILN_GW = 4: one granule, the weights in the half
// that matches the group's position in the patch granule). FP32 accumulation; the epilogue
// rounds once per output.
//
// Launch: grid (ceil(OH / KILN_BH) * ceil(OW / KILN_BW), N, slabs), block 32 * KILN_WARPS;
// dynamic shared memory: patch + filter bytes (src/solvers/mma_grouped.rs computes the same).
// Needs C / groups = K / groups = KILN_GW, C % 8 == 0, channels_last, 2-D. A dense layer of 16 or
// 24 channels in and out (a high-resolution stem's) is one group: KILN_SG = 1. At 32 channels
// a group, CUTLASS's group fprop and the implicit GEMMs measured faster, so no build is made.
#include "epilogue.h"
#include "nv_shared.h"

#if !defined(KILN_GW) || !defined(KILN_SG) || !defined(KILN_BH) || !defined(KILN_BW) || \
    !defined(KILN_WARPS)
#error "the perf config defines KILN_GW, KILN_SG, KILN_BH, KILN_BW and KILN_WARPS"
#endif
#if defined(KILN_DTYPE_FP16)
  #define KILN_MMA16 "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
  #define KILN_MMA8 "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32"
#elif defined(KILN_DTYPE_BF16)
  #define KILN_MMA16 "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
  #define KILN_MMA8 "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32"
#else
  #error "mma_grouped.cu builds for FP16 or BF16"
#endif

#if KILN_GW != 4 && KILN_GW != 8 && KILN_GW != 16 && KILN_GW != 24
  #error "KILN_GW is 4, 8, 16 or 24"
#endif
#if KILN_SG * KILN_GW > 64 || (KILN_SG * KILN_GW) % 8 != 0
  #error "a slab (KILN_SG groups of KILN_GW) is whole 16-byte granules, at most 64 channels"
#endif
#define KILN_CB (KILN_SG * KILN_GW)        // channels of a slab (in and out)
#define KILN_PG (KILN_CB / 8)              // granules of a patch row that hold channels
#define KILN_RG 8                          // granules per patch row (48-channel slabs: 2 unused)
#define KILN_FG (KILN_GW >= 8 ? KILN_GW / 8 : 1)  // granules per filter row
#define KILN_NT (KILN_CB / 8)              // n8 tiles of a slab's outputs
#define KILN_PAR (KILN_GW == 4 ? 2 : 1)    // accumulators per n8 tile (two groups share one)
#define KILN_MGROUPS (KILN_BH * KILN_BW / 16)  // m16 groups in the tile
#define KILN_GPW (KILN_MGROUPS / KILN_WARPS)   // m16 groups per warp
#define KILN_THREADS (32 * KILN_WARPS)
static_assert(KILN_BW % 16 == 0, "tile width is whole m16 groups");
static_assert(KILN_MGROUPS % KILN_WARPS == 0, "every warp gets as many m16 groups");
static_assert(KILN_PG <= KILN_RG, "a slab fits a patch row");

// Byte offset of granule g of patch pixel `pix` (rows of KILN_RG granules, swizzled).
static __device__ KILN_INLINE kiln_u32 kiln_patch_granule(kiln_u32 pix, kiln_u32 g) {
  return (pix * KILN_RG + (g ^ (pix & (KILN_RG - 1)))) * 16;
}

// Byte offset of granule g of filter row `row` (rows of KILN_FG granules).
static __device__ KILN_INLINE kiln_u32 kiln_filter_granule(kiln_u32 row, kiln_u32 g) {
  return (row * KILN_FG + g) * 16;
}

static __device__ KILN_INLINE void kiln_ldsm_x1(kiln_u32& r0, kiln_u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r0) : "r"(addr));
}
static __device__ KILN_INLINE void kiln_ldsm_x2(kiln_u32& r0, kiln_u32& r1, kiln_u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
               : "=r"(r0), "=r"(r1) : "r"(addr));
}
static __device__ KILN_INLINE void kiln_ldsm_x4(kiln_u32& r0, kiln_u32& r1, kiln_u32& r2,
                                                kiln_u32& r3, kiln_u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}

// acc += A (16 x 16) * B (16 x 8), and the same with k = 8.
static __device__ KILN_INLINE void kiln_mma16(float (&acc)[4], kiln_u32 a0, kiln_u32 a1,
                                              kiln_u32 a2, kiln_u32 a3, kiln_u32 b0,
                                              kiln_u32 b1) {
  asm(KILN_MMA16 " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
static __device__ KILN_INLINE void kiln_mma8(float (&acc)[4], kiln_u32 a0, kiln_u32 a1,
                                             kiln_u32 b0) {
  asm(KILN_MMA8 " {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
      : "r"(a0), "r"(a1), "r"(b0));
}

extern "C" __global__ void __launch_bounds__(KILN_THREADS)
    kiln_mma_grouped(const kiln_t* __restrict__ x, const kiln_t* __restrict__ w,
                     kiln_t* __restrict__ y, KilnConvArgs a, KilnEpilogue ep) {
  extern __shared__ __align__(128) unsigned char kiln_dyn_smem[];
  kiln_pdl_enter();
  const KilnPatch pt = kiln_tile_patch(a, KILN_BH, KILN_BW);
  const kiln_i32 ih0 = pt.ih0, iw0 = pt.iw0;
  const kiln_i32 rows = pt.rows, cols = pt.cols;
  const kiln_i32 n = (kiln_i32)blockIdx.y;
  const kiln_i32 c0 = (kiln_i32)blockIdx.z * KILN_CB;  // the slab's first channel, in and out
  const kiln_i32 taps = a.fil_h * a.fil_w;
  const kiln_u32 patch = kiln_smem(kiln_dyn_smem);
  const kiln_u32 filter = patch + (kiln_u32)(rows * cols) * KILN_RG * 16;

  // The patch: the slab's granules of every pixel, zeros outside the image.
  for (kiln_i32 i = (kiln_i32)threadIdx.x; i < rows * cols * KILN_PG; i += KILN_THREADS) {
    const kiln_i32 pix = i / KILN_PG, g = i - pix * KILN_PG;
    const kiln_i32 pr = pix / cols, ih = ih0 + pr, iw = iw0 + (pix - pr * cols);
    const kiln_i32 c = c0 + g * 8;
    const bool valid = ih >= 0 && ih < a.in_h && iw >= 0 && iw < a.in_w && c < a.c;
    const kiln_t* src = valid ? x + ((((kiln_i64)n * a.in_h + ih) * a.in_w + iw) * a.c + c) : x;
    kiln_cp16(patch + kiln_patch_granule((kiln_u32)pix, (kiln_u32)g), src, valid);
  }
  // The filter: row (tap, output channel in the slab), zeros past K.
#if KILN_GW >= 8
  for (kiln_i32 i = (kiln_i32)threadIdx.x; i < taps * KILN_CB * KILN_FG; i += KILN_THREADS) {
    const kiln_i32 row = i / KILN_FG, g = i - row * KILN_FG;
    const kiln_i32 tap = row / KILN_CB, k = c0 + (row - tap * KILN_CB);
    const bool valid = k < a.k;
    const kiln_t* src = valid ? w + (((kiln_i64)k * taps + tap) * KILN_GW + g * 8) : w;
    kiln_cp16(filter + kiln_filter_granule((kiln_u32)row, (kiln_u32)g), src, valid);
  }
#else
  // Four weights a row, placed in the half of the granule where the group's channels lie in
  // the patch (even groups the low half, odd groups the high half); zeros in the other half.
  for (kiln_i32 i = (kiln_i32)threadIdx.x; i < taps * KILN_CB; i += KILN_THREADS) {
    const kiln_i32 tap = i / KILN_CB, nk = i - tap * KILN_CB, k = c0 + nk;
    uint2 v = make_uint2(0u, 0u);
    if (k < a.k) v = *reinterpret_cast<const uint2*>(w + ((kiln_i64)k * taps + tap) * 4);
    const uint4 row = ((nk / 4) & 1) ? make_uint4(0u, 0u, v.x, v.y) : make_uint4(v.x, v.y, 0u, 0u);
    *reinterpret_cast<uint4*>(kiln_dyn_smem + (filter - patch) + kiln_filter_granule((kiln_u32)i, 0)) =
        row;
  }
#endif
  asm volatile("cp.async.commit_group;" ::: "memory");
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();

  const kiln_i32 lane = (kiln_i32)(threadIdx.x & 31), warp = (kiln_i32)(threadIdx.x >> 5);
  // The patch pixel this lane's ldmatrix row starts at, per m16 group, for tap (0, 0).
  kiln_u32 pix0[KILN_GPW];
#pragma unroll
  for (int q = 0; q < KILN_GPW; ++q) {
    pix0[q] = kiln_m16_patch_pixel(a, pt, warp * KILN_GPW + q, (lane & 7) + ((lane >> 3) & 1) * 8,
                                   KILN_BW);
  }
  float acc[KILN_GPW][KILN_NT][KILN_PAR][4];
#pragma unroll
  for (int q = 0; q < KILN_GPW; ++q)
#pragma unroll
    for (int t = 0; t < KILN_NT; ++t)
#pragma unroll
      for (int h = 0; h < KILN_PAR; ++h)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[q][t][h][e] = 0.0f;

  for (kiln_i32 r = 0; r < a.fil_h; ++r) {
    for (kiln_i32 s = 0; s < a.fil_w; ++s) {
      const kiln_u32 shift = (kiln_u32)(r * a.dil_h * cols + s * a.dil_w);
      const kiln_u32 tap_row = (kiln_u32)((r * a.fil_w + s) * KILN_CB);
#if KILN_GW >= 8
#pragma unroll
      for (int grp = 0; grp < KILN_SG; ++grp) {
        const kiln_u32 g0 = (kiln_u32)(grp * KILN_FG);  // the group's first patch granule
#pragma unroll
        for (int j = 0; j + 1 < KILN_FG; j += 2) {  // pairs of granules: k16 products
#pragma unroll
          for (int t = 0; t < KILN_GW / 8; ++t) {
            // B: lanes 0-7 address output rows 0-7 of the n8 tile at granule j, 8-15 at j + 1.
            const kiln_u32 row = tap_row + (kiln_u32)(grp * KILN_GW + 8 * t + (lane & 7));
            kiln_u32 b0, b1;
            kiln_ldsm_x2(b0, b1, filter + kiln_filter_granule(row, (kiln_u32)(j + ((lane >> 3) & 1))));
#pragma unroll
            for (int q = 0; q < KILN_GPW; ++q) {
              kiln_u32 a0, a1, a2, a3;
              kiln_ldsm_x4(a0, a1, a2, a3,
                           patch + kiln_patch_granule(pix0[q] + shift, g0 + (kiln_u32)(j + (lane >> 4))));
              kiln_mma16(acc[q][grp * (KILN_GW / 8) + t][0], a0, a1, a2, a3, b0, b1);
            }
          }
        }
#if KILN_FG % 2 == 1
        {  // the group's last granule alone: k8 products
          const int j = KILN_FG - 1;
#pragma unroll
          for (int t = 0; t < KILN_GW / 8; ++t) {
            const kiln_u32 row = tap_row + (kiln_u32)(grp * KILN_GW + 8 * t + (lane & 7));
            kiln_u32 b0;
            kiln_ldsm_x1(b0, filter + kiln_filter_granule(row, (kiln_u32)j));
#pragma unroll
            for (int q = 0; q < KILN_GPW; ++q) {
              kiln_u32 a0, a1;
              kiln_ldsm_x2(a0, a1,
                           patch + kiln_patch_granule(pix0[q] + shift, g0 + (kiln_u32)j));
              kiln_mma8(acc[q][grp * (KILN_GW / 8) + t][0], a0, a1, b0);
            }
          }
        }
#endif
      }
#else
      // KILN_GW = 4: granule p holds groups 2p (channels 0-3: lanes whose k columns 2 * (lane
      // % 4) are below 4) and 2p + 1; n8 tile p holds both groups' outputs.
      const bool low = (lane & 3) < 2;
#pragma unroll
      for (int p = 0; p < KILN_PG; ++p) {
        const kiln_u32 row = tap_row + (kiln_u32)(8 * p + (lane & 7));
        kiln_u32 b0;
        kiln_ldsm_x1(b0, filter + kiln_filter_granule(row, 0));
#pragma unroll
        for (int q = 0; q < KILN_GPW; ++q) {
          kiln_u32 a0, a1;
          kiln_ldsm_x2(a0, a1, patch + kiln_patch_granule(pix0[q] + shift, (kiln_u32)p));
          kiln_mma8(acc[q][p][0], low ? a0 : 0u, low ? a1 : 0u, b0);
          kiln_mma8(acc[q][p][1], low ? 0u : a0, low ? 0u : a1, b0);
        }
      }
#endif
    }
  }

  // Accumulator e of m16 group q, n8 tile t: pixel (lane / 4) + 8 * (e / 2) of the group,
  // output channel 8 * t + 2 * (lane % 4) + e % 2 of the slab. With KILN_GW = 4 the lane's
  // columns belong to the even group (lane % 4 < 2) or the odd one, whose accumulator it keeps.
#if KILN_PAR == 2
  const bool odd_group = (lane & 3) >= 2;
#endif
#pragma unroll
  for (int q = 0; q < KILN_GPW; ++q) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const kiln_i64 pixel =
          kiln_m16_output_pixel(a, pt, n, warp * KILN_GPW + q, (lane >> 2) + 8 * half, KILN_BW);
      if (pixel < 0) continue;
#pragma unroll
      for (int t = 0; t < KILN_NT; ++t) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const kiln_i32 k = c0 + 8 * t + 2 * (lane & 3) + e;
#if KILN_PAR == 2
          const float v = odd_group ? acc[q][t][1][2 * half + e] : acc[q][t][0][2 * half + e];
#else
          const float v = acc[q][t][0][2 * half + e];
#endif
          if (k < a.k) kiln_store_nhwc(y, pixel, k, v, ep);
        }
      }
    }
  }
}
