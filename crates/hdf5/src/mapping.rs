//! HDF5 in NWB terms: the element types, attribute values, references, region selections and
//! filter pipelines of an HDF5 file (as `neurochunk-h5` reads them) expressed as the values
//! the NWB layer reads and writes, the way pynwb reads them: h5py booleans as `bool`, other
//! enumerations as their integer type, ASCII text apart from UTF-8, object and region
//! references as paths and selections.

use neurochunk_codec::codecs::checksum::fletcher32;
use neurochunk_codec::{BloscCompressor, BloscShuffle, Codec};
use neurochunk_dtype::{DataType, Endian};
use neurochunk_h5::{
    Attribute, Charset, Datatype, Extent, Filter, ReferenceTarget, Selection as H5Selection,
    Value as H5Value,
};
use neurochunk_hdmf::{
    AttributeValue, CompoundField, DatasetValue, FieldKind, FieldValue, Reference, Region,
    RegionSlice,
};
use serde_json::Value;

/// Points listed at most for one region reference that is not a regular hyperslab.
const MAX_REGION_POINTS: usize = 1 << 22;

/// The numeric data type of an HDF5 element type (integers of 1, 2, 4 or 8 bytes, IEEE floats
/// of 2, 4 or 8 bytes, h5py booleans, enumerations as their integer type) and its byte order
/// in the file; `None` for anything else.
pub(crate) fn numeric_type(dtype: &Datatype) -> Option<(DataType, Endian)> {
    let endian = |big: bool| if big { Endian::Big } else { Endian::Little };
    Some(match dtype {
        Datatype::Bool => (DataType::Bool, Endian::Little),
        Datatype::Int {
            size,
            signed,
            big_endian,
        } => (
            match (size, signed) {
                (1, true) => DataType::Int8,
                (2, true) => DataType::Int16,
                (4, true) => DataType::Int32,
                (8, true) => DataType::Int64,
                (1, false) => DataType::UInt8,
                (2, false) => DataType::UInt16,
                (4, false) => DataType::UInt32,
                (8, false) => DataType::UInt64,
                _ => return None,
            },
            endian(*big_endian),
        ),
        Datatype::Float { size, big_endian } => (
            match size {
                2 => DataType::Float16,
                4 => DataType::Float32,
                8 => DataType::Float64,
                _ => return None,
            },
            endian(*big_endian),
        ),
        Datatype::Enum { base, .. } => return numeric_type(base),
        _ => return None,
    })
}

/// A float as JSON; non-finite values as the dtype crate's markers (written as the bare
/// `NaN`/`Infinity` tokens zarr-python writes).
pub(crate) fn float_json(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or_else(
        || neurochunk_dtype::json::non_finite_value(v),
        Value::Number,
    )
}

/// A region selection as the NWB layer encodes it: a regular hyperslab as per-axis slices,
/// anything else as its points.
pub(crate) fn region(selection: &H5Selection, dims: &[u64]) -> Result<Region, String> {
    if matches!(selection, H5Selection::All) {
        return Ok(Region::Slices(Vec::new()));
    }
    if let Some(slices) = selection.as_slices() {
        return Ok(Region::Slices(
            slices
                .iter()
                .map(|s| {
                    Some(RegionSlice {
                        start: s.start,
                        stop: s.stop,
                        step: s.step.max(1),
                    })
                })
                .collect(),
        ));
    }
    selection
        .points(dims, MAX_REGION_POINTS)
        .map(Region::Points)
        .map_err(|e| e.to_string())
}

/// The NWB reference of an HDF5 reference: its target's path (and file, for an HDF5 1.12
/// reference into another file) and, for a region reference, its selection. `dims_of(path)`
/// gives the shape of a referenced dataset (what a selection of points is listed against).
/// `None` for a null reference, and for a reference to an object no link leads to.
pub(crate) fn reference(
    r: &neurochunk_h5::Reference,
    dims_of: &dyn Fn(&str) -> Vec<u64>,
) -> Result<Option<Reference>, String> {
    let Some(path) = r.path.clone() else {
        return Ok(None);
    };
    let mut out = Reference::to(path.clone());
    if let Some(file) = &r.file {
        out.source = file.clone();
    }
    match &r.target {
        ReferenceTarget::Object => {}
        ReferenceTarget::Region(selection) => {
            out = out.with_region(region(selection, &dims_of(&path))?);
        }
        ReferenceTarget::Attribute(name) => {
            return Err(format!(
                "a reference to attribute '{name}' of '{path}' has no NWB form"
            ))
        }
    }
    Ok(Some(out))
}

/// One element as a JSON value (references in the legacy dictionary form).
pub(crate) fn value_json(v: &H5Value, dims_of: &dyn Fn(&str) -> Vec<u64>) -> Result<Value, String> {
    Ok(match v {
        H5Value::Int(i) => Value::from(*i),
        H5Value::UInt(u) => Value::from(*u),
        H5Value::Float(f) => float_json(*f),
        H5Value::Bool(b) => Value::Bool(*b),
        H5Value::Text(t) => Value::String(t.clone()),
        H5Value::Bytes(b) => Value::String(String::from_utf8_lossy(b).into_owned()),
        H5Value::Reference(None) => Value::Null,
        H5Value::Reference(Some(r)) => {
            reference(r, dims_of)?.map_or(Value::Null, |r| r.to_json(false))
        }
        H5Value::Compound(fields) => Value::Array(
            fields
                .iter()
                .map(|(_, v)| value_json(v, dims_of))
                .collect::<Result<_, _>>()?,
        ),
        H5Value::Array(items) | H5Value::Sequence(items) => Value::Array(
            items
                .iter()
                .map(|v| value_json(v, dims_of))
                .collect::<Result<_, _>>()?,
        ),
        H5Value::Complex(re, im) => Value::Array(vec![float_json(*re), float_json(*im)]),
    })
}

/// Nested lists of `dims` over `flat` (C order).
fn nest(flat: &[Value], dims: &[u64]) -> Value {
    match dims {
        [] => flat.first().cloned().unwrap_or(Value::Null),
        [_] => Value::Array(flat.to_vec()),
        [first, rest @ ..] => {
            let inner = rest.iter().product::<u64>() as usize;
            if inner == 0 {
                return Value::Array((0..*first).map(|_| nest(&[], rest)).collect());
            }
            Value::Array(flat.chunks(inner).map(|c| nest(c, rest)).collect())
        }
    }
}

fn is_reference_type(dtype: &Datatype) -> bool {
    matches!(
        dtype,
        Datatype::ObjectRef { .. } | Datatype::RegionRef { .. } | Datatype::Reference { .. }
    )
}

/// An attribute's value (its elements `values`, as [`Attribute::values`] decodes them) as the
/// NWB layer holds it: a JSON value (arrays as nested lists), or
/// a reference. An array of several references, which Zarr attributes cannot hold as
/// references, becomes the list of their dictionaries (and a note says so).
pub(crate) fn attribute_value(
    attr: &Attribute,
    values: Vec<H5Value>,
    dims_of: &dyn Fn(&str) -> Vec<u64>,
    notes: &mut Vec<String>,
) -> Result<AttributeValue, String> {
    let single = match attr.extent() {
        Extent::Null => return Ok(AttributeValue::Value(Value::Null)),
        Extent::Scalar => true,
        Extent::Simple(dims) => is_reference_type(attr.dtype()) && dims.as_slice() == [1],
    };
    if single {
        return Ok(match values.first() {
            Some(H5Value::Reference(Some(r))) => match reference(r, dims_of)? {
                Some(r) => AttributeValue::Reference(r),
                None => AttributeValue::Value(Value::Null),
            },
            Some(v) => AttributeValue::Value(value_json(v, dims_of)?),
            None => AttributeValue::Value(Value::Null),
        });
    }
    if is_reference_type(attr.dtype()) {
        notes.push(format!(
            "attribute '{}': an array of references, kept as the list of their dictionaries",
            attr.name()
        ));
    }
    let flat = values
        .iter()
        .map(|v| value_json(v, dims_of))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(AttributeValue::Value(nest(&flat, attr.extent().dims())))
}

/// Numbers as little-endian elements of `dt`.
pub(crate) fn numeric_bytes(dt: &DataType, values: &[H5Value]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(values.len() * dt.fixed_size().unwrap_or(1));
    for v in values {
        let (i, u, f) = match *v {
            H5Value::Int(v) => (v, v as u64, v as f64),
            H5Value::UInt(v) => (v as i64, v, v as f64),
            H5Value::Float(v) => (v as i64, v as u64, v),
            H5Value::Bool(b) => (i64::from(b), u64::from(b), f64::from(u8::from(b))),
            _ => return Err("expected a number".into()),
        };
        match dt {
            DataType::Bool => out.push(u8::from(u != 0)),
            DataType::Int8 => out.extend((i as i8).to_le_bytes()),
            DataType::Int16 => out.extend((i as i16).to_le_bytes()),
            DataType::Int32 => out.extend((i as i32).to_le_bytes()),
            DataType::Int64 => out.extend(i.to_le_bytes()),
            DataType::UInt8 => out.extend((u as u8).to_le_bytes()),
            DataType::UInt16 => out.extend((u as u16).to_le_bytes()),
            DataType::UInt32 => out.extend((u as u32).to_le_bytes()),
            DataType::UInt64 => out.extend(u.to_le_bytes()),
            DataType::Float16 => out.extend(half::f16::from_f64(f).to_bits().to_le_bytes()),
            DataType::Float32 => out.extend((f as f32).to_le_bytes()),
            DataType::Float64 => out.extend(f.to_le_bytes()),
            other => return Err(format!("unexpected numeric type {other}")),
        }
    }
    Ok(out)
}

/// The kind of one compound field.
fn field_kind(name: &str, dtype: &Datatype) -> Result<FieldKind, String> {
    if let Some((dt, _)) = numeric_type(dtype) {
        return Ok(FieldKind::Numeric(dt));
    }
    match dtype {
        Datatype::FixedString { .. } | Datatype::VlenString { .. } => Ok(FieldKind::Text),
        t if is_reference_type(t) => Ok(FieldKind::Reference),
        other => Err(format!(
            "compound field '{name}' of type {other:?} has no NWB form"
        )),
    }
}

/// The elements of a dataset that is not streamed as numbers (text, references, compounds,
/// numeric scalars) as an NWB dataset value.
pub(crate) fn dataset_value(
    dtype: &Datatype,
    values: &[H5Value],
    dims_of: &dyn Fn(&str) -> Vec<u64>,
) -> Result<DatasetValue, String> {
    if let Some((dt, _)) = numeric_type(dtype) {
        return Ok(DatasetValue::Numeric {
            bytes: numeric_bytes(&dt, values)?,
            data_type: dt,
        });
    }
    let text = |v: &H5Value| match v {
        H5Value::Text(t) => t.clone(),
        H5Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        _ => String::new(),
    };
    let reference_of = |v: &H5Value| -> Result<Option<Reference>, String> {
        match v {
            H5Value::Reference(Some(r)) => reference(r, dims_of),
            _ => Ok(None),
        }
    };
    Ok(match dtype {
        Datatype::FixedString { charset, .. } | Datatype::VlenString { charset, .. } => {
            DatasetValue::Text {
                values: values.iter().map(text).collect(),
                bytes: *charset == Charset::Ascii,
            }
        }
        t if is_reference_type(t) => {
            DatasetValue::References(values.iter().map(reference_of).collect::<Result<_, _>>()?)
        }
        Datatype::Compound { fields, .. } => {
            let out_fields = fields
                .iter()
                .map(|f| {
                    Ok(CompoundField {
                        name: f.name.clone(),
                        kind: field_kind(&f.name, &f.dtype)?,
                    })
                })
                .collect::<Result<Vec<_>, String>>()?;
            let rows = values
                .iter()
                .map(|v| {
                    let H5Value::Compound(cells) = v else {
                        return Err("expected a compound element".to_string());
                    };
                    cells
                        .iter()
                        .zip(&out_fields)
                        .map(|((_, cell), f)| {
                            Ok(match &f.kind {
                                FieldKind::Reference => FieldValue::Reference(reference_of(cell)?),
                                FieldKind::Text => FieldValue::Text(text(cell)),
                                FieldKind::Numeric(_) => {
                                    FieldValue::Number(value_json(cell, dims_of)?)
                                }
                            })
                        })
                        .collect::<Result<Vec<_>, String>>()
                })
                .collect::<Result<Vec<_>, _>>()?;
            DatasetValue::Compound {
                fields: out_fields,
                rows,
            }
        }
        other => return Err(format!("element type {other:?} has no NWB form")),
    })
}

/// What the array layer does with a dataset's stored chunks.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Pipeline {
    /// Zarr codecs that decode the stored bytes as they are (in the order Zarr applies them
    /// when encoding), and whether a trailing Fletcher-32 checksum is verified and removed
    /// before (HDF5's fletcher32 filter, last in the pipeline).
    Zarr {
        codecs: Vec<Codec>,
        strip_checksum: bool,
    },
    /// No Zarr codec stores the same bytes (lzf, HDF5's lz4 framing, a checksum before other
    /// filters): the chunks are decoded by the HDF5 reader and handed over uncompressed.
    Decoded,
}

/// The [`Pipeline`] of an HDF5 filter pipeline for elements of `element_size` bytes.
pub(crate) fn pipeline(filters: &[Filter], element_size: usize) -> Pipeline {
    let mut codecs = Vec::new();
    let mut strip_checksum = false;
    for (i, f) in filters.iter().enumerate() {
        let codec = match f.id {
            // deflate: zlib streams (numcodecs `zlib`).
            1 => Codec::Zlib {
                level: f.values.first().copied().unwrap_or(6).min(9),
            },
            2 if f.values.first().is_none_or(|&s| s as usize == element_size) => Codec::Shuffle,
            // Fletcher-32 is the last filter HDF5 applies: its 4 bytes end the stored chunk.
            3 if i + 1 == filters.len() => {
                strip_checksum = true;
                continue;
            }
            // The Zstandard plugin stores plain frames.
            32015 => Codec::Zstd {
                level: f.values.first().map_or(0, |&l| l as i32),
                checksum: false,
            },
            // The Blosc plugin stores Blosc frames: [rev, version, typesize, size, clevel,
            // shuffle, compressor].
            32001 if f.values.len() >= 7 => Codec::Blosc {
                clevel: f.values[4].min(9) as u8,
                shuffle: match f.values[5] {
                    0 => BloscShuffle::NoShuffle,
                    2 => BloscShuffle::BitShuffle,
                    _ => BloscShuffle::Shuffle,
                },
                cname: match f.values[6] {
                    0 => BloscCompressor::BloscLz,
                    1 => BloscCompressor::Lz4,
                    2 => BloscCompressor::Lz4Hc,
                    4 => BloscCompressor::Zlib,
                    5 => BloscCompressor::Zstd,
                    _ => return Pipeline::Decoded,
                },
            },
            _ => return Pipeline::Decoded,
        };
        codecs.push(codec);
    }
    Pipeline::Zarr {
        codecs,
        strip_checksum,
    }
}

/// Verify and remove the Fletcher-32 checksum HDF5's fletcher32 filter appends to a stored
/// chunk (little-endian; files of HDF5 before 1.6.3 may hold it byte-swapped, as the library
/// itself accepts).
pub(crate) fn strip_fletcher32(mut stored: Vec<u8>) -> Result<Vec<u8>, String> {
    if stored.len() < 4 {
        return Err(format!(
            "a chunk of {} bytes cannot hold its Fletcher-32 checksum",
            stored.len()
        ));
    }
    let split = stored.len() - 4;
    let expected = u32::from_le_bytes([
        stored[split],
        stored[split + 1],
        stored[split + 2],
        stored[split + 3],
    ]);
    stored.truncate(split);
    let computed = fletcher32(&stored);
    if computed != expected && computed.swap_bytes() != expected {
        return Err("Fletcher-32 checksum mismatch (corrupt chunk)".into());
    }
    Ok(stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelines_map_to_zarr_codecs_or_are_decoded() {
        let f = |id: u16, values: &[u32]| Filter {
            id,
            name: String::new(),
            optional: false,
            values: values.to_vec(),
        };
        assert_eq!(
            pipeline(&[f(2, &[4]), f(1, &[4]), f(3, &[])], 4),
            Pipeline::Zarr {
                codecs: vec![Codec::Shuffle, Codec::Zlib { level: 4 }],
                strip_checksum: true
            }
        );
        assert_eq!(pipeline(&[f(32000, &[])], 4), Pipeline::Decoded);
        // A checksum before other filters cannot be stripped from the stored bytes.
        assert_eq!(pipeline(&[f(3, &[]), f(1, &[6])], 4), Pipeline::Decoded);
        // A shuffle of another element size is not numcodecs' shuffle of this one.
        assert_eq!(pipeline(&[f(2, &[8]), f(1, &[6])], 4), Pipeline::Decoded);
    }

    #[test]
    fn fletcher32_checksums_are_verified_and_stripped() {
        let data = b"abcdefg".to_vec();
        for sum in [fletcher32(&data), fletcher32(&data).swap_bytes()] {
            let mut stored = data.clone();
            stored.extend(sum.to_le_bytes());
            assert_eq!(strip_fletcher32(stored).unwrap(), data);
        }
        let mut stored = data.clone();
        stored.extend(fletcher32(&data).to_le_bytes());
        stored[0] ^= 1;
        assert!(strip_fletcher32(stored).unwrap_err().contains("mismatch"));
        assert!(strip_fletcher32(vec![1, 2]).is_err());
    }
}
