//! Attributes: compact (attribute messages in the object header) and dense (a fractal heap
//! indexed by a v2 B-tree of names).

use neurochunk_store::Bytes;

use crate::btree2::BTree2;
use crate::datatype::{Datatype, Extent};
use crate::error::{corrupt, too_large, H5Result};
use crate::file::{H5File, Inner};
use crate::heap::FractalHeap;
use crate::messages::{dataspace_from, datatype_from, kind, parse_attribute, parse_attribute_info};
use crate::ohdr::{message_body, shared_body, ObjectHeader};
use crate::value::{decode_elements, Value};

/// Most elements of one attribute.
const MAX_ATTRIBUTE_ELEMENTS: u64 = 1 << 28;

/// An attribute: its name, type, extent and raw elements.
#[derive(Clone, Debug)]
pub struct Attribute {
    file: H5File,
    name: String,
    dtype: Datatype,
    extent: Extent,
    raw: Bytes,
    order: Option<u64>,
}

impl Attribute {
    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its element type.
    pub fn dtype(&self) -> &Datatype {
        &self.dtype
    }

    /// Its extent.
    pub fn extent(&self) -> &Extent {
        &self.extent
    }

    /// Its creation order, when the object tracks it.
    pub fn creation_order(&self) -> Option<u64> {
        self.order
    }

    /// Its elements as stored (the file's byte order; variable-length elements and region
    /// references as heap IDs).
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// Its elements decoded, in C order (none for a null extent).
    pub fn values(&self) -> H5Result<Vec<Value>> {
        let count = self.extent.count() as usize;
        decode_elements(&self.file.inner, &self.dtype, &self.raw, count)
            .map_err(|e| self.file.err(e, ""))
    }

    /// Its elements with numbers in native byte order (same layout as [`Attribute::raw`]).
    pub fn native(&self) -> Vec<u8> {
        let mut out = self.raw.to_vec();
        crate::value::to_native(&self.dtype, &mut out);
        out
    }
}

/// Build an attribute from an attribute message body.
fn attribute_from(file: &H5File, body: &Bytes, at: u64, order: Option<u64>) -> H5Result<Attribute> {
    let f = &file.inner;
    let raw = parse_attribute(body, f.sizes, Some(at))?;
    let dt_body = if raw.dtype_shared {
        shared_body(f, kind::DATATYPE, &raw.dtype, at, 0)?
    } else {
        raw.dtype.clone()
    };
    let ds_body = if raw.space_shared {
        shared_body(f, kind::DATASPACE, &raw.space, at, 0)?
    } else {
        raw.space.clone()
    };
    let dtype = datatype_from(&dt_body, f.sizes, Some(at))?;
    let (extent, _) = dataspace_from(&ds_body, f.sizes, Some(at))?;
    let count = extent.count();
    if count > MAX_ATTRIBUTE_ELEMENTS {
        return Err(too_large(format!(
            "attribute '{}' of {count} elements",
            raw.name
        )));
    }
    let need = count.saturating_mul(dtype.size() as u64);
    if need > raw.data.len() as u64 {
        return Err(corrupt(
            "attribute message",
            Some(at),
            format!(
                "attribute '{}' needs {need} bytes of data, has {}",
                raw.name,
                raw.data.len()
            ),
        ));
    }
    Ok(Attribute {
        file: file.clone(),
        name: raw.name,
        dtype,
        extent,
        raw: raw.data.slice(..need as usize),
        order,
    })
}

/// Every attribute of the object whose header is `h`, sorted by name.
pub(crate) fn read_attributes(file: &H5File, h: &ObjectHeader) -> H5Result<Vec<Attribute>> {
    let f: &Inner = &file.inner;
    let mut out = Vec::new();
    for msg in h.all(kind::ATTRIBUTE) {
        let body = message_body(f, msg, h.addr)?;
        out.push(attribute_from(
            file,
            &body,
            h.addr,
            msg.order.map(u64::from),
        )?);
    }
    if let Some(msg) = h.first(kind::ATTRIBUTE_INFO) {
        let mut c = f.cursor(&msg.data, "attribute info message", h.addr);
        let info = parse_attribute_info(&mut c)?;
        if let (Some(heap), Some(index)) = (info.heap, info.name_index) {
            let heap = FractalHeap::open(f, heap)?;
            let tree = BTree2::open(f, index)?;
            if tree.kind != 8 {
                return Err(corrupt(
                    "v2 B-tree header",
                    Some(index),
                    format!("record type {} for an attribute name index", tree.kind),
                ));
            }
            for rec in tree.records(f)? {
                let mut c = f.cursor(&rec, "attribute name record", index);
                let id = c.bytes(8)?;
                let flags = c.u8()?;
                let order = c.u32()?;
                let body = heap.get(f, id)?;
                let body = if flags & 0x02 != 0 {
                    shared_body(f, kind::ATTRIBUTE, &body, index, 0)?
                } else {
                    body
                };
                out.push(attribute_from(file, &body, index, Some(u64::from(order)))?);
            }
        }
    }
    out.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    Ok(out)
}
