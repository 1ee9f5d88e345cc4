// nv_shared.h: what kiln's own NVIDIA kernels share (nv/mma_expand.cu, nv/mma_narrow.cu,
// nv/mma_grouped.cu, nv/wgmma_conv.cu): shared-memory addresses, cp.async's zero-filling 16-byte
// copy, the direct kernels' output tile and the input patch it reads, the mma.sync products and
// ldmatrix loads, and stores of channel pairs.
#pragma once
#include "epilogue.h"
#include "kiln_gpu.h"

// The 32-bit shared-memory address of a generic pointer into shared memory.
static __device__ KILN_INLINE kiln_u32 kiln_smem(const void* p) {
  kiln_u32 r;
  asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
  return r;
}

// 16 bytes global -> shared, zero-filled when `valid` is false (src must still be a mapped
// address: the caller passes the tensor's base then).
static __device__ KILN_INLINE void kiln_cp16(kiln_u32 dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0));
}

// A direct kernel's block: a tile_h x tile_w tile of one image's output pixels (blockIdx.x, or
// `tile`, over the image's tiles, row-major), and the input patch it reads: first input row and
// column (the padding makes them negative at the top and left edges), rows and columns.
struct KilnPatch {
  kiln_i32 oh0, ow0, ih0, iw0, rows, cols;
};
static __device__ KILN_INLINE KilnPatch kiln_tile_patch_at(const KilnConvArgs& a, kiln_i32 tile,
                                                           kiln_i32 tile_h, kiln_i32 tile_w) {
  const kiln_i32 tiles_w = (a.out_w + tile_w - 1) / tile_w;
  KilnPatch pt;
  pt.oh0 = (tile / tiles_w) * tile_h;
  pt.ow0 = (tile % tiles_w) * tile_w;
  pt.ih0 = pt.oh0 * a.stride_h - a.pad_h;
  pt.iw0 = pt.ow0 * a.stride_w - a.pad_w;
  pt.rows = (tile_h - 1) * a.stride_h + (a.fil_h - 1) * a.dil_h + 1;
  pt.cols = (tile_w - 1) * a.stride_w + (a.fil_w - 1) * a.dil_w + 1;
  return pt;
}
static __device__ KILN_INLINE KilnPatch kiln_tile_patch(const KilnConvArgs& a, kiln_i32 tile_h,
                                                        kiln_i32 tile_w) {
  return kiln_tile_patch_at(a, (kiln_i32)blockIdx.x, tile_h, tile_w);
}

// Output tiles of one image.
static __device__ KILN_INLINE kiln_i32 kiln_tiles_per_image(const KilnConvArgs& a,
                                                            kiln_i32 tile_h, kiln_i32 tile_w) {
  return ((a.out_h + tile_h - 1) / tile_h) * ((a.out_w + tile_w - 1) / tile_w);
}

// The tile is cut into m16 groups of 16 output pixels of one row, tile_w / 16 to a row. The
// patch pixel where row `row` (0-15) of m16 group `group` reads filter tap (0, 0): ldmatrix's
// per-lane row address, rows 0-7 from lanes 0-7 (and 16-23), 8-15 from lanes 8-15 (and 24-31)
// for row = (lane & 7) + ((lane >> 3) & 1) * 8.
static __device__ KILN_INLINE kiln_u32 kiln_m16_patch_pixel(const KilnConvArgs& a,
                                                            const KilnPatch& pt, kiln_i32 group,
                                                            kiln_i32 row, kiln_i32 tile_w) {
  const kiln_i32 orow = group / (tile_w / 16);
  const kiln_i32 ocol = (group % (tile_w / 16)) * 16 + row;
  return (kiln_u32)(orow * a.stride_h * pt.cols + ocol * a.stride_w);
}

// The output pixel of row `row` of m16 group `group` in image n (its index among the batch's
// N*P*Q pixels), or -1 where the tile passes the image's edge.
static __device__ KILN_INLINE kiln_i64 kiln_m16_output_pixel(const KilnConvArgs& a,
                                                             const KilnPatch& pt, kiln_i32 n,
                                                             kiln_i32 group, kiln_i32 row,
                                                             kiln_i32 tile_w) {
  const kiln_i32 oh = pt.oh0 + group / (tile_w / 16);
  const kiln_i32 ow = pt.ow0 + (group % (tile_w / 16)) * 16 + row;
  if (oh >= a.out_h || ow >= a.out_w) return -1;
  return ((kiln_i64)n * a.out_h + oh) * a.out_w + ow;
}

#if defined(KILN_DTYPE_FP16) || defined(KILN_DTYPE_BF16)
// The mma.sync kernels' products (nv/mma_expand.cu, nv/mma_narrow.cu, nv/mma_grouped.cu):
// acc += A (16 x k) * B (k x 8), FP32 sums of the element type's products, A and B as fragments
// of 32-bit words (m16n8k16: four of A, two of B; m16n8k8: two and one).
#if defined(KILN_DTYPE_FP16)
  #define KILN_MMA16 "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
  #define KILN_MMA8 "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32"
#else
  #define KILN_MMA16 "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
  #define KILN_MMA8 "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32"
#endif
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

// ldmatrix: one, two or four 8 x 8 matrices of 16-bit elements from shared memory, each lane
// naming one row's 16-byte address, into fragment words.
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

// Two adjacent channels of a 16-bit output in one 32-bit word: the hardware's round-to-nearest
// conversion of both sums in one instruction (sm_80+), one store instead of two.
static __device__ KILN_INLINE kiln_u32 kiln_pack_pair(float lo, float hi) {
  kiln_u32 r;
#if defined(KILN_DTYPE_FP16)
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#endif
  return r;
}

// The products of two pairs of 16-bit elements, each rounded once to the element type (BF16
// pairs: sm_90+).
static __device__ KILN_INLINE kiln_u32 kiln_mul_pair(kiln_u32 a, kiln_u32 b) {
  kiln_u32 r;
#if defined(KILN_DTYPE_FP16)
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
#else
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
#endif
  return r;
}

// Whether channel pairs (k even) of y, and of the residual z, are aligned 32-bit words: both
// tensors 4-byte aligned and their pixel strides even. A channel slice of a concatenation may
// not be; the caller then stores one element at a time.
static __device__ KILN_INLINE bool kiln_pairs_aligned(const kiln_t* y, const KilnEpilogue& e) {
  return (((kiln_u64)y | e.z) & 3u) == 0 && ((e.y_ld | e.z_ld) & 1) == 0;
}

// Channels k and k + 1 (k even) of channels-last pixel p: the epilogue with the channels'
// scale and bias loaded by the caller, stored as one word (kiln_pairs_aligned must hold).
static __device__ KILN_INLINE void kiln_store_nhwc_pair(kiln_t* y, kiln_i64 p, kiln_i32 k,
                                                        float acc0, float acc1, float2 scale,
                                                        float2 bias, const KilnEpilogue& e,
                                                        const KilnAct& act) {
  float z0 = 0.0f, z1 = 0.0f;
  if (e.z) {
    const kiln_u32 w = __ldg(reinterpret_cast<const unsigned int*>((const kiln_t*)e.z + p * e.z_ld + k));
    const kiln_t lo = (kiln_t)(w & 0xffffu), hi = (kiln_t)(w >> 16);
    z0 = kiln_load(&lo, 0);
    z1 = kiln_load(&hi, 0);
  }
  const float v0 = kiln_epilogue_of(acc0, scale.x, bias.x, z0, e, act);
  const float v1 = kiln_epilogue_of(acc1, scale.y, bias.y, z1, e, act);
  *reinterpret_cast<kiln_u32*>(y + p * e.y_ld + k) = kiln_pack_pair(v0, v1);
}

// One channel of channels-last pixel p through kiln_epilogue_of, for the pair store's fallback
// (an unaligned slice, or an odd K's last channel).
static __device__ KILN_INLINE float kiln_epilogue_loading(float acc, kiln_i32 k, kiln_i64 zi,
                                                          const KilnEpilogue& e) {
  return kiln_epilogue_of(acc, e.scale ? kiln_ep_f32(e.scale, k) : 1.0f,
                          e.bias ? kiln_ep_f32(e.bias, k) : 0.0f, e.z ? kiln_ep_z(e.z, zi) : 0.0f,
                          e, kiln_act_params(e.act, e.act_a));
}
static __device__ KILN_INLINE void kiln_store_nhwc_each(kiln_t* y, kiln_i64 p, kiln_i32 k,
                                                        float acc, const KilnEpilogue& e) {
  kiln_store(y, p * e.y_ld + k, kiln_epilogue_loading(acc, k, p * e.z_ld + k, e));
}

// Channels k and k + 1's scale and bias (1 and 0 where the epilogue has none, or past K).
static __device__ KILN_INLINE void kiln_pair_scale_bias(const KilnEpilogue& e, kiln_i32 k,
                                                        kiln_i32 channels, float2& scale,
                                                        float2& bias) {
  scale = make_float2(1.0f, 1.0f);
  bias = make_float2(0.0f, 0.0f);
  if (e.scale && k < channels) scale.x = kiln_ep_f32(e.scale, k);
  if (e.scale && k + 1 < channels) scale.y = kiln_ep_f32(e.scale, k + 1);
  if (e.bias && k < channels) bias.x = kiln_ep_f32(e.bias, k);
  if (e.bias && k + 1 < channels) bias.y = kiln_ep_f32(e.bias, k + 1);
}

// The epilogue of a warp's mma.sync accumulators (m16n8 tiles, the f32 C fragment layout) into
// channels-last y: GPW m16 groups of the block's tile from `first_group` (kiln_m16_output_pixel's
// order), NT n8 tiles of output channels from k0. acc(q, t, e) is element e of group q's tile t:
// pixel (lane / 4) + 8 * (e / 2) of the group, channel k0 + 8 * t + 2 * (lane % 4) + e % 2. A
// lane's two channels of a pixel leave as one word where they can; each channel's scale and
// bias is read once for all the lane's pixels. (Channels outside, pixels inside: walking
// pixels outside instead held fewer registers but ran the narrow-group kernel 10-35% slower on
// its large layers, benches/runs/2026-11-28-h200-grouped-pipeline/ section G.)
template <int GPW, int NT, int TILE_W, typename Acc>
static __device__ KILN_INLINE void kiln_m16_store(kiln_t* y, const KilnConvArgs& a,
                                                  const KilnPatch& pt, kiln_i32 n,
                                                  kiln_i32 first_group, kiln_i32 k0,
                                                  kiln_i32 lane, const KilnEpilogue& ep,
                                                  const Acc& acc) {
  kiln_i64 pixel[GPW][2];
#pragma unroll
  for (int q = 0; q < GPW; ++q)
#pragma unroll
    for (int half = 0; half < 2; ++half)
      pixel[q][half] =
          kiln_m16_output_pixel(a, pt, n, first_group + q, (lane >> 2) + 8 * half, TILE_W);
  const bool aligned = kiln_pairs_aligned(y, ep);
  const KilnAct act = kiln_act_params(ep.act, ep.act_a);
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    if (k0 + 8 * t >= a.k) break;  // the same for the whole warp
    const kiln_i32 k = k0 + 8 * t + 2 * (lane & 3);
    const bool pair = aligned && k + 1 < a.k;
    float2 scale, bias;
    kiln_pair_scale_bias(ep, k, a.k, scale, bias);
#pragma unroll
    for (int q = 0; q < GPW; ++q) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const kiln_i64 p = pixel[q][half];
        if (p < 0) continue;
        const float v0 = acc(q, t, 2 * half), v1 = acc(q, t, 2 * half + 1);
        if (pair) {
          kiln_store_nhwc_pair(y, p, k, v0, v1, scale, bias, ep, act);
        } else {
          if (k < a.k) kiln_store_nhwc_each(y, p, k, v0, ep);
          if (k + 1 < a.k) kiln_store_nhwc_each(y, p, k + 1, v1, ep);
        }
      }
    }
  }
}
#endif
