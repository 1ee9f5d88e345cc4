//! `kiln-emu`: an instruction-level model of AMD GPUs for checking kiln's AMD code objects
//! without AMD hardware. So far: the code-object reader ([`code_object`]), the decoder of
//! instruction boundaries and formats ([`decode`]), and gfx9's opcode names ([`opcodes`]) and
//! operands ([`operands`]), all checked against LLVM's tools on every embedded AMD object
//! (`tests/llvm.rs`).

pub mod code_object;
pub mod decode;
pub mod opcodes;
pub mod operands;

/// What went wrong, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The code object is malformed or not an AMDGPU object.
    CodeObject(String),
    /// An instruction could not be decoded (names the pc and the dword).
    Decode(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::CodeObject(why) => write!(f, "code object: {why}"),
            Error::Decode(why) => write!(f, "decode: {why}"),
        }
    }
}

impl std::error::Error for Error {}
