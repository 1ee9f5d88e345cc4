//! The code object's metadata note (`NT_AMDGPU_METADATA`, owner `AMDGPU`): a MessagePack map
//! whose `amdhsa.kernels` list gives each kernel's arguments (offset, size, kind) and its
//! kernarg segment size. A launch packs the kernel-argument segment from it, as the HIP
//! runtime does. Layout from LLVM's AMDGPU usage guide (code object v4/v5 metadata); the
//! MessagePack encoding from its specification. Only what a launch needs is read.

use crate::Error;

/// ELF note type of the AMDGPU metadata.
pub const NT_AMDGPU_METADATA: u32 = 32;
/// Deepest nesting accepted (the real note nests three levels).
const MAX_DEPTH: usize = 16;

/// One kernel argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arg {
    /// Byte offset in the kernarg segment.
    pub offset: u32,
    /// Bytes.
    pub size: u32,
    /// `global_buffer`, `by_value`, `hidden_global_offset_x`, ...
    pub value_kind: String,
}

impl Arg {
    /// Whether the runtime, not the caller, supplies it (`hidden_*`).
    pub fn hidden(&self) -> bool {
        self.value_kind.starts_with("hidden_")
    }
}

/// One kernel's metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelMeta {
    /// `.name`.
    pub name: String,
    /// `.args`, in order.
    pub args: Vec<Arg>,
    /// `.kernarg_segment_size`.
    pub kernarg_segment_size: u32,
    /// `.wavefront_size`.
    pub wavefront_size: u32,
}

/// A MessagePack value (only the kinds the note uses are kept apart).
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Nil,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Bytes,
    Array(Vec<Value>),
    Map(Vec<(Value, Value)>),
}

impl Value {
    fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(entries) => entries
                .iter()
                .find(|(k, _)| matches!(k, Value::Str(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    fn u32(&self) -> Option<u32> {
        match self {
            Value::Int(i) => u32::try_from(*i).ok(),
            _ => None,
        }
    }

    fn str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn bad(&self, why: &str) -> Error {
        Error::CodeObject(format!("metadata note, byte {}: {why}", self.at))
    }

    fn take(&mut self, n: usize) -> Result<&[u8], Error> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| self.bad(&format!("{n} bytes past the note's end")))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn uint(&mut self, n: usize) -> Result<u64, Error> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |a, &x| (a << 8) | u64::from(x)))
    }

    fn value(&mut self, depth: usize) -> Result<Value, Error> {
        if depth > MAX_DEPTH {
            return Err(self.bad("nested deeper than any metadata note"));
        }
        let tag = self.take(1)?[0];
        let count = |r: &mut Self, n: usize| -> Result<usize, Error> {
            let c = r.uint(n)? as usize;
            // Every element takes at least one byte: a count beyond the rest is damage.
            if c > r.b.len() - r.at {
                return Err(r.bad(&format!("a count of {c} past the note's end")));
            }
            Ok(c)
        };
        let v = match tag {
            0x00..=0x7f => Value::Int(i128::from(tag)),
            0x80..=0x8f => self.map((tag & 0xf) as usize, depth)?,
            0x90..=0x9f => self.array((tag & 0xf) as usize, depth)?,
            0xa0..=0xbf => self.string((tag & 0x1f) as usize)?,
            0xc0 => Value::Nil,
            0xc2 => Value::Bool(false),
            0xc3 => Value::Bool(true),
            0xc4..=0xc6 => {
                let n = count(self, 1 << (tag - 0xc4))?;
                self.take(n)?;
                Value::Bytes
            }
            0xca => Value::Float(f64::from(f32::from_bits(self.uint(4)? as u32))),
            0xcb => Value::Float(f64::from_bits(self.uint(8)?)),
            0xcc..=0xcf => Value::Int(i128::from(self.uint(1 << (tag - 0xcc))?)),
            0xd0..=0xd3 => {
                let n = 1usize << (tag - 0xd0);
                let raw = self.uint(n)?;
                let shift = 64 - 8 * n as u32;
                Value::Int(i128::from(((raw << shift) as i64) >> shift))
            }
            0xd9..=0xdb => {
                let n = count(self, 1 << (tag - 0xd9))?;
                self.string(n)?
            }
            0xdc | 0xdd => {
                let n = count(self, 2 << (tag - 0xdc))?;
                self.array(n, depth)?
            }
            0xde | 0xdf => {
                let n = count(self, 2 << (tag - 0xde))?;
                self.map(n, depth)?
            }
            0xe0..=0xff => Value::Int(i128::from(tag as i8)),
            _ => {
                return Err(self.bad(&format!(
                    "MessagePack type 0x{tag:02x} is not used by metadata"
                )))
            }
        };
        Ok(v)
    }

    fn string(&mut self, n: usize) -> Result<Value, Error> {
        let s = self.take(n)?;
        Ok(Value::Str(String::from_utf8_lossy(s).into_owned()))
    }

    fn array(&mut self, n: usize, depth: usize) -> Result<Value, Error> {
        let mut v = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            v.push(self.value(depth + 1)?);
        }
        Ok(Value::Array(v))
    }

    fn map(&mut self, n: usize, depth: usize) -> Result<Value, Error> {
        let mut v = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            let k = self.value(depth + 1)?;
            v.push((k, self.value(depth + 1)?));
        }
        Ok(Value::Map(v))
    }
}

/// Reads the kernels' metadata from the note's descriptor bytes (the MessagePack document).
pub fn parse(note: &[u8]) -> Result<Vec<KernelMeta>, Error> {
    let doc = Reader { b: note, at: 0 }.value(0)?;
    let kernels = match doc.get("amdhsa.kernels") {
        Some(Value::Array(k)) => k,
        _ => {
            return Err(Error::CodeObject(
                "metadata note: no amdhsa.kernels list".into(),
            ))
        }
    };
    kernels
        .iter()
        .map(|k| {
            let name = k
                .get(".name")
                .and_then(Value::str)
                .unwrap_or("")
                .to_string();
            let field = |key: &str| {
                k.get(key).and_then(Value::u32).ok_or_else(|| {
                    Error::CodeObject(format!("metadata of kernel {name:?}: no {key}"))
                })
            };
            let args = match k.get(".args") {
                None => Vec::new(),
                Some(Value::Array(list)) => list
                    .iter()
                    .enumerate()
                    .map(|(i, a)| {
                        let get = |key: &str| {
                            a.get(key).and_then(Value::u32).ok_or_else(|| {
                                Error::CodeObject(format!(
                                    "metadata of kernel {name:?}, argument {i}: no {key}"
                                ))
                            })
                        };
                        Ok(Arg {
                            offset: get(".offset")?,
                            size: get(".size")?,
                            value_kind: a
                                .get(".value_kind")
                                .and_then(Value::str)
                                .unwrap_or("")
                                .to_string(),
                        })
                    })
                    .collect::<Result<_, Error>>()?,
                Some(_) => {
                    return Err(Error::CodeObject(format!(
                        "metadata of kernel {name:?}: .args is not a list"
                    )))
                }
            };
            Ok(KernelMeta {
                args,
                kernarg_segment_size: field(".kernarg_segment_size")?,
                wavefront_size: field(".wavefront_size")?,
                name,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damaged_documents_are_errors() {
        // A map claiming 2^32-1 entries in five bytes, an array nested past the limit, and a
        // string longer than the note: each an error, none allocates its claim.
        for doc in [
            vec![0xdf, 0xff, 0xff, 0xff, 0xff],
            vec![0x91; 64],
            vec![0xdb, 0, 0, 1, 0, b'a'],
            vec![0xc1],
        ] {
            assert!(parse(&doc).is_err(), "{doc:x?}");
        }
        // {"amdhsa.kernels": [{".name": "k", ".kernarg_segment_size": 8, ".wavefront_size": 64,
        //   ".args": [{".offset": 0, ".size": 8, ".value_kind": "global_buffer"}]}]}
        let mut doc = vec![0x81];
        let s = |d: &mut Vec<u8>, t: &str| {
            d.push(0xa0 | t.len() as u8);
            d.extend_from_slice(t.as_bytes());
        };
        s(&mut doc, "amdhsa.kernels");
        doc.extend([0x91, 0x84]);
        s(&mut doc, ".name");
        s(&mut doc, "k");
        s(&mut doc, ".kernarg_segment_size");
        doc.push(8);
        s(&mut doc, ".wavefront_size");
        doc.extend([0xcc, 64]);
        s(&mut doc, ".args");
        doc.extend([0x91, 0x83]);
        s(&mut doc, ".offset");
        doc.push(0);
        s(&mut doc, ".size");
        doc.push(8);
        s(&mut doc, ".value_kind");
        s(&mut doc, "global_buffer");
        let k = parse(&doc).unwrap();
        assert_eq!(k.len(), 1);
        assert_eq!(k[0].name, "k");
        assert_eq!((k[0].kernarg_segment_size, k[0].wavefront_size), (8, 64));
        assert_eq!(
            k[0].args,
            vec![Arg {
                offset: 0,
                size: 8,
                value_kind: "global_buffer".into()
            }]
        );
    }
}
