//! Which stream (lane) each node of a network runs on, so that independent branches overlap:
//! a ResNet block's projection shortcut beside its first two convolutions, a detector's box and
//! class heads beside each other. A node stays on the lane of the input it extends when it is
//! that lane's newest node; otherwise it takes a lane whose work it already follows, or a new
//! one (up to the limit). A node waits, through an event, for each input produced on another
//! lane that it does not already follow.
//!
//! The schedule also says which nodes are certain to have finished before another starts
//! ([`Schedule::precedes`]): the memory plan reuses a buffer only after every node that wrote
//! or read it precedes the new writer, so nodes that may run at once never share memory.

use super::{NetError, NetworkDef};

/// The lanes of a network's nodes and the waits between them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Lanes used (at least 1).
    pub lanes: usize,
    /// Each node's lane, in the definition's order.
    pub lane: Vec<usize>,
    /// Each node's waits: the nodes on other lanes whose end it must wait for, none of which
    /// it follows already.
    pub waits: Vec<Vec<usize>>,
    /// For each node and lane, how many of that lane's nodes (in the definition's order) have
    /// finished before the node starts: node `u` on lane `l` precedes node `j` when
    /// `rank[u] < done[j][l]`.
    done: Vec<Vec<usize>>,
    /// Each node's position on its lane.
    rank: Vec<usize>,
}

impl Schedule {
    /// Every node on one lane, in order.
    pub fn sequential(nodes: usize) -> Schedule {
        Schedule {
            lanes: 1,
            lane: vec![0; nodes],
            waits: vec![Vec::new(); nodes],
            done: (0..nodes).map(|i| vec![i]).collect(),
            rank: (0..nodes).collect(),
        }
    }

    /// Schedules `def` on at most `max_lanes` lanes (1: [`Schedule::sequential`]).
    pub fn plan(def: &NetworkDef, max_lanes: usize) -> Result<Schedule, NetError> {
        let n = def.nodes.len();
        if max_lanes <= 1 {
            return Ok(Schedule::sequential(n));
        }
        let producer = def.producers();
        let mut lane: Vec<usize> = Vec::with_capacity(n);
        let mut waits: Vec<Vec<usize>> = Vec::with_capacity(n);
        let mut done: Vec<Vec<usize>> = Vec::with_capacity(n);
        let mut rank: Vec<usize> = Vec::with_capacity(n);
        // Each lane's newest node.
        let mut tails: Vec<usize> = Vec::new();
        for (i, node) in def.nodes.iter().enumerate() {
            let mut deps: Vec<usize> = node
                .reads()
                .filter_map(|t| producer.get(t.as_str()).copied())
                .filter(|&d| d < i)
                .collect();
            deps.sort_unstable();
            deps.dedup();
            // What finishes before this node through its inputs alone.
            let mut through_deps = vec![0usize; tails.len()];
            for &d in &deps {
                absorb(&mut through_deps, d, &done, &lane, &rank);
            }
            let is_tail = |d: usize| tails[lane[d]] == d;
            let count_on = |l: usize, rank: &[usize]| rank[tails[l]] + 1;
            let chosen = if let Some(&d) = deps.iter().rev().find(|&&d| is_tail(d)) {
                // Extend the newest input's lane.
                lane[d]
            } else if let Some(l) =
                (0..tails.len()).find(|&l| through_deps[l] >= count_on(l, &rank))
            {
                // A lane whose work this node follows anyway.
                l
            } else if tails.len() < max_lanes {
                tails.push(usize::MAX);
                through_deps.push(0);
                tails.len() - 1
            } else {
                // Every lane busy: queue behind the lane whose newest node is oldest.
                (0..tails.len()).min_by_key(|&l| tails[l]).unwrap_or(0)
            };
            // Start from the lane's own history, then wait for what is not already in it.
            let mut now = vec![0usize; tails.len()];
            if tails[chosen] != usize::MAX {
                absorb(&mut now, tails[chosen], &done, &lane, &rank);
            }
            let mut mine = Vec::new();
            for &d in deps.iter().rev() {
                if lane[d] != chosen && now[lane[d]] <= rank[d] {
                    mine.push(d);
                    absorb(&mut now, d, &done, &lane, &rank);
                }
            }
            mine.sort_unstable();
            rank.push(if tails[chosen] == usize::MAX {
                0
            } else {
                rank[tails[chosen]] + 1
            });
            tails[chosen] = i;
            lane.push(chosen);
            waits.push(mine);
            done.push(now);
        }
        // Later lanes may have been opened after earlier nodes' clocks were taken.
        let lanes = tails.len();
        for d in &mut done {
            d.resize(lanes, 0);
        }
        Ok(Schedule {
            lanes,
            lane,
            waits,
            done,
            rank,
        })
    }

    /// Whether node `u` has finished before node `j` starts (`u == j` is not).
    pub fn precedes(&self, u: usize, j: usize) -> bool {
        u != j && self.rank[u] < self.done[j][self.lane[u]]
    }

    /// Whether node `i` is the first of its lane.
    pub fn first_on_lane(&self, i: usize) -> bool {
        self.rank[i] == 0
    }

    /// Whether some node waits for node `d`'s end.
    pub fn is_waited_for(&self, d: usize) -> bool {
        self.waits.iter().any(|w| w.contains(&d))
    }
}

/// Adds to `clock` (per lane, how many of its nodes have finished) what has finished once node
/// `d` has: what had before it started, and `d` itself. Grows `clock` to `d`'s lanes.
fn absorb(clock: &mut Vec<usize>, d: usize, done: &[Vec<usize>], lane: &[usize], rank: &[usize]) {
    let before = &done[d];
    if clock.len() < before.len() {
        clock.resize(before.len(), 0);
    }
    for (a, &b) in clock.iter_mut().zip(before) {
        *a = (*a).max(b);
    }
    clock[lane[d]] = clock[lane[d]].max(rank[d] + 1);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::{models, MemoryPlan, Shape};

    fn index(def: &NetworkDef, name: &str) -> usize {
        def.nodes.iter().position(|n| n.name == name).unwrap()
    }

    #[test]
    fn resnet50_runs_each_projection_shortcut_beside_its_block() {
        let def = models::resnet50(1000);
        let s = Schedule::plan(&def, 2).unwrap();
        assert_eq!(s.lanes, 2);
        for stage in 1..=4 {
            let p = format!("layer{stage}.0");
            let shortcut = index(&def, &format!("{p}.downsample.0"));
            let (c1, c2, c3) = (
                index(&def, &format!("{p}.conv1")),
                index(&def, &format!("{p}.conv2")),
                index(&def, &format!("{p}.conv3")),
            );
            // The shortcut and the first two convolutions may run at once.
            assert_ne!(s.lane[shortcut], s.lane[c1], "{p}");
            assert_eq!(s.lane[c1], s.lane[c2], "{p}");
            for c in [c1, c2] {
                assert!(!s.precedes(shortcut, c) && !s.precedes(c, shortcut), "{p}");
            }
            // The third adds the shortcut: it waits for it, and for nothing else.
            assert_eq!(s.waits[c3], vec![shortcut], "{p}");
            assert!(s.precedes(shortcut, c3) && s.precedes(c2, c3));
        }
        // The other blocks are one chain: only the shortcuts' branches wait.
        let waiting = s.waits.iter().filter(|w| !w.is_empty()).count();
        assert_eq!(waiting, 8, "{:?}", s.waits);
    }

    #[test]
    fn one_lane_is_the_definitions_order() {
        let def = models::yolov8n(80);
        let s = Schedule::plan(&def, 1).unwrap();
        assert_eq!(s, Schedule::sequential(def.nodes.len()));
        // No lanes asked for is one; any number asked for opens only what branches need.
        assert_eq!(Schedule::plan(&def, 0).unwrap(), s);
        assert!(Schedule::plan(&def, usize::MAX).unwrap().lanes <= 8);
        assert!(s.precedes(3, 4) && !s.precedes(4, 3) && !s.precedes(4, 4));
        // The plan on one lane is the sequential plan.
        let bytes = |sh: Shape| u64::from(sh.c * sh.h * sh.w) * 2;
        assert_eq!(
            MemoryPlan::plan_scheduled(&def, bytes, &s).unwrap(),
            MemoryPlan::plan(&def, bytes).unwrap()
        );
    }

    #[test]
    fn every_schedule_keeps_dependencies_and_never_shares_memory_between_concurrent_nodes() {
        let bytes = |sh: Shape| u64::from(sh.c * sh.h * sh.w) * 2;
        for name in models::NAMES {
            let def = models::by_name(name).unwrap();
            let sequential = MemoryPlan::plan(&def, bytes).unwrap().total_bytes();
            for lanes in 1..=4 {
                let s = Schedule::plan(&def, lanes).unwrap();
                assert!(s.lanes <= lanes && s.lanes >= 1, "{name} {lanes}");
                let producer = def.producers();
                for (i, node) in def.nodes.iter().enumerate() {
                    for t in node.reads() {
                        if let Some(&d) = producer.get(t.as_str()) {
                            assert!(s.precedes(d, i), "{name} lanes {lanes}: {d} before {i}");
                        }
                    }
                    for &w in &s.waits[i] {
                        assert_ne!(s.lane[w], s.lane[i]);
                    }
                }
                // Two tensors in one buffer (not parts of one concatenation, which lie side by
                // side): everything touching the first precedes the second's writer.
                let plan = MemoryPlan::plan_scheduled(&def, bytes, &s).unwrap();
                let views = def.concat_views().unwrap();
                let storage = |t: &str| views.get(t).map_or(t.to_string(), |v| v.root.clone());
                let users = |held: &str| -> Vec<usize> {
                    def.nodes
                        .iter()
                        .enumerate()
                        .filter(|(_, n)| {
                            storage(&n.output) == held || n.reads().any(|r| storage(r) == held)
                        })
                        .map(|(i, _)| i)
                        .collect()
                };
                for (j, later) in def.nodes.iter().enumerate() {
                    let b = plan.placement[&later.output];
                    let mine = storage(&later.output);
                    for (t, &bt) in &plan.placement {
                        let Some(&p) = producer.get(t.as_str()) else {
                            continue;
                        };
                        let theirs = storage(t);
                        if bt != b || p >= j || theirs == mine {
                            continue;
                        }
                        for u in users(&theirs) {
                            assert!(
                                s.precedes(u, j),
                                "{name} lanes {lanes}: {t} (node {u}) and {} share a buffer",
                                later.output
                            );
                        }
                    }
                }
                // Branches that overlap hold their tensors at once, but not many more.
                let total = plan.total_bytes();
                assert!(
                    total <= 2 * sequential,
                    "{name} {lanes}: {total} against {sequential}"
                );
            }
        }
    }

    #[test]
    fn a_detectors_heads_spread_over_the_lanes() {
        let def = models::yolov8n(80);
        let s = Schedule::plan(&def, 4).unwrap();
        assert_eq!(s.lanes, 4);
        // Each output's box and class branches are chains of their own.
        let heads: Vec<usize> = (0..3)
            .flat_map(|i| {
                [
                    index(&def, &format!("model.22.cv2.{i}.0.conv")),
                    index(&def, &format!("model.22.cv3.{i}.0.conv")),
                ]
            })
            .collect();
        let lanes: std::collections::HashSet<usize> = heads.iter().map(|&h| s.lane[h]).collect();
        assert!(lanes.len() >= 2, "{:?}", heads);
    }
}
