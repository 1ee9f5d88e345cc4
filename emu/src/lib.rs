//! `kiln-emu`: an instruction-level model of AMD GPUs for checking kiln's AMD code objects
//! without AMD hardware: the code-object reader ([`code_object`], [`metadata`]), the decoder
//! of instruction boundaries and formats ([`decode`]), the opcode names of gfx9
//! ([`opcodes`]) and of gfx10/gfx11 ([`opcodes_rdna`]), and every family's operands
//! ([`operands`]), all checked against LLVM's tools on every embedded AMD object (`tests/llvm.rs`); and the executor for gfx9, gfx10 and gfx11 ([`program`], [`wave`],
//! [`memory`], [`launch`]) behind kiln's driver interface ([`driver`]), on which kiln's
//! selftest runs every AMD solver against the CPU reference (`tests/conformance.rs`).

pub mod code_object;
pub mod conformance;
pub mod decode;
pub mod driver;
pub mod isa;
pub mod launch;
pub mod memory;
pub mod metadata;
pub mod opcodes;
pub mod opcodes_rdna;
pub mod operands;
pub mod program;
pub mod wave;

/// What went wrong, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The code object is malformed or not an AMDGPU object.
    CodeObject(String),
    /// An instruction could not be decoded (names the pc and the dword).
    Decode(String),
    /// A kernel touched memory it does not own (names the kernel, pc and address).
    Fault(String),
    /// A kernel ran an instruction or operand the executor does not model (names them).
    Unsupported(String),
    /// A launch was malformed or ran past its instruction limit.
    Launch(String),
    /// Device memory is exhausted.
    OutOfMemory(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::CodeObject(why) => write!(f, "code object: {why}"),
            Error::Decode(why) => write!(f, "decode: {why}"),
            Error::Fault(why) => write!(f, "memory fault: {why}"),
            Error::Unsupported(why) => write!(f, "not modelled: {why}"),
            Error::Launch(why) => write!(f, "launch: {why}"),
            Error::OutOfMemory(why) => write!(f, "out of device memory: {why}"),
        }
    }
}

impl std::error::Error for Error {}
