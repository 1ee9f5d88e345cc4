// The contract between kiln's invoker (src/invoker.rs) and a library kernel's code object
// (CUTLASS's, kernels/nv/cutlass_*.cu): the builder's report and the caller's buffers. The
// Rust mirrors are kiln_format::abi::BuilderInfo and Pointers, checked against this header.
#pragma once
#include "kiln_gpu.h"

// What the builder entry (kiln_cutlass_params) reports: 17 ints, read by kiln's BuilderInfo.
struct KilnBuilderInfo {
  kiln_i32 status;        // 0: CUTLASS can run the problem; otherwise cutlass::Status
  kiln_i32 params_bytes;  // sizeof(Params)
  kiln_i32 threads;       // threads per block of kiln_cutlass_fprop
  kiln_i32 shared_bytes;  // dynamic shared memory per block
  kiln_i32 grid[3];       // blocks in x, y, z
  kiln_i32 offset_a;      // byte offsets of the pointers to x, w, y (twice: the library's C and
  kiln_i32 offset_b;      // D operands) and the split-K semaphores inside Params
  kiln_i32 offset_c;
  kiln_i32 offset_d;
  kiln_i32 offset_semaphore;
  kiln_i32 semaphore_ints;  // ints of zeroed workspace serial split-K needs (0 without split-K)
  kiln_i32 a_in_workspace;  // >= 0: x's pointer is workspace + this (a copy of x); -1: x itself
  kiln_i32 b_in_workspace;  // >= 0: w's pointer is workspace + this (a copy of w); -1: w itself
  kiln_i32 semaphore_in_workspace;  // the semaphores' byte offset in the workspace
  kiln_i32 y_in_workspace;  // >= 0: y's pointers are workspace + this (NHWC y); -1: y itself
};

// The caller's buffers, passed beside Params to every launched entry.
struct KilnPointers {
  const void* x;
  const void* w;
  void* y;
  void* workspace;
};

// The launch a builder reports for its library kernel `Kernel` with parameter block `Params`:
// the status, the block's size, threads and shared memory per block, and the grid.
template <typename Kernel, typename Params>
static __device__ void kiln_report_launch(KilnBuilderInfo* info, kiln_i32 status, dim3 grid) {
  info->status = status;
  info->params_bytes = (kiln_i32)sizeof(Params);
  info->threads = Kernel::kThreadCount;
  info->shared_bytes = (kiln_i32)sizeof(typename Kernel::SharedStorage);
  info->grid[0] = (kiln_i32)grid.x;
  info->grid[1] = (kiln_i32)grid.y;
  info->grid[2] = (kiln_i32)grid.z;
}

// Byte offset of `field` inside the parameter block at `base`.
template <typename Block>
static __device__ kiln_i32 kiln_offset(const Block* base, const void* field) {
  return (kiln_i32)((const char*)field - (const char*)base);
}

// Workspace copies start at 256-byte boundaries.
static __device__ kiln_i64 kiln_round256(kiln_i64 v) { return (v + 255) & ~(kiln_i64)255; }
