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
// Patch rows hold the slab's granules rounded up to a power of two (KILN_RG: 2, 4 or 8; a
// 48-channel slab leaves two unused), packed into 128-byte lines and XOR-swizzled by line, so
// that one granule of 8 consecutive pixels (an ldmatrix matrix) hits 8 different bank groups.
// Filter rows are [tap][output channel in slab][KILN_GW channels] (for KILN_GW = 4: one
// granule, the weights in the half that matches the group's position in the patch granule). FP32 accumulation; the epilogue
// rounds once per output.
//
// A block loads its slab's filter once and then takes every gridDim.x-th tile of the batch's
// N * ceil(OH / KILN_BH) * ceil(OW / KILN_BW) tiles. The host launches about one wave of blocks,
// so a block usually has several tiles: their patches are double-buffered, the next one copied
// (cp.async) while this one's products run and its outputs are stored. Where every tile has a
// block of its own, there is one buffer and the kernel is one load, products, store.
//
// Launch: grid (blocks <= tiles, 1, slabs), block 32 * KILN_WARPS; dynamic shared memory: 128
// bytes of alignment slack, one or two patches, the filter (src/solvers/mma_grouped.rs computes
// the same).
// Needs C / groups = K / groups = KILN_GW, C % 8 == 0, channels_last, 2-D. A dense layer of 16 or
// 24 channels in and out (a high-resolution stem's) is one group: KILN_SG = 1. At 32 channels
// a group, CUTLASS's group fprop and the implicit GEMMs measured faster, so no build is made.
#include "epilogue.h"
#include "nv_shared.h"

#if !defined(KILN_GW) || !defined(KILN_SG) || !defined(KILN_BH) || !defined(KILN_BW) || \
    !defined(KILN_WARPS)
#error "the perf config defines KILN_GW, KILN_SG, KILN_BH, KILN_BW and KILN_WARPS"
#endif
#if !defined(KILN_DTYPE_FP16) && !defined(KILN_DTYPE_BF16)
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
// Granules per patch row: the slab's, rounded up to a power of two.
#define KILN_RG (KILN_PG <= 1 ? 1 : KILN_PG <= 2 ? 2 : KILN_PG <= 4 ? 4 : 8)
#define KILN_FG (KILN_GW >= 8 ? KILN_GW / 8 : 1)  // granules per filter row
#define KILN_NT (KILN_CB / 8)              // n8 tiles of a slab's outputs
#define KILN_PAR (KILN_GW == 4 ? 2 : 1)    // accumulators per n8 tile (two groups share one)
#define KILN_MGROUPS (KILN_BH * KILN_BW / 16)  // m16 groups in the tile
#define KILN_GPW (KILN_MGROUPS / KILN_WARPS)   // m16 groups per warp
#define KILN_THREADS (32 * KILN_WARPS)
static_assert(KILN_BW % 16 == 0, "tile width is whole m16 groups");
static_assert(KILN_MGROUPS % KILN_WARPS == 0, "every warp gets as many m16 groups");
static_assert(KILN_PG <= KILN_RG, "a slab fits a patch row");

// Byte offset of granule g of patch pixel `pix`: granule l = pix * KILN_RG + g of the patch
// sits in 128-byte line l / 8 at position (l % 8) XOR (line % 8). A pixel's granules share a
// line, so moving between them is an XOR of the granule index (kiln_at_granule).
static __device__ KILN_INLINE kiln_u32 kiln_patch_granule(kiln_u32 pix, kiln_u32 g) {
  const kiln_u32 l = pix * KILN_RG + g;
  return ((l & ~7u) | ((l ^ (l >> 3)) & 7u)) * 16;
}

// Byte offset of granule g of filter row `row` (rows of KILN_FG granules).
static __device__ KILN_INLINE kiln_u32 kiln_filter_granule(kiln_u32 row, kiln_u32 g) {
  return (row * KILN_FG + g) * 16;
}

// A lane's patch address of granule g for the pixel whose granule-0 address is `base`: the
// swizzle XORs the granule with the pixel's low bits, which sit in bits 4-6 of `base` (the
// patch starts 128-byte aligned), so one XOR moves to any granule of the same pixel.
static __device__ KILN_INLINE kiln_u32 kiln_at_granule(kiln_u32 base, kiln_u32 g) {
  return base ^ (g << 4);
}

// One k16 step for each of the warp's m16 groups into n8 tile `tile`: B (k16 x n8) from the
// filter rows the lanes address at b_addr, A from granule g of each group's patch pixels.
static __device__ KILN_INLINE void kiln_k16_step(float (&acc)[KILN_GPW][KILN_NT][KILN_PAR][4],
                                                 int tile, kiln_u32 b_addr,
                                                 const kiln_u32 (&base)[KILN_GPW], kiln_u32 g) {
  kiln_u32 b0, b1;
  kiln_ldsm_x2(b0, b1, b_addr);
#pragma unroll
  for (int q = 0; q < KILN_GPW; ++q) {
    kiln_u32 a0, a1, a2, a3;
    kiln_ldsm_x4(a0, a1, a2, a3, kiln_at_granule(base[q], g));
    kiln_mma16(acc[q][tile][0], a0, a1, a2, a3, b0, b1);
  }
}

// One tap's k16 products over pairs of a group's granules (groups of 16 and 24 channels; none
// for 8): `shift` moves the lane's tap-(0, 0) patch pixel to the tap's, `tap_row` is the tap's
// first filter row.
static __device__ KILN_INLINE void kiln_tap_k16(float (&acc)[KILN_GPW][KILN_NT][KILN_PAR][4],
                                                const kiln_u32 (&pix0)[KILN_GPW], kiln_u32 patch,
                                                kiln_u32 filter, kiln_u32 shift,
                                                kiln_u32 tap_row, kiln_i32 lane) {
#if KILN_GW >= 16
  kiln_u32 base[KILN_GPW];
#pragma unroll
  for (int q = 0; q < KILN_GPW; ++q) base[q] = patch + kiln_patch_granule(pix0[q] + shift, 0);
#pragma unroll
  for (int grp = 0; grp < KILN_SG; ++grp) {
#pragma unroll
    for (int j = 0; j + 1 < KILN_FG; j += 2) {
      const kiln_u32 g = (kiln_u32)(grp * KILN_FG + j + (lane >> 4));
#pragma unroll
      for (int t = 0; t < KILN_GW / 8; ++t) {
        // B: lanes 0-7 address output rows 0-7 of the n8 tile at granule j, 8-15 at j + 1.
        const kiln_u32 row = tap_row + (kiln_u32)(grp * KILN_GW + 8 * t + (lane & 7));
        kiln_k16_step(acc, grp * (KILN_GW / 8) + t,
                      filter + kiln_filter_granule(row, (kiln_u32)(j + ((lane >> 3) & 1))), base,
                      g);
      }
    }
  }
#endif
}

// The products of a group's last, odd granule (groups of 8 and 24; for groups of 4 the granule
// both groups of a pair share). Two taps at once: one k16 product whose k runs over the granule
// at tap a (k 0-7) and at tap b (k 8-15): lanes 0-15 address tap a's pixels and filter rows,
// 16-31 tap b's pixels and 8-15 its rows. With `single`, tap a alone in a k8 product.
template <bool single>
static __device__ KILN_INLINE void kiln_taps_k8(float (&acc)[KILN_GPW][KILN_NT][KILN_PAR][4],
                                                const kiln_u32 (&pix0)[KILN_GPW], kiln_u32 patch,
                                                kiln_u32 filter, kiln_u32 shift_a,
                                                kiln_u32 shift_b, kiln_u32 row_a, kiln_u32 row_b,
                                                kiln_i32 lane) {
#if KILN_FG % 2 == 1
  const kiln_u32 shift = lane < 16 ? shift_a : shift_b;
  const kiln_u32 tap_row = ((lane >> 3) & 1) ? row_b : row_a;
  kiln_u32 base[KILN_GPW];
#pragma unroll
  for (int q = 0; q < KILN_GPW; ++q) base[q] = patch + kiln_patch_granule(pix0[q] + shift, 0);
#if KILN_GW >= 8
  const int j = KILN_FG - 1;
#pragma unroll
  for (int grp = 0; grp < KILN_SG; ++grp) {
#pragma unroll
    for (int t = 0; t < KILN_GW / 8; ++t) {
      const kiln_u32 row = (single ? row_a : tap_row) + (kiln_u32)(grp * KILN_GW + 8 * t + (lane & 7));
      const kiln_u32 b_addr = filter + kiln_filter_granule(row, (kiln_u32)j);
      const kiln_u32 g = (kiln_u32)(grp * KILN_FG + j);
      if (single) {
        kiln_u32 b0;
        kiln_ldsm_x1(b0, b_addr);
#pragma unroll
        for (int q = 0; q < KILN_GPW; ++q) {
          kiln_u32 a0, a1;
          kiln_ldsm_x2(a0, a1, kiln_at_granule(base[q], g));
          kiln_mma8(acc[q][grp * (KILN_GW / 8) + t][0], a0, a1, b0);
        }
      } else {
        kiln_k16_step(acc, grp * (KILN_GW / 8) + t, b_addr, base, g);
      }
    }
  }
#else
  // KILN_GW = 4: granule p holds groups 2p (channels 0-3: lanes whose k columns 2 * (lane
  // % 4) are below 4, in both k halves) and 2p + 1; n8 tile p holds both groups' outputs.
  const bool low = (lane & 3) < 2;
#pragma unroll
  for (int p = 0; p < KILN_PG; ++p) {
    const kiln_u32 row = (single ? row_a : tap_row) + (kiln_u32)(8 * p + (lane & 7));
    if (single) {
      kiln_u32 b0;
      kiln_ldsm_x1(b0, filter + kiln_filter_granule(row, 0));
#pragma unroll
      for (int q = 0; q < KILN_GPW; ++q) {
        kiln_u32 a0, a1;
        kiln_ldsm_x2(a0, a1, kiln_at_granule(base[q], (kiln_u32)p));
        kiln_mma8(acc[q][p][0], low ? a0 : 0u, low ? a1 : 0u, b0);
        kiln_mma8(acc[q][p][1], low ? 0u : a0, low ? 0u : a1, b0);
      }
    } else {
      kiln_u32 b0, b1;
      kiln_ldsm_x2(b0, b1, filter + kiln_filter_granule(row, 0));
#pragma unroll
      for (int q = 0; q < KILN_GPW; ++q) {
        kiln_u32 a0, a1, a2, a3;
        kiln_ldsm_x4(a0, a1, a2, a3, kiln_at_granule(base[q], (kiln_u32)p));
        kiln_mma16(acc[q][p][0], low ? a0 : 0u, low ? a1 : 0u, low ? a2 : 0u, low ? a3 : 0u, b0, b1);
        kiln_mma16(acc[q][p][1], low ? 0u : a0, low ? 0u : a1, low ? 0u : a2, low ? 0u : a3, b0, b1);
      }
    }
  }
#endif
#endif
}

// The patch of `tile` (an index over every image's tiles) into the buffer at `patch`: the
// slab's granules of every pixel, zeros outside the image.
static __device__ KILN_INLINE void kiln_stage_patch(kiln_u32 patch, const kiln_t* __restrict__ x,
                                                    const KilnConvArgs& a, kiln_i32 tile,
                                                    kiln_i32 tiles_per_image, kiln_i32 c0) {
  const kiln_i32 n = tile / tiles_per_image;
  const KilnPatch pt = kiln_tile_patch_at(a, tile - n * tiles_per_image, KILN_BH, KILN_BW);
  const kiln_i32 rows = pt.rows, cols = pt.cols;
  const kiln_t* image = x + (kiln_i64)n * a.in_h * a.in_w * a.c;
#if KILN_THREADS % KILN_PG == 0
  // Each thread copies one granule of every step-th pixel: the pixel's row and column advance
  // by a fixed step instead of being divided out of its index each time.
  const kiln_i32 step = KILN_THREADS / KILN_PG;
  const kiln_i32 g = (kiln_i32)threadIdx.x % KILN_PG;
  const kiln_i32 step_r = step / cols, step_c = step - step_r * cols;
  kiln_i32 pix = (kiln_i32)threadIdx.x / KILN_PG;
  kiln_i32 pr = pix / cols, pc = pix - pr * cols;
  const kiln_t* channels = image + c0 + g * 8;
  const bool channel_valid = c0 + g * 8 < a.c;
  for (; pix < rows * cols; pix += step) {
    const kiln_i32 ih = pt.ih0 + pr, iw = pt.iw0 + pc;
    const bool valid = channel_valid && ih >= 0 && ih < a.in_h && iw >= 0 && iw < a.in_w;
    const kiln_t* src = valid ? channels + ((kiln_i64)ih * a.in_w + iw) * a.c : x;
    kiln_cp16(patch + kiln_patch_granule((kiln_u32)pix, (kiln_u32)g), src, valid);
    pr += step_r;
    pc += step_c;
    if (pc >= cols) {
      pc -= cols;
      ++pr;
    }
  }
#else
  for (kiln_i32 i = (kiln_i32)threadIdx.x; i < rows * cols * KILN_PG; i += KILN_THREADS) {
    const kiln_i32 pix = i / KILN_PG, g = i - pix * KILN_PG;
    const kiln_i32 pr = pix / cols, ih = pt.ih0 + pr, iw = pt.iw0 + (pix - pr * cols);
    const kiln_i32 c = c0 + g * 8;
    const bool valid = ih >= 0 && ih < a.in_h && iw >= 0 && iw < a.in_w && c < a.c;
    const kiln_t* src = valid ? image + (((kiln_i64)ih * a.in_w + iw) * a.c + c) : x;
    kiln_cp16(patch + kiln_patch_granule((kiln_u32)pix, (kiln_u32)g), src, valid);
  }
#endif
  asm volatile("cp.async.commit_group;" ::: "memory");
}

extern "C" __global__ void __launch_bounds__(KILN_THREADS)
    kiln_mma_grouped(const kiln_t* __restrict__ x, const kiln_t* __restrict__ w,
                     kiln_t* __restrict__ y, KilnConvArgs a, KilnEpilogue ep) {
  extern __shared__ __align__(128) unsigned char kiln_dyn_smem[];
  kiln_pdl_enter();
  // Tiles: every image's output tiles, image by image. Block b takes tiles b, b + gridDim.x,
  // ...: with more tiles than blocks, the next tile's patch loads while this one's products run.
  const kiln_i32 tiles_per_image = kiln_tiles_per_image(a, KILN_BH, KILN_BW);
  const kiln_i32 tiles = tiles_per_image * a.n;
  const kiln_i32 stride = (kiln_i32)gridDim.x;
  const KilnPatch shape = kiln_tile_patch_at(a, 0, KILN_BH, KILN_BW);  // rows and cols
  const kiln_i32 cols = shape.cols;
  const kiln_i32 c0 = (kiln_i32)blockIdx.z * KILN_CB;  // the slab's first channel, in and out
  const kiln_i32 taps = a.fil_h * a.fil_w;
  // Shared memory: the patch buffers (two when a block has several tiles), 128-byte aligned
  // (kiln_at_granule relies on it; the host adds the slack), then the filter.
  const kiln_u32 smem0 = kiln_smem(kiln_dyn_smem);
  // Each patch buffer is whole 128-byte lines.
  const kiln_u32 patch_bytes = ((kiln_u32)(shape.rows * cols) * KILN_RG * 16 + 127u) & ~127u;
  const kiln_u32 patches[2] = {(smem0 + 127u) & ~127u, ((smem0 + 127u) & ~127u) + patch_bytes};
  const kiln_u32 filter = patches[0] + (stride < tiles ? 2u : 1u) * patch_bytes;

  // The filter: row (tap, output channel in the slab), zeros past K. It joins the first
  // patch's copy group.
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
    *reinterpret_cast<uint4*>(kiln_dyn_smem + (filter - smem0) + kiln_filter_granule((kiln_u32)i, 0)) =
        row;
  }
#endif
  kiln_i32 tile = (kiln_i32)blockIdx.x;
  if (tile < tiles) kiln_stage_patch(patches[0], x, a, tile, tiles_per_image, c0);
  if (tile + stride < tiles) kiln_stage_patch(patches[1], x, a, tile + stride, tiles_per_image, c0);

  const kiln_i32 lane = (kiln_i32)(threadIdx.x & 31), warp = (kiln_i32)(threadIdx.x >> 5);
  // The patch pixel this lane's ldmatrix row starts at, per m16 group, for tap (0, 0): the
  // same in every tile.
  kiln_u32 pix0[KILN_GPW];
#pragma unroll
  for (int q = 0; q < KILN_GPW; ++q) {
    pix0[q] = kiln_m16_patch_pixel(a, shape, warp * KILN_GPW + q,
                                   (lane & 7) + ((lane >> 3) & 1) * 8, KILN_BW);
  }
  // With KILN_GW = 4 a lane's columns (2 * (lane % 4) and the next) belong to the even group
  // (lane % 4 < 2) or the odd one, whose accumulator it keeps.
#if KILN_PAR == 2
  const int h = (lane & 3) >= 2 ? 1 : 0;
#else
  const int h = 0;
#endif
  const kiln_u32 next_row = (kiln_u32)(a.dil_h * cols - (a.fil_w - 1) * a.dil_w);

  for (kiln_i32 i = 0; tile < tiles; ++i, tile += stride) {
    const kiln_u32 patch = patches[i & 1];
    // This tile's copy group is complete; the next tile's may still be in flight.
    if (tile + stride < tiles) {
      asm volatile("cp.async.wait_group 1;" ::: "memory");
    } else {
      asm volatile("cp.async.wait_group 0;" ::: "memory");
    }
    __syncthreads();

    float acc[KILN_GPW][KILN_NT][KILN_PAR][4];
#pragma unroll
    for (int q = 0; q < KILN_GPW; ++q)
#pragma unroll
      for (int t = 0; t < KILN_NT; ++t)
#pragma unroll
        for (int p = 0; p < KILN_PAR; ++p)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[q][t][p][e] = 0.0f;

    // Taps in row-major order; `shift` is the current tap's patch offset, advanced without
    // dividing the tap index by the filter's width.
    kiln_u32 shift = 0;
    kiln_i32 s = 0;
    auto advance = [&]() {
      if (++s == a.fil_w) {
        s = 0;
        shift += next_row;
      } else {
        shift += (kiln_u32)a.dil_w;
      }
    };
    kiln_i32 tap = 0;
#if KILN_FG % 2 == 1
    // The odd granule's k8 products, two taps in one k16 product: half the products and loads.
    for (; tap + 1 < taps; tap += 2) {
      const kiln_u32 shift_a = shift;
      advance();
      const kiln_u32 shift_b = shift;
      advance();
      const kiln_u32 row_a = (kiln_u32)(tap * KILN_CB), row_b = row_a + KILN_CB;
      kiln_tap_k16(acc, pix0, patch, filter, shift_a, row_a, lane);
      kiln_tap_k16(acc, pix0, patch, filter, shift_b, row_b, lane);
      kiln_taps_k8<false>(acc, pix0, patch, filter, shift_a, shift_b, row_a, row_b, lane);
    }
#endif
    for (; tap < taps; ++tap) {
      const kiln_u32 row = (kiln_u32)(tap * KILN_CB);
      kiln_tap_k16(acc, pix0, patch, filter, shift, row, lane);
      kiln_taps_k8<true>(acc, pix0, patch, filter, shift, shift, row, row, lane);
      advance();
    }

    // Every warp is done with this buffer: the tile after next loads into it while this
    // tile's outputs are stored.
    __syncthreads();
    if (tile + 2 * stride < tiles) {
      kiln_stage_patch(patch, x, a, tile + 2 * stride, tiles_per_image, c0);
    }
    const kiln_i32 n = tile / tiles_per_image;
    const KilnPatch pt = kiln_tile_patch_at(a, tile - n * tiles_per_image, KILN_BH, KILN_BW);
    kiln_m16_store<KILN_GPW, KILN_NT, KILN_BW>(
        y, a, pt, n, warp * KILN_GPW, c0, lane, ep,
        [&](int q, int t, int e) { return h ? acc[q][t][KILN_PAR - 1][e] : acc[q][t][0][e]; });
  }
}
