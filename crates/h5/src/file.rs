//! An open file: the store object, its superblock, caches, and path resolution.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use neurochunk_store::{Bytes, Store};

use crate::attribute::Attribute;
use crate::cursor::{Cursor, Sizes};
use crate::dataset::Dataset;
use crate::datatype::Datatype;
use crate::error::{corrupt, not_found, unsupported, ErrorKind, H5Error, H5Result};
use crate::group::{read_links, Group};
use crate::heap::{FractalHeap, GlobalHeap};
use crate::io::Io;
use crate::messages::{kind, Link, LinkTarget};
use crate::ohdr::{read_object_header, ObjectHeader};
use crate::superblock::{read_superblock, verify_checksum, RootGroup, Superblock};

/// How to open a file: the metadata page cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenOptions {
    /// The size of the metadata pages read from the store (at least 512 bytes). Every
    /// metadata read fetches the aligned pages covering it; later reads in the same pages
    /// cost nothing.
    pub page_size: u64,
    /// How many bytes to fetch at the start of the file when opening it (one request): the
    /// superblock, and usually the root group and much of the metadata of a small file.
    pub initial_read: u64,
    /// At most how many bytes to fetch at the end of the file when opening it, in the same
    /// batch as the start (no more than a 64th of the file): writers put there what they
    /// write or grow last, often the root group's links and the indexes of large groups.
    pub tail_read: u64,
    /// About how many bytes of pages to keep per open file.
    pub cache_bytes: usize,
    /// Chunks (and parts of contiguous data) of one read less than this many bytes apart in
    /// the file are fetched with one range request, the bytes between them read and dropped:
    /// fewer requests to a remote store for little extra transfer.
    pub read_gap: u64,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            page_size: 256 * 1024,
            initial_read: 256 * 1024,
            tail_read: 1024 * 1024,
            cache_bytes: 64 * 1024 * 1024,
            read_gap: 64 * 1024,
        }
    }
}

/// One entry of the shared object header message table.
#[derive(Clone, Debug)]
struct SohmIndex {
    /// Message types (bit `1 << type`: dataspace 0x02, datatype 0x08, fill 0x20, pipeline
    /// 0x800, attribute 0x1000).
    types: u16,
    heap: Option<u64>,
}

/// Most global heap collections and object headers kept per file.
const MAX_CACHED: usize = 1024;

/// The shared state of an open file.
pub(crate) struct Inner {
    pub io: Io,
    pub name: Arc<str>,
    pub sb: Superblock,
    pub sizes: Sizes,
    pub base: u64,
    pub read_gap: u64,
    sohm: OnceLock<Result<Vec<SohmIndex>, H5Error>>,
    gheaps: Mutex<HashMap<u64, Arc<GlobalHeap>>>,
    headers: Mutex<HashMap<u64, Arc<ObjectHeader>>>,
    links: Mutex<HashMap<u64, Arc<Vec<Link>>>>,
    paths: OnceLock<Result<Arc<HashMap<u64, String>>, H5Error>>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H5File")
            .field("name", &self.name)
            .field("superblock", &self.sb.version)
            .field("base", &self.base)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Inner {
    /// The absolute position of relative address `addr`.
    pub fn abs(&self, addr: u64) -> H5Result<u64> {
        self.base
            .checked_add(addr)
            .ok_or_else(|| corrupt("file", Some(addr), "address overflows"))
    }

    /// A cursor over a structure's bytes.
    pub fn cursor<'a>(&self, data: &'a [u8], what: &'static str, addr: u64) -> Cursor<'a> {
        Cursor::new(data, what, Some(addr), self.sizes)
    }

    /// `len` bytes of the structure `what` at relative address `addr` (through the page
    /// cache); a structure that does not fit the file is corrupt.
    pub fn read_structure(&self, addr: u64, len: u64, what: &'static str) -> H5Result<Bytes> {
        let abs = self.abs(addr)?;
        if abs.checked_add(len).is_none_or(|e| e > self.io.size()) {
            return Err(corrupt(
                what,
                Some(addr),
                format!("{len} bytes do not fit the file ({} bytes)", self.io.size()),
            ));
        }
        self.io.read(abs, len)
    }

    /// Up to `len` bytes at `addr` (fewer at the end of the file).
    pub fn read_upto(&self, addr: u64, len: u64) -> H5Result<Bytes> {
        let abs = self.abs(addr)?;
        if abs >= self.io.size() {
            return Err(corrupt(
                "file",
                Some(addr),
                "an address past the end of the file",
            ));
        }
        self.io.read(abs, len.min(self.io.size() - abs))
    }

    /// Fetch the pages of many structures (relative address, length) in one batch.
    pub fn prefetch(&self, spans: &[(u64, u64)]) -> H5Result<()> {
        let abs: Vec<(u64, u64)> = spans
            .iter()
            .filter_map(|&(a, l)| self.base.checked_add(a).map(|x| (x, l)))
            .collect();
        self.io.prefetch(&abs)
    }

    /// The object header at `addr` (cached).
    pub fn header(&self, addr: u64) -> H5Result<Arc<ObjectHeader>> {
        if let Some(h) = lock(&self.headers).get(&addr) {
            return Ok(h.clone());
        }
        let h = Arc::new(read_object_header(self, addr)?);
        let mut cache = lock(&self.headers);
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(addr, h.clone());
        Ok(h)
    }

    /// Object `index` of the global heap collection at `addr` (collections cached).
    pub fn global_heap_object(&self, addr: u64, index: u32) -> H5Result<Bytes> {
        let heap = {
            let cached = lock(&self.gheaps).get(&addr).cloned();
            match cached {
                Some(h) => h,
                None => {
                    let h = Arc::new(GlobalHeap::read(self, addr)?);
                    let mut cache = lock(&self.gheaps);
                    if cache.len() >= MAX_CACHED {
                        cache.clear();
                    }
                    cache.insert(addr, h.clone());
                    h
                }
            }
        };
        u16::try_from(index)
            .ok()
            .and_then(|i| heap.objects.get(&i).cloned())
            .ok_or_else(|| {
                corrupt(
                    "global heap collection",
                    Some(addr),
                    format!("no object {index}"),
                )
            })
    }

    fn sohm_table(&self) -> H5Result<&Vec<SohmIndex>> {
        self.sohm
            .get_or_init(|| self.load_sohm())
            .as_ref()
            .map_err(Clone::clone)
    }

    fn load_sohm(&self) -> Result<Vec<SohmIndex>, H5Error> {
        let Some(ext) = self.sb.extension else {
            return Ok(Vec::new());
        };
        let header = self.header(ext)?;
        let Some(msg) = header.first(kind::SOHM_TABLE) else {
            return Ok(Vec::new());
        };
        let mut c = self.cursor(&msg.data, "shared message table message", ext);
        let _version = c.u8()?;
        let table = c.addr_required("shared message table address")?;
        let n = c.u8()? as u64;
        let o = self.sizes.offset as u64;
        let what = "shared object header message table";
        let block = self.read_structure(table, 4 + n * (14 + 2 * o) + 4, what)?;
        verify_checksum(&block, what, Some(table))?;
        let mut c = self.cursor(&block, what, table);
        if c.bytes(4)? != b"SMTB" {
            return Err(c.err("no SMTB signature"));
        }
        let mut out = Vec::new();
        for _ in 0..n {
            let _version = c.u8()?;
            let _index_type = c.u8()?;
            let types = c.u16()?;
            let _min_size = c.u32()?;
            let _list_max = c.u16()?;
            let _btree_min = c.u16()?;
            let _count = c.u16()?;
            let _index = c.addr()?;
            let heap = c.addr()?;
            out.push(SohmIndex { types, heap });
        }
        Ok(out)
    }

    /// The body of a message of type `mtype` kept in the shared message table's heap.
    pub fn sohm_message(&self, mtype: u16, id: &[u8]) -> H5Result<Bytes> {
        // Each index lists the message types it holds as bits `1 << type`.
        let flag = 1u16.checked_shl(u32::from(mtype)).unwrap_or(0);
        let table = self.sohm_table()?;
        let index = table.iter().find(|i| i.types & flag != 0).ok_or_else(|| {
            corrupt(
                "shared message",
                None,
                format!("message type {mtype:#x} is shared, but no index of the table holds it"),
            )
        })?;
        let heap_addr = index
            .heap
            .ok_or_else(|| corrupt("shared message table", None, "an index without a heap"))?;
        let heap = FractalHeap::open(self, heap_addr)?;
        heap.get(self, id)
    }

    /// The links of the group whose header is `header` (cached by address).
    pub fn links_of(&self, header: &ObjectHeader) -> H5Result<Arc<Vec<Link>>> {
        if let Some(l) = lock(&self.links).get(&header.addr) {
            return Ok(l.clone());
        }
        let links = Arc::new(read_links(self, header)?);
        let mut cache = lock(&self.links);
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(header.addr, links.clone());
        Ok(links)
    }

    /// The root group's object header address.
    pub fn root_addr(&self) -> u64 {
        match self.sb.root {
            RootGroup::Header(a) => a,
            RootGroup::Entry { header, .. } => header,
        }
    }

    /// The path of the object at `addr` (the first found by a depth-first walk of the
    /// hierarchy in name order), walking the file once.
    pub fn path_of(&self, addr: u64) -> H5Result<Option<String>> {
        let map = self
            .paths
            .get_or_init(|| self.walk_paths().map(Arc::new))
            .as_ref()
            .map_err(Clone::clone)?;
        Ok(map.get(&addr).cloned())
    }

    fn walk_paths(&self) -> H5Result<HashMap<u64, String>> {
        let mut map = HashMap::new();
        let mut stack = vec![(self.root_addr(), "/".to_string())];
        let limit = (self.io.size() / 16).max(1024);
        while let Some((addr, path)) = stack.pop() {
            if map.contains_key(&addr) {
                continue;
            }
            if map.len() as u64 > limit {
                return Err(corrupt("file", None, "more objects than the file can hold"));
            }
            map.insert(addr, path.clone());
            let header = self.header(addr)?;
            if !is_group(&header) {
                continue;
            }
            let links = self.links_of(&header)?;
            let mut children: Vec<(u64, String)> = links
                .iter()
                .filter_map(|l| match l.target {
                    LinkTarget::Hard(a) => Some((a, join(&path, &l.name))),
                    _ => None,
                })
                .collect();
            let spans: Vec<(u64, u64)> = children
                .iter()
                .filter(|(a, _)| !map.contains_key(a))
                .map(|&(a, _)| (a, 512))
                .collect();
            self.prefetch(&spans)?;
            children.reverse();
            stack.extend(children.into_iter().filter(|(a, _)| !map.contains_key(a)));
        }
        Ok(map)
    }
}

/// `parent/name`.
pub(crate) fn join(parent: &str, name: &str) -> String {
    if parent.ends_with('/') {
        format!("{parent}{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// Whether a header describes a group (a symbol table or link info message, links, or no
/// dataset or datatype messages at all).
pub(crate) fn is_group(h: &ObjectHeader) -> bool {
    h.first(kind::SYMBOL_TABLE).is_some()
        || h.first(kind::LINK_INFO).is_some()
        || h.first(kind::LINK).is_some()
        || (h.first(kind::LAYOUT).is_none() && h.first(kind::DATATYPE).is_none())
}

/// A committed (named) datatype.
#[derive(Clone, Debug)]
pub struct NamedType {
    file: H5File,
    addr: u64,
    path: String,
    dtype: Datatype,
}

impl NamedType {
    /// Its object header address (its identity).
    pub fn address(&self) -> u64 {
        self.addr
    }

    /// The path it was opened by.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The type.
    pub fn dtype(&self) -> &Datatype {
        &self.dtype
    }

    /// Its attributes, sorted by name.
    pub fn attributes(&self) -> H5Result<Vec<Attribute>> {
        let inner = &self.file.inner;
        let header = inner
            .header(self.addr)
            .map_err(|e| self.file.err(e, &self.path))?;
        crate::attribute::read_attributes(&self.file, &header)
            .map_err(|e| self.file.err(e, &self.path))
    }
}

/// An object of the file.
#[derive(Clone, Debug)]
pub enum Object {
    /// A group.
    Group(Group),
    /// A dataset.
    Dataset(Dataset),
    /// A committed datatype.
    NamedType(NamedType),
}

impl Object {
    /// Its object header address (its identity: the same object under two names has one
    /// address).
    pub fn address(&self) -> u64 {
        match self {
            Object::Group(g) => g.address(),
            Object::Dataset(d) => d.address(),
            Object::NamedType(t) => t.address(),
        }
    }

    /// The path it was opened by.
    pub fn path(&self) -> &str {
        match self {
            Object::Group(g) => g.path(),
            Object::Dataset(d) => d.path(),
            Object::NamedType(t) => t.path(),
        }
    }

    /// The group, if it is one.
    pub fn as_group(&self) -> Option<&Group> {
        match self {
            Object::Group(g) => Some(g),
            _ => None,
        }
    }

    /// The dataset, if it is one.
    pub fn as_dataset(&self) -> Option<&Dataset> {
        match self {
            Object::Dataset(d) => Some(d),
            _ => None,
        }
    }

    /// Its attributes, sorted by name.
    pub fn attributes(&self) -> H5Result<Vec<Attribute>> {
        match self {
            Object::Group(g) => g.attributes(),
            Object::Dataset(d) => d.attributes(),
            Object::NamedType(t) => t.attributes(),
        }
    }
}

/// An HDF5 file opened for reading from a [`Store`]. Cheap to clone (the state is shared);
/// `Send` and `Sync`.
#[derive(Clone)]
pub struct H5File {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for H5File {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

/// Whether the value at `key` of `store` is an HDF5 file: the HDF5 signature at byte 0 or at
/// 512, 1024, 2048, ... (after a user block). `Ok(false)` for a missing key.
pub fn is_hdf5(store: &dyn Store, key: &str) -> H5Result<bool> {
    let Some(size) = store.size(key)? else {
        return Ok(false);
    };
    let mut at = 0u64;
    while at.checked_add(8).is_some_and(|end| end <= size) {
        let parts = store.get_ranges(
            key,
            &[neurochunk_store::ByteRange::FromStart {
                offset: at,
                length: Some(8),
            }],
        )?;
        if parts.is_some_and(|p| {
            p.first()
                .is_some_and(|b| b[..] == crate::superblock::SIGNATURE)
        }) {
            return Ok(true);
        }
        at = if at == 0 { 512 } else { at.saturating_mul(2) };
    }
    Ok(false)
}

/// Most soft links followed resolving one path.
const MAX_SOFT_LINKS: u32 = 16;

impl H5File {
    /// Open the HDF5 file stored at `key` in `store`, with the default [`OpenOptions`].
    /// `name` is how errors name the file (a file name or URL).
    pub fn open(store: Arc<dyn Store>, key: &str, name: &str) -> H5Result<H5File> {
        H5File::open_with(store, key, name, OpenOptions::default())
    }

    /// Open the HDF5 file stored at `key` in `store` if there is one: `None` when nothing is
    /// stored at `key` or what is stored there is not an HDF5 file. One size request and one
    /// read of the file's first [`OpenOptions::initial_read`] bytes decide it, the read the
    /// open needs anyway (no separate look at the signature first).
    pub fn probe(store: Arc<dyn Store>, key: &str, name: &str) -> H5Result<Option<H5File>> {
        match H5File::open_with(store, key, name, OpenOptions::default()) {
            Ok(file) => Ok(Some(file)),
            Err(e) if matches!(e.kind(), ErrorKind::NotHdf5(_) | ErrorKind::NotFound(_)) => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Open the HDF5 file stored at `key` in `store` with `options`.
    pub fn open_with(
        store: Arc<dyn Store>,
        key: &str,
        name: &str,
        options: OpenOptions,
    ) -> H5Result<H5File> {
        let name: Arc<str> = Arc::from(name);
        let fail = |e: H5Error| e.in_file(&name);
        let size = store
            .size(key)
            .map_err(|e| fail(e.into()))?
            .ok_or_else(|| fail(not_found(format!("no value at '{key}' in the store"))))?;
        let io = Io::new(store, key, size, options.page_size, options.cache_bytes);
        let tail = options.tail_read.min(size / 64);
        let mut first = vec![(0, options.initial_read.max(512))];
        if tail > 0 {
            first.push((size - tail, tail));
        }
        io.prefetch(&first).map_err(fail)?;
        let sb = read_superblock(&io).map_err(fail)?;
        if let Some(addr) = sb.driver_info {
            // version, reserved, size, then the driver's name.
            let name = sb
                .base
                .checked_add(addr)
                .and_then(|abs| io.read(abs.checked_add(8)?, 8).ok())
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            return Err(fail(unsupported(format!(
                "a file of the '{}' file driver (its addresses span several files)",
                name.trim_end_matches('\0')
            ))));
        }
        let inner = Inner {
            io,
            name: name.clone(),
            sizes: sb.sizes,
            base: sb.base,
            read_gap: options.read_gap,
            sb,
            sohm: OnceLock::new(),
            gheaps: Mutex::new(HashMap::new()),
            headers: Mutex::new(HashMap::new()),
            links: Mutex::new(HashMap::new()),
            paths: OnceLock::new(),
        };
        Ok(H5File {
            inner: Arc::new(inner),
        })
    }

    /// Attribute an error to this file and `path`.
    pub(crate) fn err(&self, e: H5Error, path: &str) -> H5Error {
        e.at(path).in_file(&self.inner.name)
    }

    /// The display name given at open.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The store the file is read from.
    pub fn store(&self) -> &Arc<dyn Store> {
        self.inner.io.location().0
    }

    /// The key of the file in its store.
    pub fn key(&self) -> &str {
        self.inner.io.location().1
    }

    /// The size of the file in bytes.
    pub fn size(&self) -> u64 {
        self.inner.io.size()
    }

    /// The size of the user block: where the superblock (and the HDF5 data) starts. HDF5
    /// addresses are relative to it; chunk and contiguous byte offsets this crate reports
    /// are absolute (they include it).
    pub fn userblock(&self) -> u64 {
        self.inner.base
    }

    /// The superblock version (0 to 3).
    pub fn superblock_version(&self) -> u8 {
        self.inner.sb.version
    }

    /// The root group.
    pub fn root(&self) -> H5Result<Group> {
        let addr = self.inner.root_addr();
        match self.object_at(addr, "/")? {
            Object::Group(g) => Ok(g),
            _ => Err(self.err(corrupt("root group", Some(addr), "not a group"), "/")),
        }
    }

    /// The object at header address `addr`, known by `path` (used in errors and reported by
    /// the object).
    pub fn object_at(&self, addr: u64, path: &str) -> H5Result<Object> {
        let header = self.inner.header(addr).map_err(|e| self.err(e, path))?;
        if header.first(kind::LAYOUT).is_some() {
            return Ok(Object::Dataset(
                Dataset::new(self.clone(), header, path.to_string())
                    .map_err(|e| self.err(e, path))?,
            ));
        }
        if !is_group(&header) {
            let msg = header.first(kind::DATATYPE).ok_or_else(|| {
                self.err(corrupt("object header", Some(addr), "no datatype"), path)
            })?;
            let body =
                crate::ohdr::message_body(&self.inner, msg, addr).map_err(|e| self.err(e, path))?;
            let dtype = crate::messages::datatype_from(&body, self.inner.sizes, Some(addr))
                .map_err(|e| self.err(e, path))?;
            return Ok(Object::NamedType(NamedType {
                file: self.clone(),
                addr,
                path: path.to_string(),
                dtype,
            }));
        }
        Ok(Object::Group(Group::new(
            self.clone(),
            header,
            path.to_string(),
        )))
    }

    /// The object at `path` (absolute, or relative to the root), following hard links and
    /// soft links inside the file; an external link on the way is an error (it is never
    /// followed).
    pub fn object(&self, path: &str) -> H5Result<Object> {
        let (addr, canonical) = self.resolve(path, &mut 0).map_err(|e| self.err(e, path))?;
        self.object_at(addr, &canonical)
    }

    /// The dataset at `path` (an error if the object is not a dataset).
    pub fn dataset(&self, path: &str) -> H5Result<Dataset> {
        match self.object(path)? {
            Object::Dataset(d) => Ok(d),
            _ => Err(self.err(crate::error::invalid("not a dataset"), path)),
        }
    }

    /// The group at `path` (an error if the object is not a group).
    pub fn group(&self, path: &str) -> H5Result<Group> {
        match self.object(path)? {
            Object::Group(g) => Ok(g),
            _ => Err(self.err(crate::error::invalid("not a group"), path)),
        }
    }

    /// The address and path of the object at `path`.
    fn resolve(&self, path: &str, soft: &mut u32) -> H5Result<(u64, String)> {
        let mut addr = self.inner.root_addr();
        let mut cur = "/".to_string();
        let parts: Vec<&str> = path
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        for part in parts {
            let header = self.inner.header(addr)?;
            if !is_group(&header) {
                return Err(not_found(format!("'{cur}' is not a group")));
            }
            let links = self.inner.links_of(&header)?;
            let link = links
                .iter()
                .find(|l| l.name == part)
                .ok_or_else(|| not_found(format!("no link '{part}' in '{cur}'")))?;
            let next = join(&cur, part);
            match &link.target {
                LinkTarget::Hard(a) => addr = *a,
                LinkTarget::Soft(target) => {
                    *soft += 1;
                    if *soft > MAX_SOFT_LINKS {
                        return Err(not_found(format!(
                            "more than {MAX_SOFT_LINKS} soft links resolving '{path}' (a loop?)"
                        )));
                    }
                    let absolute = if target.starts_with('/') {
                        target.clone()
                    } else {
                        join(&cur, target)
                    };
                    addr = self.resolve(&absolute, soft)?.0;
                }
                LinkTarget::External { file, path: p } => {
                    return Err(H5Error::new(ErrorKind::Unsupported(format!(
                        "'{next}' is an external link to '{p}' in '{file}' (not followed)"
                    ))));
                }
                LinkTarget::UserDefined { link_type, .. } => {
                    return Err(unsupported(format!(
                        "'{next}' is a user-defined link of type {link_type}"
                    )));
                }
            }
            cur = next;
        }
        Ok((addr, cur))
    }

    /// Whether `path` leads to an object (following soft links inside the file); a dangling
    /// soft link, a missing name or an external link on the way give `false`.
    pub fn exists(&self, path: &str) -> H5Result<bool> {
        match self.resolve(path, &mut 0) {
            Ok((addr, _)) => match self.inner.header(addr) {
                Ok(_) => Ok(true),
                Err(e) if e.is_store_error() => Err(self.err(e, path)),
                Err(_) => Ok(false),
            },
            Err(e) if e.is_store_error() => Err(self.err(e, path)),
            Err(_) => Ok(false),
        }
    }

    /// The path of the object whose header is at `address` (as references store it): the
    /// first path found walking the hierarchy depth-first in name order (as the HDF5 library
    /// names reference targets), or `None` when no hard link leads to it. The first call
    /// walks the whole file once; later calls use the result.
    pub fn path_of(&self, address: u64) -> H5Result<Option<String>> {
        self.inner.path_of(address).map_err(|e| self.err(e, ""))
    }

    /// Fetch the object headers at `addresses` in one batch of reads (e.g. every child of a
    /// group before opening them one by one): a remote store then serves them with requests
    /// in flight together.
    pub fn prefetch(&self, addresses: &[u64]) -> H5Result<()> {
        let spans: Vec<(u64, u64)> = addresses.iter().map(|&a| (a, 512)).collect();
        self.inner.prefetch(&spans).map_err(|e| self.err(e, ""))
    }

    /// Fetch into the page cache, in one batch, the pages covering each of `spans`
    /// (absolute byte offset, length): later reads of them (of small datasets' elements, say)
    /// are answered without a request each.
    pub fn prefetch_spans(&self, spans: &[(u64, u64)]) -> H5Result<()> {
        self.inner.io.prefetch(spans).map_err(|e| self.err(e, ""))
    }

    /// The bytes of `spans` (absolute byte offsets in the stored file, user block included,
    /// and lengths), in the order given: what the metadata cache holds is taken from it, the
    /// rest read past it in batches of many requests (one [`Store::get_many`] call per batch).
    /// How a caller reads the data of contiguous datasets or other byte ranges it found in
    /// the file's structures.
    pub fn read_spans(&self, spans: &[(u64, u64)]) -> H5Result<Vec<Bytes>> {
        self.inner.io.read_many(spans).map_err(|e| self.err(e, ""))
    }

    /// Every object reachable from the root by hard links, with the first path found for
    /// each (depth-first in name order), each object once.
    pub fn walk(&self) -> H5Result<Vec<(String, Object)>> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut stack = vec![(self.inner.root_addr(), "/".to_string())];
        let limit = (self.size() / 16).max(1024);
        while let Some((addr, path)) = stack.pop() {
            if !seen.insert(addr) {
                continue;
            }
            if seen.len() as u64 > limit {
                return Err(self.err(
                    corrupt("file", None, "more objects than the file can hold"),
                    "",
                ));
            }
            let obj = self.object_at(addr, &path)?;
            if let Object::Group(g) = &obj {
                let links = g.links()?;
                let children: Vec<u64> = links
                    .iter()
                    .filter_map(|l| match l.target {
                        LinkTarget::Hard(a) if !seen.contains(&a) => Some(a),
                        _ => None,
                    })
                    .collect();
                self.prefetch(&children)?;
                for l in links.iter().rev() {
                    if let LinkTarget::Hard(a) = l.target {
                        if !seen.contains(&a) {
                            stack.push((a, join(&path, &l.name)));
                        }
                    }
                }
            }
            out.push((path, obj));
        }
        Ok(out)
    }
}
