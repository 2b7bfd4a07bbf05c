//! Object headers (versions 1 and 2) with their continuation blocks, and shared messages
//! (committed datatypes and the shared object header message table).

use std::collections::HashSet;

use neurochunk_store::Bytes;

use crate::error::{corrupt, unsupported, H5Result};
use crate::file::Inner;
use crate::messages::{kind, parse_shared, Shared};
use crate::superblock::verify_checksum;

/// At most this many continuation blocks per object header.
const MAX_CHUNKS: usize = 4096;
/// At most this many messages per object header.
const MAX_MESSAGES: usize = 1 << 20;

/// One message of an object header.
#[derive(Clone, Debug)]
pub(crate) struct Message {
    /// The message type.
    pub kind: u16,
    /// The message flags (bit 1: shared).
    pub flags: u8,
    /// The body (a shared message reference when shared).
    pub data: Bytes,
    /// The creation order (attribute messages of version 2 headers that track it).
    pub order: Option<u16>,
}

impl Message {
    /// Whether the body is a reference to a shared message.
    pub fn is_shared(&self) -> bool {
        self.flags & 0x02 != 0
    }
}

/// A parsed object header: its messages in order, over every continuation block.
#[derive(Debug)]
pub(crate) struct ObjectHeader {
    /// Its address.
    pub addr: u64,
    /// Every message but NIL and continuation messages.
    pub messages: Vec<Message>,
    /// The modification time stored in a version 2 header's prefix (seconds since 1970).
    pub prefix_mtime: Option<u32>,
}

impl ObjectHeader {
    /// The modification time (seconds since 1970, UTC), from the header prefix, the
    /// modification time message or the old one (ASCII `YYYYMMDDhhmmss`).
    pub fn mtime(&self) -> Option<u64> {
        if let Some(t) = self.prefix_mtime {
            return Some(u64::from(t));
        }
        if let Some(m) = self.first(crate::messages::kind::MTIME) {
            let d = &m.data;
            if d.len() >= 8 && d[0] == 1 {
                return Some(u64::from(u32::from_le_bytes([d[4], d[5], d[6], d[7]])));
            }
        }
        let m = self.first(crate::messages::kind::MTIME_OLD)?;
        let digits = m.data.get(..14)?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let num = |a: usize, b: usize| -> i64 {
            digits[a..b]
                .iter()
                .fold(0i64, |acc, &x| acc * 10 + i64::from(x - b'0'))
        };
        let (y, mo, d) = (num(0, 4), num(4, 6), num(6, 8));
        let (h, mi, s) = (num(8, 10), num(10, 12), num(12, 14));
        if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
            return None;
        }
        // Days from 1970-01-01 of a proleptic Gregorian date.
        let yy = if mo <= 2 { y - 1 } else { y };
        let era = yy.div_euclid(400);
        let yoe = yy - era * 400;
        let mp = (mo + 9) % 12;
        let doy = (153 * mp + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        u64::try_from(days * 86_400 + h * 3600 + mi * 60 + s).ok()
    }

    /// The first message of type `kind`.
    pub fn first(&self, kind: u16) -> Option<&Message> {
        self.messages.iter().find(|m| m.kind == kind)
    }

    /// Every message of type `kind`.
    pub fn all(&self, kind: u16) -> impl Iterator<Item = &Message> {
        self.messages.iter().filter(move |m| m.kind == kind)
    }
}

/// Read the object header at `addr`.
pub(crate) fn read_object_header(f: &Inner, addr: u64) -> H5Result<ObjectHeader> {
    let what = "object header";
    let first = f.read_upto(addr, 512)?;
    let mut messages = Vec::new();
    let mut chunks: Vec<(u64, u64)> = Vec::new();
    let mut seen = HashSet::new();
    seen.insert(addr);
    let version;
    let mut prefix_mtime = None;
    if first.len() >= 4 && &first[..4] == b"OHDR" {
        version = 2u8;
        let mut c = f.cursor(&first, what, addr);
        c.skip(4)?;
        let v = c.u8()?;
        if v != 2 {
            return Err(c.err(format!("version {v} after an OHDR signature")));
        }
        let flags = c.u8()?;
        if flags & 0x20 != 0 {
            let _access = c.u32()?;
            prefix_mtime = Some(c.u32()?);
            let _change = c.u32()?;
            let _birth = c.u32()?;
        }
        if flags & 0x10 != 0 {
            c.skip(4)?;
        }
        let size = c.uint(1 << (flags & 0x03))?;
        let prefix = c.pos() as u64;
        let total = prefix
            .checked_add(size)
            .and_then(|t| t.checked_add(4))
            .ok_or_else(|| corrupt(what, Some(addr), "size overflows"))?;
        let block = f.read_structure(addr, total, what)?;
        verify_checksum(&block, what, Some(addr))?;
        let body = block.slice(prefix as usize..(total - 4) as usize);
        parse_v2_messages(f, &body, addr, flags, &mut messages, &mut chunks)?;
        let mut i = 0;
        while i < chunks.len() {
            let (caddr, clen) = chunks[i];
            i += 1;
            if chunks.len() > MAX_CHUNKS || !seen.insert(caddr) {
                return Err(corrupt(what, Some(addr), "continuation blocks form a loop"));
            }
            let what_c = "object header continuation block";
            let block = f.read_structure(caddr, clen, what_c)?;
            if block.len() < 8 || &block[..4] != b"OCHK" {
                return Err(corrupt(what_c, Some(caddr), "no OCHK signature"));
            }
            verify_checksum(&block, what_c, Some(caddr))?;
            let body = block.slice(4..block.len() - 4);
            parse_v2_messages(f, &body, caddr, flags, &mut messages, &mut chunks)?;
        }
    } else {
        version = 1;
        let mut c = f.cursor(&first, what, addr);
        let v = c.u8()?;
        if v != 1 {
            return Err(c.err(format!(
                "no OHDR signature and version {v} (a version 1 header starts with 1)"
            )));
        }
        c.skip(1)?;
        let _nmessages = c.u16()?;
        let _refcount = c.u32()?;
        let size = u64::from(c.u32()?);
        // The messages start at the next multiple of 8 after the 12-byte prefix.
        let start = addr
            .checked_add(16)
            .ok_or_else(|| corrupt(what, Some(addr), "address overflows"))?;
        chunks.push((start, size));
        let mut i = 0;
        while i < chunks.len() {
            let (caddr, clen) = chunks[i];
            i += 1;
            if chunks.len() > MAX_CHUNKS || (i > 1 && !seen.insert(caddr)) {
                return Err(corrupt(what, Some(addr), "continuation blocks form a loop"));
            }
            let block = f.read_structure(caddr, clen, what)?;
            parse_v1_messages(f, &block, caddr, &mut messages, &mut chunks)?;
        }
    }
    let _ = version;
    Ok(ObjectHeader {
        addr,
        messages,
        prefix_mtime,
    })
}

/// Where parsed messages and continuation blocks go.
struct Sink<'a> {
    messages: &'a mut Vec<Message>,
    chunks: &'a mut Vec<(u64, u64)>,
}

fn push(f: &Inner, msg: Message, at: u64, sink: &mut Sink) -> H5Result<()> {
    let Message {
        kind,
        flags,
        data,
        order,
    } = msg;
    let messages = &mut *sink.messages;
    let chunks = &mut *sink.chunks;
    if messages.len() >= MAX_MESSAGES {
        return Err(corrupt("object header", Some(at), "too many messages"));
    }
    match kind {
        kind::NIL => {}
        kind::CONTINUATION => {
            let mut c = f.cursor(&data, "continuation message", at);
            let addr = c.addr_required("continuation address")?;
            let len = c.length()?;
            chunks.push((addr, len));
        }
        _ => {
            if flags & 0x80 != 0 && !known(kind) {
                return Err(unsupported(format!(
                    "object header message type {kind:#x}, which readers must understand"
                )));
            }
            messages.push(Message {
                kind,
                flags,
                data,
                order,
            });
        }
    }
    Ok(())
}

fn known(kind: u16) -> bool {
    kind <= 0x18
}

fn parse_v1_messages(
    f: &Inner,
    block: &Bytes,
    at: u64,
    messages: &mut Vec<Message>,
    chunks: &mut Vec<(u64, u64)>,
) -> H5Result<()> {
    let mut c = f.cursor(block, "object header", at);
    while c.remaining() >= 8 {
        let kind = c.u16()?;
        let size = c.u16()? as usize;
        let flags = c.u8()?;
        c.skip(3)?;
        let start = c.pos();
        c.skip(size)?;
        let data = block.slice(start..start + size);
        let msg = Message {
            kind,
            flags,
            data,
            order: None,
        };
        push(f, msg, at, &mut Sink { messages, chunks })?;
        c.align(8);
    }
    Ok(())
}

fn parse_v2_messages(
    f: &Inner,
    block: &Bytes,
    at: u64,
    header_flags: u8,
    messages: &mut Vec<Message>,
    chunks: &mut Vec<(u64, u64)>,
) -> H5Result<()> {
    let mut c = f.cursor(block, "object header", at);
    let head = if header_flags & 0x04 != 0 { 6 } else { 4 };
    while c.remaining() >= head {
        let kind = u16::from(c.u8()?);
        let size = c.u16()? as usize;
        let flags = c.u8()?;
        let order = if header_flags & 0x04 != 0 {
            Some(c.u16()?)
        } else {
            None
        };
        let start = c.pos();
        c.skip(size)?;
        let data = block.slice(start..start + size);
        let msg = Message {
            kind,
            flags,
            data,
            order,
        };
        push(f, msg, at, &mut Sink { messages, chunks })?;
    }
    Ok(())
}

/// The body of `msg`: itself, or the shared message it refers to.
pub(crate) fn message_body(f: &Inner, msg: &Message, at: u64) -> H5Result<Bytes> {
    if !msg.is_shared() {
        return Ok(msg.data.clone());
    }
    shared_body(f, msg.kind, &msg.data, at, 0)
}

/// The body of the shared message of type `kind` that `reference` points to.
pub(crate) fn shared_body(
    f: &Inner,
    kind: u16,
    reference: &[u8],
    at: u64,
    depth: u32,
) -> H5Result<Bytes> {
    if depth > 8 {
        return Err(corrupt(
            "shared message",
            Some(at),
            "shared messages form a loop",
        ));
    }
    let mut c = f.cursor(reference, "shared message", at);
    match parse_shared(&mut c)? {
        Shared::Committed(addr) => {
            let header = f.header(addr)?;
            let msg = header.first(kind).ok_or_else(|| {
                corrupt(
                    "committed object header",
                    Some(addr),
                    format!("no message of type {kind:#x} to share"),
                )
            })?;
            if msg.is_shared() {
                shared_body(f, kind, &msg.data, addr, depth + 1)
            } else {
                Ok(msg.data.clone())
            }
        }
        Shared::Sohm(id) => f.sohm_message(kind, &id),
    }
}
