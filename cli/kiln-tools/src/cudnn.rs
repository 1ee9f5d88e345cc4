//! cuDNN as the yardstick for `kiln-tools bench`: cudarc's cuDNN bindings with libcudnn loaded at run
//! time (never linked, so the kiln binary still runs where cuDNN is absent). Only what the
//! benchmark needs: a forward convolution of a kiln problem set up as PyTorch sets it up
//! (tensor-op math for FP16/BF16; FP32 with FMA math, or default math when TF32 is allowed),
//! its algorithm candidates from cuDNN's own exhaustive search
//! (`cudnnFindConvolutionForwardAlgorithmEx`, what `cudnn.benchmark = True` does), run on
//! device buffers that kiln allocated, on a stream the caller names.

use std::ffi::{c_void, CStr};

use cudarc::cudnn::sys;
use kiln::{ConvProblem, DataType};

/// A cuDNN failure: the call and cuDNN's own words.
#[derive(Debug)]
pub struct CudnnError {
    /// The cuDNN function.
    pub call: &'static str,
    /// What cuDNN said.
    pub message: String,
}

impl std::fmt::Display for CudnnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.call, self.message)
    }
}

impl std::error::Error for CudnnError {}

fn check(call: &'static str, status: sys::cudnnStatus_t) -> Result<(), CudnnError> {
    if status == sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS {
        return Ok(());
    }
    // SAFETY: cudnnGetErrorString returns a static NUL-terminated string.
    let text = unsafe {
        let p = sys::cudnnGetErrorString(status);
        if p.is_null() {
            String::new()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    Err(CudnnError {
        call,
        message: format!("{status:?} {text}"),
    })
}

/// An open cuDNN handle on the current CUDA context.
pub struct Cudnn {
    handle: sys::cudnnHandle_t,
    /// `cudnnGetVersion()`, e.g. 91000 for 9.10.0.
    pub version: usize,
}

impl Cudnn {
    /// Loads libcudnn (from the loader's path, e.g. `LD_LIBRARY_PATH`) and creates a handle.
    /// Call after kiln's context made the device's primary context current.
    pub fn open() -> Result<Cudnn, CudnnError> {
        // SAFETY: only tries to dlopen the library (cudarc panics later if it is absent).
        if !unsafe { sys::is_culib_present() } {
            return Err(CudnnError {
                call: "dlopen",
                message: "libcudnn.so.9 not found; add its directory to LD_LIBRARY_PATH".into(),
            });
        }
        let mut handle = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        check("cudnnCreate", unsafe { sys::cudnnCreate(&mut handle) })?;
        // SAFETY: plain query.
        let version = unsafe { sys::cudnnGetVersion() };
        Ok(Cudnn { handle, version })
    }
}

impl Drop for Cudnn {
    fn drop(&mut self) {
        // SAFETY: the handle came from cudnnCreate and is destroyed once.
        unsafe { sys::cudnnDestroy(self.handle) };
    }
}

/// Which math cuDNN may use (PyTorch's settings).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CudnnMath {
    /// FP32 with FMA math: no TF32 (`allow_tf32 = False`).
    Fma,
    /// FP32 with default math: TF32 tensor cores allowed (`allow_tf32 = True`).
    AllowTf32,
    /// FP16 / BF16 on tensor cores.
    TensorOp,
}

/// One algorithm cuDNN's search returned, with the math type it ran with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CudnnAlgo {
    algo: sys::cudnnConvolutionFwdAlgo_t,
    math: sys::cudnnMathType_t,
    /// Workspace bytes it needs.
    pub workspace: usize,
}

impl CudnnAlgo {
    /// The algorithm and math type, for reports (`IMPLICIT_PRECOMP_GEMM, tensor op`).
    pub fn describe(&self) -> String {
        let algo = format!("{:?}", self.algo);
        let math = match self.math {
            sys::cudnnMathType_t::CUDNN_TENSOR_OP_MATH => "tensor op",
            sys::cudnnMathType_t::CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION => "tensor op + conversion",
            sys::cudnnMathType_t::CUDNN_FMA_MATH => "FMA",
            _ => "default",
        };
        format!(
            "{}, {math}",
            algo.trim_start_matches("CUDNN_CONVOLUTION_FWD_ALGO_")
        )
    }
}

/// Descriptors of one forward convolution and the algorithm it runs.
pub struct CudnnConv<'a> {
    cudnn: &'a Cudnn,
    x: sys::cudnnTensorDescriptor_t,
    w: sys::cudnnFilterDescriptor_t,
    y: sys::cudnnTensorDescriptor_t,
    conv: sys::cudnnConvolutionDescriptor_t,
    /// The algorithm [`CudnnConv::run`] uses (the search's fastest until [`CudnnConv::set`]).
    pub chosen: CudnnAlgo,
}

impl Drop for CudnnConv<'_> {
    fn drop(&mut self) {
        // SAFETY: each descriptor was created in `new` (null ones are skipped).
        unsafe {
            if !self.x.is_null() {
                sys::cudnnDestroyTensorDescriptor(self.x);
            }
            if !self.y.is_null() {
                sys::cudnnDestroyTensorDescriptor(self.y);
            }
            if !self.w.is_null() {
                sys::cudnnDestroyFilterDescriptor(self.w);
            }
            if !self.conv.is_null() {
                sys::cudnnDestroyConvolutionDescriptor(self.conv);
            }
        }
    }
}

fn int(v: u32) -> i32 {
    v as i32 // kiln bounds every dimension far below i32::MAX (MAX_DIM)
}

impl<'a> CudnnConv<'a> {
    /// Describes `p` (2-D; FP32, FP16 or BF16) with `math`, and runs one search on the given
    /// buffers, choosing its fastest algorithm that fits in `workspace_limit` bytes.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cudnn: &'a Cudnn,
        p: &ConvProblem,
        math: CudnnMath,
        x: u64,
        w: u64,
        y: u64,
        workspace: u64,
        workspace_limit: usize,
    ) -> Result<CudnnConv<'a>, CudnnError> {
        let unsupported = |message: &str| CudnnError {
            call: "kiln-tools bench",
            message: format!("{}: {message}", p.find_db_key()),
        };
        if p.spatial_dims() != 2 {
            return Err(unsupported("only 2-D problems are compared with cuDNN"));
        }
        let dtype = match p.data_types()[0] {
            DataType::Fp32 => sys::cudnnDataType_t::CUDNN_DATA_FLOAT,
            DataType::Fp16 => sys::cudnnDataType_t::CUDNN_DATA_HALF,
            DataType::Bf16 => sys::cudnnDataType_t::CUDNN_DATA_BFLOAT16,
            _ => {
                return Err(unsupported(
                    "only FP32, FP16 and BF16 are compared with cuDNN",
                ))
            }
        };
        let math = match math {
            CudnnMath::Fma => sys::cudnnMathType_t::CUDNN_FMA_MATH,
            CudnnMath::AllowTf32 => sys::cudnnMathType_t::CUDNN_DEFAULT_MATH,
            CudnnMath::TensorOp => sys::cudnnMathType_t::CUDNN_TENSOR_OP_MATH,
        };
        let format = if p.layouts()[0].channels_last() {
            sys::cudnnTensorFormat_t::CUDNN_TENSOR_NHWC
        } else {
            sys::cudnnTensorFormat_t::CUDNN_TENSOR_NCHW
        };
        let mut d = CudnnConv {
            cudnn,
            x: std::ptr::null_mut(),
            w: std::ptr::null_mut(),
            y: std::ptr::null_mut(),
            conv: std::ptr::null_mut(),
            chosen: CudnnAlgo {
                algo: sys::cudnnConvolutionFwdAlgo_t::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                math,
                workspace: 0,
            },
        };
        let [_, ih, iw] = p.input();
        let [_, oh, ow] = p.output();
        let [_, fh, fw] = p.filter();
        let [_, ph, pw] = p.pad();
        let [_, sh, sw] = p.stride();
        let [_, dh, dw] = p.dilation();
        // SAFETY: out-pointers are valid; descriptors are owned by `d` and freed in its Drop.
        unsafe {
            check(
                "cudnnCreateTensorDescriptor",
                sys::cudnnCreateTensorDescriptor(&mut d.x),
            )?;
            check(
                "cudnnCreateTensorDescriptor",
                sys::cudnnCreateTensorDescriptor(&mut d.y),
            )?;
            check(
                "cudnnCreateFilterDescriptor",
                sys::cudnnCreateFilterDescriptor(&mut d.w),
            )?;
            check(
                "cudnnCreateConvolutionDescriptor",
                sys::cudnnCreateConvolutionDescriptor(&mut d.conv),
            )?;
            check(
                "cudnnSetTensor4dDescriptor(x)",
                sys::cudnnSetTensor4dDescriptor(
                    d.x,
                    format,
                    dtype,
                    int(p.n()),
                    int(p.c()),
                    int(ih),
                    int(iw),
                ),
            )?;
            check(
                "cudnnSetTensor4dDescriptor(y)",
                sys::cudnnSetTensor4dDescriptor(
                    d.y,
                    format,
                    dtype,
                    int(p.n()),
                    int(p.k()),
                    int(oh),
                    int(ow),
                ),
            )?;
            check(
                "cudnnSetFilter4dDescriptor",
                sys::cudnnSetFilter4dDescriptor(
                    d.w,
                    dtype,
                    format,
                    int(p.k()),
                    int(p.c() / p.groups()),
                    int(fh),
                    int(fw),
                ),
            )?;
            check(
                "cudnnSetConvolution2dDescriptor",
                sys::cudnnSetConvolution2dDescriptor(
                    d.conv,
                    int(ph),
                    int(pw),
                    int(sh),
                    int(sw),
                    int(dh),
                    int(dw),
                    sys::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION,
                    sys::cudnnDataType_t::CUDNN_DATA_FLOAT,
                ),
            )?;
            check(
                "cudnnSetConvolutionGroupCount",
                sys::cudnnSetConvolutionGroupCount(d.conv, int(p.groups())),
            )?;
            check(
                "cudnnSetConvolutionMathType",
                sys::cudnnSetConvolutionMathType(d.conv, math),
            )?;
        }
        d.chosen = d.search(x, w, y, workspace, workspace_limit)?[0];
        d.set(d.chosen)?;
        Ok(d)
    }

    /// One run of cuDNN's exhaustive search on the given buffers: every algorithm that ran
    /// within `workspace_limit` bytes, fastest first by cuDNN's own timing (single calls,
    /// which vary between runs: callers time the candidates themselves).
    pub fn search(
        &self,
        x: u64,
        w: u64,
        y: u64,
        workspace: u64,
        workspace_limit: usize,
    ) -> Result<Vec<CudnnAlgo>, CudnnError> {
        const ALGOS: usize = 16;
        // The search runs on the default stream: the stream of an earlier `run` may be gone.
        // SAFETY: the handle is live; the null stream always exists.
        check("cudnnSetStream", unsafe {
            sys::cudnnSetStream(self.cudnn.handle, std::ptr::null_mut())
        })?;
        // SAFETY: a plain C struct of enums, floats and integers; zero is a valid bit pattern
        // for every field (each enum has a zero variant).
        let mut perf: [sys::cudnnConvolutionFwdAlgoPerf_t; ALGOS] = unsafe { std::mem::zeroed() };
        let mut returned = 0;
        // SAFETY: buffers are device allocations of at least the problem's sizes (checked by
        // the caller); `perf` holds ALGOS entries, as passed.
        check("cudnnFindConvolutionForwardAlgorithmEx", unsafe {
            sys::cudnnFindConvolutionForwardAlgorithmEx(
                self.cudnn.handle,
                self.x,
                x as *const c_void,
                self.w,
                w as *const c_void,
                self.conv,
                self.y,
                y as *mut c_void,
                ALGOS as i32,
                &mut returned,
                perf.as_mut_ptr(),
                workspace as *mut c_void,
                workspace_limit,
            )
        })?;
        let ran: Vec<CudnnAlgo> = perf[..returned.clamp(0, ALGOS as i32) as usize]
            .iter()
            .filter(|r| {
                r.status == sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS && r.memory <= workspace_limit
            })
            .map(|r| CudnnAlgo {
                algo: r.algo,
                math: r.mathType,
                workspace: r.memory,
            })
            .collect();
        if ran.is_empty() {
            return Err(CudnnError {
                call: "kiln-tools bench",
                message: "no cuDNN algorithm ran within the workspace limit".into(),
            });
        }
        Ok(ran)
    }

    /// Runs `algo` (with its math type) from now on, as PyTorch does with a search's result.
    pub fn set(&mut self, algo: CudnnAlgo) -> Result<(), CudnnError> {
        // SAFETY: the descriptor is live.
        check("cudnnSetConvolutionMathType", unsafe {
            sys::cudnnSetConvolutionMathType(self.conv, algo.math)
        })?;
        self.chosen = algo;
        Ok(())
    }

    /// Enqueues `y = conv(x, w)` on `stream` (a raw `CUstream`; 0 for the default stream).
    pub fn run(
        &self,
        stream: u64,
        x: u64,
        w: u64,
        y: u64,
        workspace: u64,
    ) -> Result<(), CudnnError> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        // SAFETY: the handle is live; the stream belongs to the handle's device (the caller's).
        check("cudnnSetStream", unsafe {
            sys::cudnnSetStream(self.cudnn.handle, stream as sys::cudaStream_t)
        })?;
        // SAFETY: descriptors are live; buffers are device allocations sized by the caller;
        // alpha/beta are f32 as cuDNN requires for FLOAT and HALF problems.
        check("cudnnConvolutionForward", unsafe {
            sys::cudnnConvolutionForward(
                self.cudnn.handle,
                (&alpha as *const f32).cast(),
                self.x,
                x as *const c_void,
                self.w,
                w as *const c_void,
                self.conv,
                self.chosen.algo,
                workspace as *mut c_void,
                self.chosen.workspace,
                (&beta as *const f32).cast(),
                self.y,
                y as *mut c_void,
            )
        })
    }
}
