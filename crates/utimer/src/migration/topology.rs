//! Which NUMA node each worker runs on, and the group layout built from it.
//!
//! [`Topology`] says, per worker, the CPU it is pinned to (if any) and its
//! node. [`Topology::detect`] reads it from Linux sysfs; tests and the
//! simulator describe any machine with [`Topology::uniform`] or
//! [`Topology::from_nodes`]. [`Layout::build`] turns it into the hierarchy's
//! shape: workers in groups of at most 8 per node, those groups in groups of
//! 8 per node, up to one root per node (every node's subtree equally deep:
//! the *cross-node level*), then the node roots in groups of 8 up to one top.
//! A group below the cross-node level never mixes nodes.

use crate::TimerError;

/// Children per group (the kernel's `TMIGR_CHILDREN_PER_GROUP`).
pub(crate) const FANOUT: usize = 8;

/// Where each worker runs: a NUMA node per worker, and the CPU it is pinned
/// to when known. Give one to
/// [`Builder::topology`](crate::Builder::topology) to override detection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    nodes: Vec<u32>,
    cpus: Vec<Option<u32>>,
}

impl Topology {
    /// `workers` workers on one node, no CPUs known.
    pub fn flat(workers: usize) -> Topology {
        Topology::from_nodes(vec![0; workers])
    }

    /// `workers` workers spread over `nodes` nodes in contiguous blocks (as
    /// Linux numbers CPUs on most machines). `nodes` is clamped to
    /// 1 ..= `workers`.
    pub fn uniform(workers: usize, nodes: usize) -> Topology {
        let nodes = nodes.clamp(1, workers.max(1));
        Topology::from_nodes(
            (0..workers)
                .map(|w| (w * nodes / workers.max(1)) as u32)
                .collect(),
        )
    }

    /// One node number per worker, in worker order.
    pub fn from_nodes(nodes: Vec<u32>) -> Topology {
        let cpus = vec![None; nodes.len()];
        Topology { nodes, cpus }
    }

    /// The machine's topology for `workers` workers, from sysfs: worker `i`
    /// runs on `pin[i]` if given, else on the `i`-th CPU this process may
    /// run on (wrapping around), and its node is that CPU's node. Where
    /// sysfs says nothing (not Linux, or no NUMA), every worker is on
    /// node 0.
    pub fn detect(workers: usize, pin: Option<&[usize]>) -> Topology {
        let allowed = allowed_cpus();
        let cpus: Vec<Option<u32>> = (0..workers)
            .map(|w| match pin {
                Some(p) if !p.is_empty() => Some(p[w % p.len()] as u32),
                _ if allowed.is_empty() => None,
                _ => Some(allowed[w % allowed.len()]),
            })
            .collect();
        let nodes = cpus.iter().map(|c| c.map_or(0, node_of_cpu)).collect();
        Topology { nodes, cpus }
    }

    /// Number of workers described.
    pub fn workers(&self) -> usize {
        self.nodes.len()
    }

    /// Worker `w`'s node.
    pub fn node(&self, w: usize) -> Option<u32> {
        self.nodes.get(w).copied()
    }

    /// The CPU worker `w` is pinned to, when known.
    pub fn cpu(&self, w: usize) -> Option<u32> {
        self.cpus.get(w).copied().flatten()
    }

    /// `Ok` if it describes exactly `workers` workers.
    pub(crate) fn check(&self, workers: usize) -> Result<(), TimerError> {
        if self.nodes.len() == workers {
            Ok(())
        } else {
            Err(TimerError::BadTopology {
                described: self.nodes.len().try_into().unwrap_or(u32::MAX),
            })
        }
    }
}

/// The CPUs this process may run on (`sched_getaffinity`), ascending.
fn allowed_cpus() -> Vec<u32> {
    #[cfg(all(target_os = "linux", not(miri)))]
    {
        // SAFETY: a zeroed cpu_set_t is a valid empty set; the call writes
        // at most `size_of::<cpu_set_t>()` bytes into it.
        let set = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
                return Vec::new();
            }
            set
        };
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: `c` is below CPU_SETSIZE, the set's capacity.
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .map(|c| c as u32)
            .collect()
    }
    #[cfg(not(all(target_os = "linux", not(miri))))]
    Vec::new()
}

/// `cpu`'s NUMA node: the `nodeN` entry in its sysfs directory.
fn node_of_cpu(cpu: u32) -> u32 {
    let dir = format!("/sys/devices/system/cpu/cpu{cpu}");
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .find_map(|e| e.file_name().to_str()?.strip_prefix("node")?.parse().ok())
        .unwrap_or(0)
}

/// A child of a group: a worker (level 0) or a group.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Child {
    Worker(u32),
    Group(u32),
}

/// One group of the layout.
#[derive(Clone, Debug)]
pub(crate) struct GroupShape {
    pub(crate) level: u8,
    pub(crate) node: Option<u32>,
    pub(crate) parent: Option<u32>,
    /// This group's slot in its parent.
    pub(crate) slot: u8,
    pub(crate) children: Vec<Child>,
}

/// The hierarchy's shape.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub(crate) groups: Vec<GroupShape>,
    /// Per worker: its level-0 group and its slot there.
    pub(crate) leaves: Vec<(u32, u8)>,
    pub(crate) levels: u8,
    pub(crate) top: u32,
}

/// Levels needed to bring `n` children under one root, at least 1.
fn levels_for(mut n: usize) -> u8 {
    let mut levels = 1;
    while n > FANOUT {
        n = n.div_ceil(FANOUT);
        levels += 1;
    }
    levels
}

impl Layout {
    /// The layout for `topo` (at least one worker).
    pub(crate) fn build(topo: &Topology) -> Layout {
        let workers = topo.workers();
        assert!(workers > 0, "a hierarchy needs a worker");
        // Workers by node (stable: in worker order within a node).
        let mut order: Vec<u32> = (0..workers as u32).collect();
        order.sort_by_key(|&w| topo.nodes[w as usize]);
        let mut node_ids: Vec<u32> = Vec::new();
        let mut per_node: Vec<Vec<u32>> = Vec::new();
        for w in order {
            let node = topo.nodes[w as usize];
            if node_ids.last() != Some(&node) {
                node_ids.push(node);
                per_node.push(Vec::new());
            }
            per_node.last_mut().expect("pushed above").push(w);
        }
        let cross = per_node
            .iter()
            .map(|ws| levels_for(ws.len()))
            .max()
            .unwrap_or(1);
        let mut layout = Layout {
            groups: Vec::new(),
            leaves: vec![(0, 0); workers],
            levels: 0,
            top: 0,
        };
        // Below the cross-node level: one subtree per node.
        let mut roots = Vec::new();
        for (ws, &node) in per_node.iter().zip(&node_ids) {
            let mut children: Vec<Child> = ws.iter().map(|&w| Child::Worker(w)).collect();
            for level in 0..cross {
                children = layout.group_up(&children, level, Some(node));
            }
            debug_assert_eq!(children.len(), 1);
            roots.extend(children);
        }
        // Above it: node roots, 8 at a time, up to one top.
        let mut level = cross;
        while roots.len() > 1 {
            roots = layout.group_up(&roots, level, None);
            level += 1;
        }
        layout.levels = level;
        layout.top = match roots[0] {
            Child::Group(g) => g,
            Child::Worker(_) => unreachable!("every worker sits in a group"),
        };
        layout
    }

    /// Puts `children` in groups of at most 8 at `level`; returns the new
    /// groups as children for the level above.
    fn group_up(&mut self, children: &[Child], level: u8, node: Option<u32>) -> Vec<Child> {
        let mut up = Vec::new();
        for chunk in children.chunks(FANOUT) {
            let g = self.groups.len() as u32;
            for (slot, &c) in chunk.iter().enumerate() {
                match c {
                    Child::Worker(w) => self.leaves[w as usize] = (g, slot as u8),
                    Child::Group(child) => {
                        let shape = &mut self.groups[child as usize];
                        shape.parent = Some(g);
                        shape.slot = slot as u8;
                    }
                }
            }
            self.groups.push(GroupShape {
                level,
                node,
                parent: None,
                slot: 0,
                children: chunk.to_vec(),
            });
            up.push(Child::Group(g));
        }
        up
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_shape(layout: &Layout, topo: &Topology) {
        for (w, &(g, slot)) in layout.leaves.iter().enumerate() {
            let shape = &layout.groups[g as usize];
            assert_eq!(shape.level, 0);
            assert_eq!(shape.children[slot as usize], Child::Worker(w as u32));
            assert_eq!(shape.node, topo.node(w), "level-0 groups never mix nodes");
        }
        for (i, shape) in layout.groups.iter().enumerate() {
            assert!(!shape.children.is_empty() && shape.children.len() <= FANOUT);
            match shape.parent {
                Some(p) => {
                    let parent = &layout.groups[p as usize];
                    assert_eq!(parent.level, shape.level + 1);
                    assert_eq!(parent.children[shape.slot as usize], Child::Group(i as u32));
                    if parent.node.is_some() {
                        assert_eq!(parent.node, shape.node, "below the cross-node level");
                    }
                }
                None => assert_eq!(i as u32, layout.top),
            }
        }
        assert_eq!(layout.groups[layout.top as usize].level + 1, layout.levels);
    }

    #[test]
    fn shapes_of_many_machines() {
        for (workers, nodes, levels) in [
            (1, 1, 1),
            (8, 1, 1),
            (9, 1, 2),
            (64, 1, 2),
            (65, 1, 3),
            (16, 2, 2),
            (1024, 8, 4),
            (3, 3, 2),
        ] {
            let topo = Topology::uniform(workers, nodes);
            let layout = Layout::build(&topo);
            check_shape(&layout, &topo);
            assert_eq!(layout.levels, levels, "{workers} workers on {nodes} nodes");
        }
    }

    #[test]
    fn uneven_nodes_share_one_cross_node_level() {
        let mut nodes = vec![0; 20];
        nodes.extend([1, 1]);
        let topo = Topology::from_nodes(nodes);
        let layout = Layout::build(&topo);
        check_shape(&layout, &topo);
        assert_eq!(layout.levels, 3);
    }

    #[test]
    #[cfg_attr(miri, ignore = "65,536 workers: too slow under Miri")]
    fn one_node_per_worker_builds_quickly() {
        let topo = Topology::from_nodes((0..65_536).rev().collect());
        let layout = Layout::build(&topo);
        check_shape(&layout, &topo);
        assert_eq!(layout.levels, 7);
    }

    #[test]
    fn mismatched_override_is_an_error() {
        let e = Topology::uniform(4, 2).check(8).unwrap_err();
        assert_eq!(e, TimerError::BadTopology { described: 4 });
    }

    #[test]
    fn detect_describes_every_worker() {
        let t = Topology::detect(5, None);
        assert_eq!(t.workers(), 5);
        let t = Topology::detect(3, Some(&[0]));
        assert_eq!((t.cpu(0), t.cpu(2)), (Some(0), Some(0)));
    }
}
