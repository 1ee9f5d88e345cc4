//! Vector memory: LDS, flat/global/scratch and buffer loads and stores.

use super::*;

impl Wave {
    pub(super) fn vmem(&mut self, inst: &Inst, env: &mut Env<'_>) -> Result<(), Error> {
        if inst.op == Op::CacheInvalidate {
            // Memory is coherent in the model: nothing is cached.
            return Ok(());
        }
        let Op::Mem(acc) = inst.op else {
            return Err(Self::unsupported("not in the executor's memory operations"));
        };
        let exec = self.exec();
        let (w, w1) = (inst.w[0], inst.w[1]);
        let lanes = self.lanes;
        // Per lane: the address (in its space) of each element.
        let mut addrs = [0u64; LANES];
        // Each element group: an offset added to the lane's address, and its first register.
        let mut parts = [(0u64, 0u32); 2];
        let mut nparts = 1;
        let mut space = acc.space;
        match inst.format {
            Format::Ds => {
                let (off0, off1) = (w & 0xff, (w >> 8) & 0xff);
                let (addr, d0, d1, vd) = (w1 & 0xff, (w1 >> 8) & 0xff, (w1 >> 16) & 0xff, w1 >> 24);
                let gds_bit = if self.family == Family::Gfx9 { 16 } else { 17 };
                if (w >> gds_bit) & 1 == 1 {
                    return Err(Self::unsupported("GDS"));
                }
                let a = self.vread(256 + addr, 0)?;
                for l in 0..lanes {
                    addrs[l] = u64::from(a[l]);
                }
                if acc.pair {
                    // read2/write2: two elements, at offset0 and offset1 in units of the
                    // element; the second from data1 or into the registers after the first.
                    let unit = 4 * u64::from(acc.count);
                    let second = if acc.store { d1 } else { vd + acc.count };
                    let first = if acc.store { d0 } else { vd };
                    parts = [
                        (unit * u64::from(off0), first),
                        (unit * u64::from(off1), second),
                    ];
                    nparts = 2;
                } else {
                    parts[0] = (
                        u64::from(off0 | (off1 << 8)),
                        if acc.store { d0 } else { vd },
                    );
                }
            }
            Format::Flat => {
                // By family: the segment's bits, the offset's width (flat's unsigned, global's
                // and scratch's signed), and the saddr value meaning "off" (gfx10/gfx11: null).
                let (seg, flat_bits, signed_bits, off) = match self.family {
                    Family::Gfx9 => ((w >> 14) & 3, 12, 13, 0x7f),
                    Family::Gfx10 => ((w >> 14) & 3, 11, 12, 0x7d),
                    Family::Gfx11 => ((w >> 16) & 3, 12, 13, 0x7c),
                };
                let (addr, d, saddr, vd) =
                    (w1 & 0xff, (w1 >> 8) & 0xff, (w1 >> 16) & 0x7f, w1 >> 24);
                if self.family == Family::Gfx9
                    && (w1 >> 23) & 1 == 1
                    && env.program.arch != "gfx942"
                {
                    return Err(Self::unsupported("AGPR data"));
                }
                let offset = if seg == 0 {
                    i64::from(w & ((1 << flat_bits) - 1))
                } else {
                    let shift = 32 - signed_bits;
                    i64::from(((w & ((1 << signed_bits) - 1)) << shift) as i32 >> shift)
                };
                let saddr = if saddr == off { 0x7f } else { saddr };
                // Scratch takes its VGPR address only when told (gfx942 and gfx11: the SVE
                // bit), or else when no SGPR address is given.
                let scratch_vaddr = match (self.family, env.program.arch) {
                    (_, "gfx942") => (w >> 13) & 1 == 1,
                    (Family::Gfx11, _) => (w1 >> 23) & 1 == 1,
                    _ => saddr == 0x7f,
                };
                match seg {
                    0 => {
                        let a = self.vread64(256 + addr, 0)?;
                        for l in 0..lanes {
                            addrs[l] = (a[l] as i64).wrapping_add(offset) as u64;
                        }
                    }
                    2 => {
                        if saddr == 0x7f {
                            let a = self.vread64(256 + addr, 0)?;
                            for l in 0..lanes {
                                addrs[l] = (a[l] as i64).wrapping_add(offset) as u64;
                            }
                        } else {
                            let base = self.sread64(saddr, 0)?;
                            let a = self.vread(256 + addr, 0)?;
                            for l in 0..lanes {
                                addrs[l] = (base.wrapping_add(u64::from(a[l])) as i64)
                                    .wrapping_add(offset)
                                    as u64;
                            }
                        }
                    }
                    1 => {
                        // Scratch: a private offset per lane.
                        let v = if scratch_vaddr {
                            self.vread(256 + addr, 0)?
                        } else {
                            [0; LANES]
                        };
                        let s = if saddr == 0x7f {
                            0
                        } else {
                            self.sread(saddr, 0)?
                        };
                        for l in 0..lanes {
                            addrs[l] = (i64::from(v[l].wrapping_add(s)) + offset) as u64;
                        }
                    }
                    _ => return Err(Self::unsupported("flat segment 3")),
                }
                parts[0].1 = if acc.store { d } else { vd };
            }
            Format::Mubuf => {
                if self.family == Family::Gfx11 {
                    return Err(Self::unsupported("gfx11 buffer loads and stores"));
                }
                let (offen, idxen) = ((w >> 12) & 1 == 1, (w >> 13) & 1 == 1);
                if (w >> 16) & 1 == 1 {
                    return Err(Self::unsupported("buffer loads into LDS"));
                }
                let (vaddr, d, srsrc, soffset) = (
                    w1 & 0xff,
                    (w1 >> 8) & 0xff,
                    ((w1 >> 16) & 0x1f) * 4,
                    w1 >> 24,
                );
                let rsrc: Vec<u32> = (0..4).map(|i| self.s[(srsrc + i) as usize]).collect();
                let base = u64::from(rsrc[0]) | (u64::from(rsrc[1] & 0xffff) << 32);
                let stride = u64::from((rsrc[1] >> 16) & 0x3fff);
                let swizzle = (rsrc[1] >> 31) & 1 == 1;
                let add_tid = (rsrc[3] >> 23) & 1 == 1;
                let index_stride = [8u64, 16, 32, 64][((rsrc[3] >> 21) & 3) as usize];
                let soff = u64::from(self.sread(soffset, 0)?);
                let va = self.vread(256 + vaddr, 0)?;
                let va2 = if offen && idxen {
                    self.vread(256 + vaddr + 1, 0)?
                } else {
                    [0; LANES]
                };
                for l in 0..lanes {
                    let index = if idxen { u64::from(va[l]) } else { 0 }
                        + if add_tid { l as u64 } else { 0 };
                    let off = if offen {
                        u64::from(if idxen { va2[l] } else { va[l] })
                    } else {
                        0
                    } + u64::from(w & 0xfff);
                    addrs[l] = if swizzle {
                        // Elements of 4 bytes interleaved across index_stride lanes.
                        let (imsb, ilsb) = (index / index_stride, index % index_stride);
                        let (omsb, olsb) = (off / 4, off % 4);
                        base + soff + (imsb * stride + omsb * 4) * index_stride + ilsb * 4 + olsb
                    } else {
                        base + soff + off + index * stride
                    };
                }
                if swizzle && acc.bytes * acc.count > 4 {
                    return Err(Self::unsupported(
                        "swizzled buffer access wider than a dword",
                    ));
                }
                space = Space::Global;
                parts[0].1 = d;
            }
            _ => {
                return Err(Self::unsupported(
                    "a memory encoding the executor does not run",
                ))
            }
        }
        self.access(env, acc, space, &addrs, &parts[..nparts], exec)
    }

    /// Moves each active lane's data for one memory instruction: per element group of
    /// `parts` (offset, first register), `acc.count` elements from the lane's address plus
    /// the offset.
    fn access(
        &mut self,
        env: &mut Env<'_>,
        acc: Access,
        space: Space,
        addrs: &[u64; LANES],
        parts: &[(u64, u32)],
        exec: u64,
    ) -> Result<(), Error> {
        let bytes = acc.bytes as usize;
        for l in 0..self.lanes {
            if exec >> l & 1 == 0 {
                continue;
            }
            for &(offset, first) in parts {
                for i in 0..acc.count {
                    let at = addrs[l]
                        .wrapping_add(offset)
                        .wrapping_add(u64::from(i) * u64::from(acc.bytes));
                    let reg = self.vgprs((first + i) as usize, 1)?;
                    let slot = reg * LANES + l;
                    let target = self.locate(env, space, at, bytes, l)?;
                    if acc.store {
                        let v = self.v[slot].to_le_bytes();
                        match target {
                            Place::Memory(a) => env
                                .memory
                                .write(a, &v[..bytes])
                                .map_err(|_| fault(acc, at, bytes))?,
                            Place::Lds(o) => env.lds[o..o + bytes].copy_from_slice(&v[..bytes]),
                        }
                    } else {
                        let mut v = [0u8; 4];
                        match target {
                            Place::Memory(a) => env
                                .memory
                                .read(a, &mut v[..bytes])
                                .map_err(|_| fault(acc, at, bytes))?,
                            Place::Lds(o) => v[..bytes].copy_from_slice(&env.lds[o..o + bytes]),
                        }
                        let raw = u32::from_le_bytes(v);
                        self.v[slot] = match (bytes, acc.signed) {
                            (1, true) => raw as u8 as i8 as i32 as u32,
                            (2, true) => raw as u16 as i16 as i32 as u32,
                            _ => raw,
                        };
                    }
                }
            }
        }
        Ok(())
    }

    /// Where `bytes` bytes at address `at` of `space` lie for lane `lane`.
    fn locate(
        &self,
        env: &Env<'_>,
        space: Space,
        at: u64,
        bytes: usize,
        lane: usize,
    ) -> Result<Place, Error> {
        let lds = |o: u64| -> Result<Place, Error> {
            let end = o
                .checked_add(bytes as u64)
                .filter(|&e| e <= env.lds.len() as u64);
            match end {
                Some(_) => Ok(Place::Lds(o as usize)),
                None => Err(Error::Fault(format!(
                    "LDS access of {bytes} B at byte {o} past the workgroup's {} B of LDS",
                    env.lds.len()
                ))),
            }
        };
        let private = |o: u64| -> Result<Place, Error> {
            if o + bytes as u64 > u64::from(self.scratch_bytes) {
                return Err(Error::Fault(format!(
                    "private access of {bytes} B at byte {o} past the lane's {} B of scratch",
                    self.scratch_bytes
                )));
            }
            if o % 4 + bytes as u64 > 4 {
                return Err(Self::unsupported("a private access across a dword"));
            }
            Ok(Place::Memory(
                self.scratch_base + (o / 4) * 4 * self.lanes as u64 + 4 * lane as u64 + o % 4,
            ))
        };
        match space {
            Space::Lds => lds(at & 0xffff_ffff),
            Space::Scratch => private(at & 0xffff_ffff),
            Space::Flat => {
                let hi = at & !(APERTURE_BYTES - 1);
                if hi == SHARED_APERTURE {
                    lds(at - SHARED_APERTURE)
                } else if hi == PRIVATE_APERTURE {
                    private(at - PRIVATE_APERTURE)
                } else {
                    Ok(Place::Memory(at))
                }
            }
            Space::Global | Space::Buffer => Ok(Place::Memory(at)),
        }
    }
}

enum Place {
    Memory(u64),
    Lds(usize),
}

fn fault(acc: Access, at: u64, bytes: usize) -> Error {
    Error::Fault(format!(
        "{} of {bytes} B at 0x{at:x}, outside every allocation",
        if acc.store { "store" } else { "load" }
    ))
}
