//! A kernel dispatch as the hardware and the HIP runtime set it up (LLVM's AMDGPU usage
//! guide, "Initial Kernel Execution State"): the kernarg segment packed from the metadata,
//! an AQL dispatch packet, each wave's user and system SGPRs as the descriptor enables them,
//! the work-item ids in VGPRs, EXEC covering the wave's work-items, and per wave a swizzled
//! scratch region behind the private-segment buffer descriptor. Workgroups run one after
//! another; a workgroup's waves take turns, each until it reaches `s_barrier` or `s_endpgm`,
//! and a barrier opens when every wave still running has reached it.

use crate::decode::Family;
use crate::memory::Memory;
use crate::metadata::KernelMeta;
use crate::program::Program;
use crate::wave::{Env, Status, Wave};
use crate::Error;

/// Bytes of LDS a workgroup may use.
pub const MAX_LDS_BYTES: u32 = kiln::backend::amd::MAX_LDS_BYTES;
/// Work-items a workgroup may have.
pub const MAX_WORKGROUP_SIZE: u32 = 1024;

/// One launch.
#[derive(Clone, Debug)]
pub struct Dispatch<'a> {
    /// The kernel.
    pub program: &'a Program,
    /// Workgroups along x, y, z.
    pub grid: [u32; 3],
    /// Work-items per workgroup along x, y, z.
    pub block: [u32; 3],
    /// LDS bytes beyond the kernel's static allocation.
    pub dynamic_lds: u32,
    /// The kernarg segment ([`pack_kernargs`]).
    pub kernarg: &'a [u8],
}

/// What a launch ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Workgroups.
    pub workgroups: u64,
    /// Waves.
    pub waves: u64,
    /// Wave instructions.
    pub instructions: u64,
}

/// Packs the kernarg segment as the HIP runtime does from `hipModuleLaunchKernel`'s
/// parameter list: each explicit argument's bytes at its metadata offset, hidden arguments
/// zero. Each value must be exactly its argument's size.
pub fn pack_kernargs(meta: &KernelMeta, values: &[&[u8]]) -> Result<Vec<u8>, Error> {
    let explicit: Vec<_> = meta.args.iter().filter(|a| !a.hidden()).collect();
    if explicit.len() != values.len() {
        return Err(Error::Launch(format!(
            "kernel {}: {} arguments given, it takes {}",
            meta.name,
            values.len(),
            explicit.len()
        )));
    }
    let mut seg = vec![0u8; meta.kernarg_segment_size as usize];
    for (i, (arg, v)) in explicit.iter().zip(values).enumerate() {
        if v.len() != arg.size as usize {
            return Err(Error::Launch(format!(
                "kernel {}, argument {i} ({}): {} bytes given, it takes {}",
                meta.name,
                arg.value_kind,
                v.len(),
                arg.size
            )));
        }
        let at = arg.offset as usize;
        seg.get_mut(at..at + v.len())
            .ok_or_else(|| {
                Error::Launch(format!(
                    "kernel {}, argument {i}: offset {at} past the {}-byte kernarg segment",
                    meta.name, meta.kernarg_segment_size
                ))
            })?
            .copy_from_slice(v);
    }
    Ok(seg)
}

/// Runs a dispatch to completion on `memory`, executing at most `limit` wave instructions.
pub fn run(memory: &mut Memory, d: &Dispatch<'_>, limit: u64) -> Result<Stats, Error> {
    let p = d.program;
    let desc = &p.descriptor;
    let threads = d.block.iter().map(|&b| u64::from(b)).product::<u64>();
    if threads == 0 || threads > u64::from(MAX_WORKGROUP_SIZE) {
        return Err(Error::Launch(format!(
            "kernel {}: a workgroup of {:?} work-items (1 to {MAX_WORKGROUP_SIZE})",
            p.name, d.block
        )));
    }
    if d.grid.contains(&0) {
        return Err(Error::Launch(format!(
            "kernel {}: a grid of {:?}",
            p.name, d.grid
        )));
    }
    let lds_bytes = desc
        .group_segment_fixed_size
        .checked_add(d.dynamic_lds)
        .filter(|&b| b <= MAX_LDS_BYTES)
        .ok_or_else(|| {
            Error::Launch(format!(
                "kernel {}: {} B static + {} B dynamic LDS, above {MAX_LDS_BYTES}",
                p.name, desc.group_segment_fixed_size, d.dynamic_lds
            ))
        })?;
    if !p.wave64() && p.family == Family::Gfx9 {
        return Err(Error::Launch(format!(
            "kernel {}: its descriptor asks for wave32, which {} does not have",
            p.name, p.arch
        )));
    }
    let lanes = if p.wave64() { 64 } else { 32 };
    let waves_per_group = threads.div_ceil(lanes as u64) as usize;
    // The kernarg segment, the dispatch packet and the queue, as the runtime allocates them.
    let kernarg = memory.alloc(d.kernarg.len().max(16))?;
    memory.write(kernarg, d.kernarg)?;
    let packet = memory.alloc(64)?;
    let mut pk = [0u8; 64];
    pk[2..4].copy_from_slice(
        &(if d.block[2] > 1 || d.grid[2] > 1 {
            3u16
        } else if d.block[1] > 1 || d.grid[1] > 1 {
            2
        } else {
            1
        })
        .to_le_bytes(),
    );
    for i in 0..3 {
        pk[4 + 2 * i..6 + 2 * i].copy_from_slice(&(d.block[i] as u16).to_le_bytes());
        let items = d.grid[i].checked_mul(d.block[i]).ok_or_else(|| {
            Error::Launch(format!(
                "kernel {}: the grid's work-items overflow 32 bits",
                p.name
            ))
        })?;
        pk[12 + 4 * i..16 + 4 * i].copy_from_slice(&items.to_le_bytes());
    }
    pk[24..28].copy_from_slice(&desc.private_segment_fixed_size.to_le_bytes());
    pk[28..32].copy_from_slice(&lds_bytes.to_le_bytes());
    pk[40..48].copy_from_slice(&kernarg.to_le_bytes());
    memory.write(packet, &pk)?;
    let queue = memory.alloc(256)?;
    let result = run_groups(
        memory,
        d,
        limit,
        lanes,
        waves_per_group,
        lds_bytes,
        [kernarg, packet, queue],
    );
    for a in [kernarg, packet, queue] {
        memory.free(a)?;
    }
    result
}

#[allow(clippy::too_many_arguments)]
fn run_groups(
    memory: &mut Memory,
    d: &Dispatch<'_>,
    limit: u64,
    lanes: usize,
    waves_per_group: usize,
    lds_bytes: u32,
    [kernarg, packet, queue]: [u64; 3],
) -> Result<Stats, Error> {
    let p = d.program;
    let desc = &p.descriptor;
    let mut stats = Stats::default();
    let mut waves: Vec<Wave> = (0..waves_per_group)
        .map(|_| Wave::new(lanes, p.family))
        .collect();
    let scratch_bytes = desc.private_segment_fixed_size;
    let scratch: Vec<u64> = if scratch_bytes > 0 {
        (0..waves_per_group)
            .map(|_| memory.alloc(scratch_bytes as usize * lanes))
            .collect::<Result<_, _>>()?
    } else {
        Vec::new()
    };
    let mut lds = vec![0u8; lds_bytes as usize];
    let outcome = (|| {
        for gz in 0..d.grid[2] {
            for gy in 0..d.grid[1] {
                for gx in 0..d.grid[0] {
                    lds.fill(0);
                    for (i, wave) in waves.iter_mut().enumerate() {
                        let base = scratch.get(i).copied().unwrap_or(0);
                        if base != 0 {
                            memory.fill(base, 0, scratch_bytes as usize * lanes)?;
                        }
                        init_wave(wave, d, i, [gx, gy, gz], [kernarg, packet, queue], base)?;
                    }
                    stats.workgroups += 1;
                    stats.waves += waves_per_group as u64;
                    run_group(memory, p, &mut waves, &mut lds, limit, &mut stats)?;
                }
            }
        }
        Ok(stats)
    })();
    for a in scratch {
        memory.free(a)?;
    }
    outcome
}

fn run_group(
    memory: &mut Memory,
    p: &Program,
    waves: &mut [Wave],
    lds: &mut [u8],
    limit: u64,
    stats: &mut Stats,
) -> Result<(), Error> {
    let mut env = Env {
        program: p,
        memory,
        lds,
    };
    loop {
        for w in waves.iter_mut() {
            while w.status == Status::Ready {
                if stats.instructions >= limit {
                    return Err(Error::Launch(format!(
                        "kernel {}: ran past the limit of {limit} wave instructions (pc 0x{:x})",
                        p.name, w.pc
                    )));
                }
                stats.instructions += 1;
                w.step(&mut env)?;
            }
        }
        if waves.iter().all(|w| w.status == Status::Done) {
            return Ok(());
        }
        // Every wave still running waits at the barrier: it opens.
        for w in waves.iter_mut() {
            if w.status == Status::Barrier {
                w.status = Status::Ready;
            }
        }
    }
}

/// Sets a wave's registers as the hardware does at dispatch.
fn init_wave(
    w: &mut Wave,
    d: &Dispatch<'_>,
    index: usize,
    group: [u32; 3],
    [kernarg, packet, queue]: [u64; 3],
    scratch: u64,
) -> Result<(), Error> {
    let p = d.program;
    let desc = &p.descriptor;
    w.s = [0; 128];
    w.v.fill(0);
    w.a.fill(0);
    w.scc = false;
    w.pc = p.entry;
    w.status = Status::Ready;
    w.scratch_base = scratch;
    w.scratch_bytes = desc.private_segment_fixed_size;
    // VGPRs are allocated in granules: 4 (gfx9 wave64), 8 (gfx90a/gfx942, VGPRs and AGPRs in
    // one file; gfx10/gfx11 wave32).
    let granule = if matches!(p.arch, "gfx90a" | "gfx942") || w.lanes == 32 {
        8
    } else {
        4
    };
    w.vgpr_limit = ((desc.vgpr_granules() as usize + 1) * granule).min(crate::wave::VGPRS);
    // gfx9 allocates SGPRs in granules of 8, VCC, FLAT_SCRATCH and XNACK_MASK among them at
    // the top (so s0-s101 at most are the kernel's).
    w.sgpr_limit = if p.family == Family::Gfx9 {
        ((desc.sgpr_granules() as usize + 1) * 8).min(102)
    } else {
        106
    };
    let lanes = w.lanes;
    let props = desc.kernel_code_properties;
    let mut sgpr = 0usize;
    let put = |w: &mut Wave, sgpr: &mut usize, vals: &[u32]| {
        for &v in vals {
            if *sgpr < 106 {
                w.s[*sgpr] = v;
            }
            *sgpr += 1;
        }
    };
    let lo_hi = |a: u64| [a as u32, (a >> 32) as u32];
    // User SGPRs, in the order the descriptor's enable bits list them.
    if props & 1 != 0 {
        // The private segment buffer: swizzled dwords, lane-interleaved, as the runtime
        // builds it.
        let stride_code = if lanes == 64 { 3 } else { 2 };
        put(
            w,
            &mut sgpr,
            &[
                scratch as u32,
                ((scratch >> 32) as u32 & 0xffff) | (1 << 31),
                u32::MAX,
                (stride_code << 21) | (1 << 23),
            ],
        );
    }
    if props & 2 != 0 {
        put(w, &mut sgpr, &lo_hi(packet));
    }
    if props & 4 != 0 {
        put(w, &mut sgpr, &lo_hi(queue));
    }
    if props & 8 != 0 {
        put(w, &mut sgpr, &lo_hi(kernarg));
    }
    if props & 16 != 0 {
        put(w, &mut sgpr, &[0, 0]);
    }
    if props & 32 != 0 {
        put(w, &mut sgpr, &lo_hi(scratch));
    }
    if props & 64 != 0 {
        put(w, &mut sgpr, &[desc.private_segment_fixed_size]);
    }
    // USER_SGPR_COUNT may exceed what the enable bits fill: gfx1100-1102 pad it so that the
    // system SGPRs start at s16 minus their count (LLVM's user-SGPR-init16 workaround). The
    // system SGPRs start at the count either way; fewer counted than enabled is malformed.
    let user = desc.user_sgprs() as usize;
    if sgpr > user {
        return Err(Error::Unsupported(format!(
            "kernel {}: the descriptor enables {sgpr} user SGPRs but counts {user}",
            p.name
        )));
    }
    sgpr = user;
    // System SGPRs: workgroup ids, then the scratch wave offset (gfx9 before gfx940).
    for (i, on) in desc.workgroup_id_sgprs().iter().enumerate() {
        if *on {
            put(w, &mut sgpr, &[group[i]]);
        }
    }
    if desc.compute_pgm_rsrc2 & (1 << 10) != 0 {
        return Err(Error::Unsupported(format!(
            "kernel {}: the workgroup-info SGPR",
            p.name
        )));
    }
    let architected_scratch = p.arch == "gfx942";
    if desc.compute_pgm_rsrc2 & 1 != 0 && !architected_scratch {
        put(w, &mut sgpr, &[0]);
    }
    // Work-item ids: packed in v0 (gfx90a, gfx942, gfx11) or one per VGPR.
    let [bx, by, _] = d.block;
    let packed = matches!(p.arch, "gfx90a" | "gfx942") || p.family == Family::Gfx11;
    let first = index * lanes;
    let threads = d.block.iter().product::<u32>() as usize;
    let mut exec = 0u64;
    for l in 0..lanes {
        let t = first + l;
        if t >= threads {
            continue;
        }
        exec |= 1 << l;
        let t = t as u32;
        let (x, y, z) = (t % bx, (t / bx) % by, t / (bx * by));
        if packed {
            w.v[l] = x | (y << 10) | (z << 20);
        } else {
            w.v[l] = x;
            w.v[crate::wave::LANES + l] = y;
            w.v[2 * crate::wave::LANES + l] = z;
        }
    }
    w.set_exec(exec);
    Ok(())
}
