// nv_shared.h: what kiln's own NVIDIA kernels share (nv/mma_narrow.cu, nv/mma_grouped.cu,
// nv/wgmma_conv.cu): shared-memory addresses, cp.async's zero-filling 16-byte copy, programmatic
// dependent launch, and the direct kernels' output tile and the input patch it reads.
#pragma once
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

// Programmatic dependent launch (kiln launches sm_90 kernels with it). kiln_pdl_wait: wait
// until the previous kernel in the stream has finished and its writes are visible; every entry
// calls it before it touches global memory. kiln_pdl_release: let the next kernel be scheduled
// once every block of this one has released it (or ended); where a block calls it changes only
// how much of the next kernel's launch overlaps this one, never what it reads, since the next
// kernel waits too. Both are no-ops for a launch that did not ask for it, and are left out
// below sm_90.
static __device__ KILN_INLINE void kiln_pdl_wait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
static __device__ KILN_INLINE void kiln_pdl_release() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
// Both at entry: short kernels release the next one at once.
static __device__ KILN_INLINE void kiln_pdl_enter() {
  kiln_pdl_release();
  kiln_pdl_wait();
}

// A direct kernel's block: a tile_h x tile_w tile of one image's output pixels (blockIdx.x over
// the image's tiles, row-major), and the input patch it reads: first input row and column (the
// padding makes them negative at the top and left edges), rows and columns.
struct KilnPatch {
  kiln_i32 oh0, ow0, ih0, iw0, rows, cols;
};
static __device__ KILN_INLINE KilnPatch kiln_tile_patch(const KilnConvArgs& a, kiln_i32 tile_h,
                                                        kiln_i32 tile_w) {
  const kiln_i32 tiles_w = (a.out_w + tile_w - 1) / tile_w;
  KilnPatch pt;
  pt.oh0 = (kiln_i32)(blockIdx.x / tiles_w) * tile_h;
  pt.ow0 = (kiln_i32)(blockIdx.x % tiles_w) * tile_w;
  pt.ih0 = pt.oh0 * a.stride_h - a.pad_h;
  pt.iw0 = pt.ow0 * a.stride_w - a.pad_w;
  pt.rows = (tile_h - 1) * a.stride_h + (a.fil_h - 1) * a.dil_h + 1;
  pt.cols = (tile_w - 1) * a.stride_w + (a.fil_w - 1) * a.dil_w + 1;
  return pt;
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
