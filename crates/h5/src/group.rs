//! Groups and their links: old-style groups (symbol table: v1 B-tree, local heap, symbol table
//! nodes) and new-style groups (link messages; dense storage in a fractal heap indexed by a v2
//! B-tree).

use std::sync::Arc;

use crate::attribute::{read_attributes, Attribute};
use crate::btree1::group_nodes;
use crate::btree2::BTree2;
use crate::error::{corrupt, not_found, H5Result};
use crate::file::{join, H5File, Inner, Object};
use crate::heap::{FractalHeap, LocalHeap};
use crate::messages::{kind, parse_link, parse_link_info, parse_symbol_table, Link, LinkTarget};
use crate::ohdr::ObjectHeader;

/// A group.
#[derive(Clone, Debug)]
pub struct Group {
    file: H5File,
    header: Arc<ObjectHeader>,
    path: String,
}

impl Group {
    pub(crate) fn new(file: H5File, header: Arc<ObjectHeader>, path: String) -> Group {
        Group { file, header, path }
    }

    /// Its object header address (its identity).
    pub fn address(&self) -> u64 {
        self.header.addr
    }

    /// The path it was opened by.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The file it belongs to.
    pub fn file(&self) -> &H5File {
        &self.file
    }

    /// Its modification time (seconds since 1970, UTC), when the file tracks it.
    pub fn modification_time(&self) -> Option<u64> {
        self.header.mtime()
    }

    /// Its links, sorted by name. Soft and external links are reported, not followed; hard
    /// links give the object's address.
    pub fn links(&self) -> H5Result<Vec<Link>> {
        self.file
            .inner
            .links_of(&self.header)
            .map(|l| l.as_ref().clone())
            .map_err(|e| self.file.err(e, &self.path))
    }

    /// The link called `name`, if any.
    pub fn link(&self, name: &str) -> H5Result<Option<Link>> {
        let links = self
            .file
            .inner
            .links_of(&self.header)
            .map_err(|e| self.file.err(e, &self.path))?;
        Ok(links.iter().find(|l| l.name == name).cloned())
    }

    /// The object `name` leads to (following soft links inside the file).
    pub fn get(&self, name: &str) -> H5Result<Object> {
        let link = self.link(name)?.ok_or_else(|| {
            self.file
                .err(not_found(format!("no link '{name}'")), &self.path)
        })?;
        let path = join(&self.path, name);
        match link.target {
            LinkTarget::Hard(a) => self.file.object_at(a, &path),
            _ => self.file.object(&path),
        }
    }

    /// The objects of its hard links, by name (their headers fetched in one batch).
    pub fn members(&self) -> H5Result<Vec<(String, Object)>> {
        let links = self.links()?;
        let addrs: Vec<u64> = links
            .iter()
            .filter_map(|l| match l.target {
                LinkTarget::Hard(a) => Some(a),
                _ => None,
            })
            .collect();
        self.file.prefetch(&addrs)?;
        let mut out = Vec::with_capacity(addrs.len());
        for l in links {
            if let LinkTarget::Hard(a) = l.target {
                let obj = self.file.object_at(a, &join(&self.path, &l.name))?;
                out.push((l.name, obj));
            }
        }
        Ok(out)
    }

    /// Its attributes, sorted by name.
    pub fn attributes(&self) -> H5Result<Vec<Attribute>> {
        read_attributes(&self.file, &self.header).map_err(|e| self.file.err(e, &self.path))
    }

    /// The attribute called `name`, if any.
    pub fn attribute(&self, name: &str) -> H5Result<Option<Attribute>> {
        Ok(self.attributes()?.into_iter().find(|a| a.name() == name))
    }
}

/// Every link of the group whose header is `h`, sorted by name.
pub(crate) fn read_links(f: &Inner, h: &ObjectHeader) -> H5Result<Vec<Link>> {
    let mut links = Vec::new();
    if let Some(msg) = h.first(kind::SYMBOL_TABLE) {
        let mut c = f.cursor(&msg.data, "symbol table message", h.addr);
        let (btree, heap) = parse_symbol_table(&mut c)?;
        links = symbol_table_links(f, btree, heap)?;
    }
    for msg in h.all(kind::LINK) {
        let body = crate::ohdr::message_body(f, msg, h.addr)?;
        let mut c = f.cursor(&body, "link message", h.addr);
        links.push(parse_link(&mut c)?);
    }
    if let Some(msg) = h.first(kind::LINK_INFO) {
        let mut c = f.cursor(&msg.data, "link info message", h.addr);
        let info = parse_link_info(&mut c)?;
        if let (Some(heap), Some(index)) = (info.heap, info.name_index) {
            let heap = FractalHeap::open(f, heap)?;
            let tree = BTree2::open(f, index)?;
            if tree.kind != 5 {
                return Err(corrupt(
                    "v2 B-tree header",
                    Some(index),
                    format!("record type {} for a link name index", tree.kind),
                ));
            }
            for rec in tree.records(f)? {
                let id = rec.get(4..).unwrap_or(&[]);
                let body = heap.get(f, id)?;
                let mut c = f.cursor(&body, "link message", index);
                links.push(parse_link(&mut c)?);
            }
        }
    }
    links.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    links.dedup_by(|a, b| a.name == b.name);
    Ok(links)
}

/// The links of an old-style group: its symbol table nodes' entries.
fn symbol_table_links(f: &Inner, btree: u64, heap_addr: u64) -> H5Result<Vec<Link>> {
    let heap = LocalHeap::read(f, heap_addr)?;
    let nodes = group_nodes(f, btree)?;
    let o = f.sizes.offset as u64;
    let l = f.sizes.length as u64;
    let entry = l + o + 24;
    f.prefetch(
        &nodes
            .iter()
            .map(|&a| (a, 8 + 64 * entry))
            .collect::<Vec<_>>(),
    )?;
    let mut out = Vec::new();
    for node in nodes {
        let what = "symbol table node";
        let head = f.read_structure(node, 8, what)?;
        let mut c = f.cursor(&head, what, node);
        if c.bytes(4)? != b"SNOD" {
            return Err(c.err("no SNOD signature"));
        }
        let version = c.u8()?;
        if version != 1 {
            return Err(c.err(format!("version {version}")));
        }
        c.skip(1)?;
        let n = u64::from(c.u16()?);
        let block = f.read_structure(node, 8 + n * entry, what)?;
        let mut c = f.cursor(&block, what, node);
        c.seek(8)?;
        for _ in 0..n {
            let name_off = c.length()?;
            let addr = c.addr()?;
            let cache_type = c.u32()?;
            c.skip(4)?;
            let scratch = c.bytes(16)?;
            let name = heap.string_at(name_off)?;
            let target = if cache_type == 2 {
                let off = u32::from_le_bytes([scratch[0], scratch[1], scratch[2], scratch[3]]);
                LinkTarget::Soft(heap.string_at(u64::from(off))?)
            } else {
                LinkTarget::Hard(addr.ok_or_else(|| {
                    corrupt(
                        what,
                        Some(node),
                        format!("entry '{name}' has no object address"),
                    )
                })?)
            };
            out.push(Link {
                name,
                target,
                creation_order: None,
            });
        }
    }
    Ok(out)
}
