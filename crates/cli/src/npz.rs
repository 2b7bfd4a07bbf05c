//! NumPy `.npz` files (a zip archive of `.npy` members, as `numpy.savez` writes them) for
//! ragged arrays: `get` writes `values`, `offsets` and `shape`; `put` reads them back. Members
//! are stored uncompressed when written; stored and deflated members (`numpy.savez_compressed`)
//! are read.

use std::io::Read;

use neurochunk_dtype::npy::{self, NpyHeader};
use neurochunk_dtype::{DataType, Endian};

const LOCAL: u32 = 0x0403_4b50;
const CENTRAL: u32 = 0x0201_4b50;
const END: u32 = 0x0605_4b50;

/// One `.npy` member as bytes: header and little-endian C-order data.
pub(crate) fn npy_bytes(
    data_type: &DataType,
    shape: &[usize],
    data: &[u8],
) -> Result<Vec<u8>, String> {
    let header = NpyHeader {
        data_type: data_type.clone(),
        endian: (data_type.fixed_size().unwrap_or(1) > 1).then_some(Endian::Little),
        shape: shape.to_vec(),
        fortran_order: false,
    };
    let mut out = Vec::with_capacity(128 + data.len());
    npy::write_npy_header(&mut out, &header).map_err(|e| e.to_string())?;
    out.extend_from_slice(data);
    Ok(out)
}

/// Write `members` (name without `.npy`, `.npy` bytes) as an uncompressed zip (zip64 is not
/// needed: each member and the archive stay below 4 GiB, else an error).
pub(crate) fn npz_bytes(members: &[(&str, Vec<u8>)]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    let small = |v: usize| u32::try_from(v).map_err(|_| "the .npz would exceed 4 GiB".to_string());
    for (name, data) in members {
        let name = format!("{name}.npy");
        let offset = small(out.len())?;
        let crc = crc32fast::hash(data);
        let size = small(data.len())?;
        let fields = |buf: &mut Vec<u8>| {
            buf.extend_from_slice(&20u16.to_le_bytes()); // version needed
            buf.extend_from_slice(&0u16.to_le_bytes()); // flags
            buf.extend_from_slice(&0u16.to_le_bytes()); // stored
            buf.extend_from_slice(&0u16.to_le_bytes()); // time
            buf.extend_from_slice(&0x21u16.to_le_bytes()); // date 1980-01-01
            buf.extend_from_slice(&crc.to_le_bytes());
            buf.extend_from_slice(&size.to_le_bytes());
            buf.extend_from_slice(&size.to_le_bytes());
            buf.extend_from_slice(&(name.len() as u16).to_le_bytes());
            buf.extend_from_slice(&0u16.to_le_bytes()); // extra
        };
        out.extend_from_slice(&LOCAL.to_le_bytes());
        fields(&mut out);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(data);
        central.extend_from_slice(&CENTRAL.to_le_bytes());
        central.extend_from_slice(&20u16.to_le_bytes()); // version made by
        fields(&mut central);
        central.extend_from_slice(&[0; 6]); // comment len, disk, internal attrs
        central.extend_from_slice(&0u32.to_le_bytes()); // external attrs
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let cd_offset = small(out.len())?;
    let cd_size = small(central.len())?;
    out.extend_from_slice(&central);
    out.extend_from_slice(&END.to_le_bytes());
    out.extend_from_slice(&[0; 4]); // disk numbers
    let n = members.len() as u16;
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&cd_size.to_le_bytes());
    out.extend_from_slice(&cd_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    Ok(out)
}

fn u16_at(b: &[u8], at: usize) -> Option<usize> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?) as usize)
}

fn u32_at(b: &[u8], at: usize) -> Option<usize> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?) as usize)
}

/// The members of an `.npz` (names without `.npy`), each parsed as an `.npy`: header and
/// little-endian C-order data.
pub(crate) fn read_npz(bytes: &[u8]) -> Result<Vec<(String, NpyHeader, Vec<u8>)>, String> {
    let bad = |what: &str| format!("not a readable .npz (zip) file: {what}");
    // The end of central directory record is in the last 64 KiB + 22 bytes.
    let lo = bytes.len().saturating_sub(0xffff + 22);
    let end = (lo..bytes.len().saturating_sub(21))
        .rev()
        .find(|&i| u32_at(bytes, i) == Some(END as usize))
        .ok_or_else(|| bad("no end of central directory"))?;
    let count = u16_at(bytes, end + 10).ok_or_else(|| bad("truncated"))?;
    let mut pos = u32_at(bytes, end + 16).ok_or_else(|| bad("truncated"))?;
    let mut members = Vec::with_capacity(count);
    for _ in 0..count {
        if u32_at(bytes, pos) != Some(CENTRAL as usize) {
            return Err(bad("bad central directory entry"));
        }
        let field = |off: usize| u32_at(bytes, pos + off).ok_or_else(|| bad("truncated"));
        let method = u16_at(bytes, pos + 10).ok_or_else(|| bad("truncated"))?;
        let (csize, usize_, local) = (field(20)?, field(24)?, field(42)?);
        let name_len = u16_at(bytes, pos + 28).ok_or_else(|| bad("truncated"))?;
        let extra = u16_at(bytes, pos + 30).ok_or_else(|| bad("truncated"))?;
        let comment = u16_at(bytes, pos + 32).ok_or_else(|| bad("truncated"))?;
        let name = bytes
            .get(pos + 46..pos + 46 + name_len)
            .ok_or_else(|| bad("truncated"))?;
        let name = String::from_utf8_lossy(name).into_owned();
        pos += 46 + name_len + extra + comment;
        if u32_at(bytes, local) != Some(LOCAL as usize) {
            return Err(bad("bad local header"));
        }
        let lname = u16_at(bytes, local + 26).ok_or_else(|| bad("truncated"))?;
        let lextra = u16_at(bytes, local + 28).ok_or_else(|| bad("truncated"))?;
        let start = local + 30 + lname + lextra;
        let raw = bytes
            .get(start..start.saturating_add(csize))
            .ok_or_else(|| bad(&format!("member {name} runs past the end")))?;
        let data = match method {
            0 => raw.to_vec(),
            8 => {
                let mut out = Vec::with_capacity(usize_.min(1 << 30));
                flate2::read::DeflateDecoder::new(raw)
                    .take(usize_ as u64)
                    .read_to_end(&mut out)
                    .map_err(|e| bad(&format!("member {name}: {e}")))?;
                out
            }
            m => return Err(bad(&format!("member {name} uses zip method {m}"))),
        };
        let mut reader = &data[..];
        let header =
            npy::read_npy_header(&mut reader).map_err(|e| format!("member {name}: {e}"))?;
        let mut body = reader.to_vec();
        if header.endian == Some(Endian::Big) {
            header
                .data_type
                .swap_endian_in_place(&mut body, Endian::Big);
        }
        if header.fortran_order && header.shape.len() > 1 {
            return Err(format!(
                "member {name}: Fortran order is not supported here"
            ));
        }
        let name = name.strip_suffix(".npy").unwrap_or(&name).to_string();
        members.push((name, header, body));
    }
    Ok(members)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let values = npy_bytes(&DataType::Int16, &[3], &[1, 0, 2, 0, 3, 0]).unwrap();
        let offsets = npy_bytes(&DataType::Int64, &[2], &[0; 16]).unwrap();
        let bytes = npz_bytes(&[("values", values), ("offsets", offsets)]).unwrap();
        let back = read_npz(&bytes).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].0, "values");
        assert_eq!(back[0].1.shape, vec![3]);
        assert_eq!(back[0].2, vec![1, 0, 2, 0, 3, 0]);
        assert_eq!(back[1].1.data_type, DataType::Int64);
    }
}
