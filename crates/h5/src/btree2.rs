//! Version 2 B-trees: the name and creation-order indexes of dense links and attributes, the
//! huge objects of fractal heaps, and the chunk index of datasets with several unlimited axes.
//!
//! Nodes are visited level by level; each level's nodes are fetched in one batch.

use std::collections::HashSet;

use neurochunk_store::Bytes;

use crate::cursor::{enc_size, le_uint};
use crate::error::{corrupt, H5Result};
use crate::file::Inner;
use crate::superblock::verify_checksum;

/// A version 2 B-tree's header and the node geometry derived from it.
#[derive(Debug)]
pub(crate) struct BTree2 {
    pub addr: u64,
    pub kind: u8,
    pub node_size: u64,
    pub rec_size: usize,
    depth: u16,
    root: Option<u64>,
    root_nrec: u64,
    /// Bytes of the "number of records" field of child pointers.
    max_nrec_size: usize,
    /// Per depth: bytes of the "total records" field of child pointers to nodes at that depth.
    cum_size: Vec<usize>,
}

/// Which subtrees a walk visits, given the records bounding them.
pub(crate) type KeepSubtree<'a> = dyn Fn(Option<&[u8]>, Option<&[u8]>) -> bool + 'a;

/// A node to visit: its address, depth, record count, and the records bounding it (the
/// parent's records on either side).
struct Pending {
    addr: u64,
    depth: u16,
    nrec: u64,
    lo: Option<Bytes>,
    hi: Option<Bytes>,
}

impl BTree2 {
    /// Read the header at `addr`.
    pub fn open(f: &Inner, addr: u64) -> H5Result<BTree2> {
        let what = "v2 B-tree header";
        let o = f.sizes.offset as u64;
        let l = f.sizes.length as u64;
        let block = f.read_structure(addr, 4 + 1 + 1 + 4 + 2 + 2 + 1 + 1 + o + 2 + l + 4, what)?;
        verify_checksum(&block, what, Some(addr))?;
        let mut c = f.cursor(&block, what, addr);
        if c.bytes(4)? != b"BTHD" {
            return Err(c.err("no BTHD signature"));
        }
        let version = c.u8()?;
        if version != 0 {
            return Err(c.err(format!("version {version}")));
        }
        let kind = c.u8()?;
        let node_size = u64::from(c.u32()?);
        let rec_size = c.u16()? as usize;
        let depth = c.u16()?;
        let _split = c.u8()?;
        let _merge = c.u8()?;
        let root = c.addr()?;
        let root_nrec = u64::from(c.u16()?);
        let _total = c.length()?;
        if rec_size == 0 || node_size < 10 + rec_size as u64 || node_size > (1 << 24) || depth > 32
        {
            return Err(c.err(format!(
                "nodes of {node_size} bytes, records of {rec_size} bytes, depth {depth}"
            )));
        }
        // Node geometry, as the library computes it.
        let leaf_max = (node_size - 10) / rec_size as u64;
        let max_nrec_size = enc_size(leaf_max);
        let mut cum_max = vec![leaf_max];
        let mut cum_size = vec![0usize];
        for d in 1..=depth as usize {
            let ptr = o + max_nrec_size as u64 + if d > 1 { cum_size[d - 1] as u64 } else { 0 };
            let max = node_size.saturating_sub(10 + ptr) / (rec_size as u64 + ptr);
            let cum = (max + 1).saturating_mul(cum_max[d - 1]).saturating_add(max);
            cum_max.push(cum);
            cum_size.push(enc_size(cum));
        }
        Ok(BTree2 {
            addr,
            kind,
            node_size,
            rec_size,
            depth,
            root,
            root_nrec,
            max_nrec_size,
            cum_size,
        })
    }

    /// Every record.
    pub fn records(&self, f: &Inner) -> H5Result<Vec<Bytes>> {
        self.records_where(f, &|_, _| true)
    }

    /// The records of every node whose bounding records (`lo`, `hi`: the parent's records on
    /// either side, `None` at the edges) `keep` accepts; the root is always visited. Internal
    /// nodes' records are returned whether or not the caller wants them.
    pub fn records_where(&self, f: &Inner, keep: &KeepSubtree) -> H5Result<Vec<Bytes>> {
        let mut out = Vec::new();
        let Some(root) = self.root else {
            return Ok(out);
        };
        if self.root_nrec == 0 {
            return Ok(out);
        }
        let mut level = vec![Pending {
            addr: root,
            depth: self.depth,
            nrec: self.root_nrec,
            lo: None,
            hi: None,
        }];
        let mut seen = HashSet::new();
        let limit = f.io.size() / self.node_size.max(1) + 1;
        while !level.is_empty() {
            f.prefetch(
                &level
                    .iter()
                    .map(|p| (p.addr, self.node_size))
                    .collect::<Vec<_>>(),
            )?;
            let mut next = Vec::new();
            for node in level {
                if !seen.insert(node.addr) || seen.len() as u64 > limit {
                    return Err(corrupt(
                        "v2 B-tree",
                        Some(self.addr),
                        format!("node at {:#x} visited twice (a loop)", node.addr),
                    ));
                }
                self.read_node(f, node, &mut out, &mut next, keep)?;
            }
            level = next;
        }
        Ok(out)
    }

    fn read_node(
        &self,
        f: &Inner,
        node: Pending,
        out: &mut Vec<Bytes>,
        next: &mut Vec<Pending>,
        keep: &KeepSubtree,
    ) -> H5Result<()> {
        let leaf = node.depth == 0;
        let what = if leaf {
            "v2 B-tree leaf node"
        } else {
            "v2 B-tree internal node"
        };
        let block = f.read_structure(node.addr, self.node_size, what)?;
        let mut c = f.cursor(&block, what, node.addr);
        let sig = c.bytes(4)?;
        if sig != if leaf { b"BTLF" } else { b"BTIN" } {
            return Err(c.err("bad signature"));
        }
        let version = c.u8()?;
        let kind = c.u8()?;
        if version != 0 || kind != self.kind {
            return Err(c.err(format!(
                "version {version}, type {kind} (tree type {})",
                self.kind
            )));
        }
        let nrec = usize::try_from(node.nrec).unwrap_or(usize::MAX);
        if nrec.saturating_mul(self.rec_size) > c.remaining() {
            return Err(c.err(format!("{nrec} records do not fit the node")));
        }
        let mut records = Vec::with_capacity(nrec);
        for _ in 0..nrec {
            let start = c.pos();
            c.skip(self.rec_size)?;
            records.push(block.slice(start..start + self.rec_size));
        }
        if !leaf {
            let child_depth = node.depth - 1;
            for i in 0..=nrec {
                let addr = c.addr_required("child node address")?;
                let child_nrec = le_uint(c.bytes(self.max_nrec_size)?);
                if node.depth > 1 {
                    let n = self
                        .cum_size
                        .get(node.depth as usize - 1)
                        .copied()
                        .unwrap_or(8);
                    c.skip(n)?;
                }
                let lo = if i == 0 {
                    node.lo.clone()
                } else {
                    Some(records[i - 1].clone())
                };
                let hi = if i == nrec {
                    node.hi.clone()
                } else {
                    Some(records[i].clone())
                };
                if keep(lo.as_deref(), hi.as_deref()) && child_nrec > 0 {
                    next.push(Pending {
                        addr,
                        depth: child_depth,
                        nrec: child_nrec,
                        lo,
                        hi,
                    });
                }
            }
        }
        let end = c.pos() + 4;
        let used = block
            .get(..end)
            .ok_or_else(|| c.err("no room for the checksum"))?;
        verify_checksum(used, what, Some(node.addr))?;
        out.extend(records);
        Ok(())
    }
}
