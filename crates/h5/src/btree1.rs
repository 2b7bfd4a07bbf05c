//! Version 1 B-trees: the symbol tables of old-style groups (node type 0) and the chunk
//! index of datasets with layout message version 3 (node type 1).
//!
//! Nodes are visited level by level; each level's nodes are fetched in one batch.

use std::collections::HashSet;

use crate::error::{corrupt, H5Result};
use crate::file::Inner;

/// One entry of a leaf of a chunk B-tree: a chunk.
#[derive(Clone, Debug)]
pub(crate) struct ChunkEntry {
    /// The chunk's element offset (without the trailing element-size dimension).
    pub offset: Vec<u64>,
    /// Its stored size.
    pub size: u32,
    /// Its filter mask.
    pub mask: u32,
    /// Its address (relative).
    pub addr: u64,
}

struct Node {
    level: u8,
    keys: Vec<Vec<u8>>,
    children: Vec<u64>,
}

fn read_node(f: &Inner, addr: u64, kind: u8, key_size: usize) -> H5Result<Node> {
    let what = "v1 B-tree node";
    let o = f.sizes.offset as usize;
    let head = f.read_structure(addr, (8 + 2 * o) as u64, what)?;
    let mut c = f.cursor(&head, what, addr);
    if c.bytes(4)? != b"TREE" {
        return Err(c.err("no TREE signature"));
    }
    let t = c.u8()?;
    if t != kind {
        return Err(c.err(format!("node type {t}, expected {kind}")));
    }
    let level = c.u8()?;
    let used = c.u16()? as usize;
    let size = 8 + 2 * o + (used + 1) * key_size + used * o;
    let block = f.read_structure(addr, size as u64, what)?;
    let mut c = f.cursor(&block, what, addr);
    c.seek(8 + 2 * o)?;
    let mut keys = Vec::with_capacity(used + 1);
    let mut children = Vec::with_capacity(used);
    for i in 0..=used {
        keys.push(c.bytes(key_size)?.to_vec());
        if i < used {
            children.push(c.addr_required("child address")?);
        }
    }
    Ok(Node {
        level,
        keys,
        children,
    })
}

/// What a walk does with each leaf entry: (left key, right key, child address).
type LeafVisitor<'a> = dyn FnMut(&[u8], &[u8], u64) -> H5Result<()> + 'a;

/// Walk a v1 B-tree from `root`, level by level, visiting the children `descend` accepts
/// (given the keys on either side), and hand each leaf entry (left key, right key, child
/// address) to `leaf`.
fn walk(
    f: &Inner,
    root: u64,
    kind: u8,
    key_size: usize,
    descend: &dyn Fn(&[u8], &[u8]) -> bool,
    leaf: &mut LeafVisitor,
) -> H5Result<()> {
    let mut level: Vec<(u64, Option<u8>)> = vec![(root, None)];
    let mut seen = HashSet::new();
    let limit = f.io.size() / 16 + 1;
    while !level.is_empty() {
        let o = f.sizes.offset as u64;
        f.prefetch(
            &level
                .iter()
                .map(|&(a, _)| (a, 8 + 2 * o + 64 * (key_size as u64 + o)))
                .collect::<Vec<_>>(),
        )?;
        let mut next = Vec::new();
        for (addr, expect_level) in level {
            if !seen.insert(addr) || seen.len() as u64 > limit {
                return Err(corrupt(
                    "v1 B-tree",
                    Some(root),
                    format!("node at {addr:#x} visited twice (a loop)"),
                ));
            }
            let node = read_node(f, addr, kind, key_size)?;
            if let Some(l) = expect_level {
                if node.level != l {
                    return Err(corrupt(
                        "v1 B-tree node",
                        Some(addr),
                        format!("level {} under a node of level {}", node.level, l + 1),
                    ));
                }
            }
            for (i, &child) in node.children.iter().enumerate() {
                let (lo, hi) = (&node.keys[i], &node.keys[i + 1]);
                if node.level == 0 {
                    leaf(lo, hi, child)?;
                } else if descend(lo, hi) {
                    next.push((child, Some(node.level - 1)));
                }
            }
        }
        level = next;
    }
    Ok(())
}

/// The symbol table node addresses of a group's B-tree.
pub(crate) fn group_nodes(f: &Inner, root: u64) -> H5Result<Vec<u64>> {
    let mut out = Vec::new();
    walk(
        f,
        root,
        0,
        f.sizes.length as usize,
        &|_, _| true,
        &mut |_, _, child| {
            out.push(child);
            Ok(())
        },
    )?;
    Ok(out)
}

/// The chunks of a chunk B-tree of a dataset of `rank` axes, visiting only subtrees whose key
/// range may hold one of `wanted` (chunk element offsets, sorted), or every subtree when
/// `wanted` is `None`.
pub(crate) fn chunks(
    f: &Inner,
    root: u64,
    rank: usize,
    wanted: Option<&[Vec<u64>]>,
) -> H5Result<Vec<ChunkEntry>> {
    let key_size = 8 + 8 * (rank + 1);
    let decode = |k: &[u8]| -> Vec<u64> {
        (0..rank)
            .map(|i| crate::cursor::le_uint(&k[8 + 8 * i..16 + 8 * i]))
            .collect()
    };
    let descend = |lo: &[u8], hi: &[u8]| -> bool {
        match wanted {
            None => true,
            Some(w) => {
                let (lo, hi) = (decode(lo), decode(hi));
                let start = w.partition_point(|t| *t < lo);
                w.get(start).is_some_and(|t| *t <= hi)
            }
        }
    };
    let mut out = Vec::new();
    walk(f, root, 1, key_size, &descend, &mut |lo, _, child| {
        let size = u32::from_le_bytes([lo[0], lo[1], lo[2], lo[3]]);
        let mask = u32::from_le_bytes([lo[4], lo[5], lo[6], lo[7]]);
        out.push(ChunkEntry {
            offset: decode(lo),
            size,
            mask,
            addr: child,
        });
        Ok(())
    })?;
    Ok(out)
}
