//! Device memory: allocations at distinct 64-bit addresses with unmapped gaps between them,
//! over host byte vectors. Every access must lie wholly inside one allocation; anything else
//! is a fault the caller reports with the kernel, pc and address.

use std::collections::BTreeMap;

use crate::Error;

/// The first address handed out (low addresses stay unmapped, so a null or small pointer
/// faults).
pub const FIRST_ADDRESS: u64 = 0x0000_1000_0000_0000;
/// Unmapped bytes after every allocation (an overrun past the end faults, not lands in the
/// next buffer).
const GUARD_BYTES: u64 = 1 << 16;
/// Allocations are aligned to this.
const ALIGN: u64 = 256;

/// The device's memory.
#[derive(Debug)]
pub struct Memory {
    regions: BTreeMap<u64, Vec<u8>>,
    next: u64,
    used: usize,
    limit: usize,
}

impl Memory {
    /// Empty memory that holds at most `limit` bytes at once.
    pub fn new(limit: usize) -> Memory {
        Memory {
            regions: BTreeMap::new(),
            next: FIRST_ADDRESS,
            used: 0,
            limit,
        }
    }

    /// Bytes allocated now.
    pub fn used(&self) -> usize {
        self.used
    }

    /// The capacity given to [`Memory::new`].
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Allocates `bytes` zeroed bytes (at least 1); an error past the limit.
    pub fn alloc(&mut self, bytes: usize) -> Result<u64, Error> {
        let bytes = bytes.max(1);
        if bytes > self.limit - self.used {
            return Err(Error::OutOfMemory(format!(
                "{bytes} B asked, {} B of {} B free",
                self.limit - self.used,
                self.limit
            )));
        }
        let base = self.next;
        self.next = (base + bytes as u64 + GUARD_BYTES).next_multiple_of(ALIGN);
        self.regions.insert(base, vec![0; bytes]);
        self.used += bytes;
        Ok(base)
    }

    /// Frees the allocation at `base`.
    pub fn free(&mut self, base: u64) -> Result<(), Error> {
        let region = self.regions.remove(&base).ok_or_else(|| {
            Error::Fault(format!("free of 0x{base:x}, which no allocation starts at"))
        })?;
        self.used -= region.len();
        Ok(())
    }

    /// The `len` bytes at `addr`, when one allocation holds them all.
    pub fn get(&self, addr: u64, len: usize) -> Option<&[u8]> {
        let (base, region) = self.regions.range(..=addr).next_back()?;
        let start = usize::try_from(addr - base).ok()?;
        region.get(start..start.checked_add(len)?)
    }

    /// The `len` bytes at `addr` to write, when one allocation holds them all.
    pub fn get_mut(&mut self, addr: u64, len: usize) -> Option<&mut [u8]> {
        let (base, region) = self.regions.range_mut(..=addr).next_back()?;
        let start = usize::try_from(addr - *base).ok()?;
        region.get_mut(start..start.checked_add(len)?)
    }

    /// Copies out `dst.len()` bytes from `addr`.
    pub fn read(&self, addr: u64, dst: &mut [u8]) -> Result<(), Error> {
        let src = self
            .get(addr, dst.len())
            .ok_or_else(|| outside(addr, dst.len()))?;
        dst.copy_from_slice(src);
        Ok(())
    }

    /// Copies `src` to `addr`.
    pub fn write(&mut self, addr: u64, src: &[u8]) -> Result<(), Error> {
        let dst = self
            .get_mut(addr, src.len())
            .ok_or_else(|| outside(addr, src.len()))?;
        dst.copy_from_slice(src);
        Ok(())
    }

    /// Sets `len` bytes from `addr` to `value`.
    pub fn fill(&mut self, addr: u64, value: u8, len: usize) -> Result<(), Error> {
        self.get_mut(addr, len)
            .ok_or_else(|| outside(addr, len))?
            .fill(value);
        Ok(())
    }
}

fn outside(addr: u64, len: usize) -> Error {
    Error::Fault(format!(
        "{len} B at 0x{addr:x} are not inside one allocation"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accesses_stay_inside_one_allocation() {
        let mut m = Memory::new(1 << 20);
        let a = m.alloc(100).unwrap();
        let b = m.alloc(100).unwrap();
        assert!(b >= a + 100 + GUARD_BYTES);
        m.write(a + 96, &[1, 2, 3, 4]).unwrap();
        assert!(m.write(a + 97, &[1, 2, 3, 4]).is_err());
        assert!(m.get(a - 1, 1).is_none());
        assert!(m.get(0, 4).is_none());
        let mut out = [0u8; 4];
        m.read(a + 96, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 4]);
        assert!(m.alloc(1 << 20).is_err());
        m.free(a).unwrap();
        assert!(m.get(a, 1).is_none());
        assert!(m.free(a).is_err());
        assert_eq!(m.used(), 100);
    }
}
