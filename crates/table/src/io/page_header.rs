//! The few fields of a Parquet page header that the parquet decoder trusts before it checks
//! them against the page's bytes: the page type, its sizes and a dictionary page's value
//! count. Read here with a minimal Thrift compact-protocol reader (the parquet crate keeps its
//! own private), so that a corrupt count is refused before it sizes an allocation
//! ([`PageLimits`]).

use parquet::basic::{Compression, Type as PhysicalType};
use parquet::file::metadata::ColumnChunkMetaData;

/// What a page header says.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageHeaderFacts {
    /// The page type (2 is a dictionary page).
    pub page_type: Option<i32>,
    /// Bytes of the page once uncompressed.
    pub uncompressed_size: Option<i32>,
    /// Bytes of the page as stored.
    pub compressed_size: Option<i32>,
    /// Values of a dictionary page (as read: a corrupt one may not fit the i32 it should be).
    pub dictionary_values: Option<i64>,
}

/// The Parquet page type of a dictionary page.
pub(crate) const DICTIONARY_PAGE: i32 = 2;

// Thrift compact-protocol type ids.
const BOOL_TRUE: u8 = 1;
const BOOL_FALSE: u8 = 2;
const BYTE: u8 = 3;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;
const UUID: u8 = 13;

/// Nesting deeper than this is not a page header.
const MAX_DEPTH: usize = 16;

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    /// A ULEB128 varint read as the parquet crate reads it, so that both see the same value
    /// in any header the decoder accepts: of any length, bits past the 64th wrapping around.
    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        let mut shift = 0u32;
        loop {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f).wrapping_shl(shift);
            if b & 0x80 == 0 {
                return Some(value);
            }
            shift = shift.wrapping_add(7);
        }
    }

    fn zigzag(&mut self) -> Option<i64> {
        let v = self.varint()?;
        Some((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    fn skip_bytes(&mut self, n: u64) -> Option<()> {
        let end = self.at.checked_add(usize::try_from(n).ok()?)?;
        (end <= self.bytes.len()).then(|| self.at = end)
    }

    /// Skip one value of `kind` as the parquet crate's reader skips it: a boolean takes no
    /// byte (in a list as in a struct), a list of more elements than bytes left is refused
    /// (the crate would count through them), and a map or list count past `i32` is refused.
    fn skip(&mut self, kind: u8, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match kind {
            BOOL_TRUE | BOOL_FALSE => Some(()),
            BYTE => self.byte().map(drop),
            I16 | I32 | I64 => self.varint().map(drop),
            DOUBLE => self.skip_bytes(8),
            BINARY => {
                let n = self.varint()?;
                self.skip_bytes(n)
            }
            LIST | SET => {
                let head = self.byte()?;
                if head == 0 {
                    return Some(()); // an empty list, as some writers mark it
                }
                let element = valid_kind(head & 0x0f)?;
                let n = match head >> 4 {
                    15 => self.count()?,
                    n => u64::from(n),
                };
                if n > (self.bytes.len() - self.at) as u64 {
                    return None;
                }
                for _ in 0..n {
                    self.skip(element, depth + 1)?;
                }
                Some(())
            }
            MAP => {
                let n = self.count()?;
                if n > 0 {
                    let kinds = self.byte()?;
                    let (key, value) = (valid_kind(kinds >> 4)?, valid_kind(kinds & 0x0f)?);
                    if n > (self.bytes.len() - self.at) as u64 {
                        return None;
                    }
                    for _ in 0..n {
                        self.skip(key, depth + 1)?;
                        self.skip(value, depth + 1)?;
                    }
                }
                Some(())
            }
            STRUCT => self.fields(depth + 1, |_, kind, r| r.skip(kind, depth + 1)),
            UUID => self.skip_bytes(16),
            _ => None,
        }
    }

    /// A list or map size: a varint that must fit an `i32`.
    fn count(&mut self) -> Option<u64> {
        let n = self.varint()?;
        i32::try_from(n).ok().map(|_| n)
    }

    /// A field the parquet crate reads as an i32 by its id, whatever type its header names:
    /// the varint, truncated as the crate truncates it.
    fn i32_field(&mut self) -> Option<i32> {
        Some(self.zigzag()? as i32)
    }

    /// Walk the fields of a struct up to its stop byte, handing each `(id, kind)` to
    /// `on_field`, which consumes the value.
    fn fields(
        &mut self,
        depth: usize,
        mut on_field: impl FnMut(i16, u8, &mut Self) -> Option<()>,
    ) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        let mut id: i16 = 0;
        loop {
            let head = self.byte()?;
            // Any byte whose type nibble is 0 ends the struct, whatever its delta, as the
            // parquet crate reads it: a stop is not only the byte 0.
            if head & 0x0f == 0 {
                return Some(());
            }
            let kind = valid_kind(head & 0x0f)?;
            id = match head >> 4 {
                0 => self.zigzag()? as i16,
                delta => id.checked_add(i16::from(delta))?,
            };
            on_field(id, kind, self)?;
        }
    }
}

/// A field type the parquet crate accepts (1 to 13); any other fails its read.
fn valid_kind(kind: u8) -> Option<u8> {
    (1..=UUID).contains(&kind).then_some(kind)
}

/// The facts of the page header at the start of `bytes`, read as the parquet crate reads a
/// page header, or `None` when the bytes end first or the crate would fail on them too. Like
/// the crate, a field it knows is read by its id, whatever type its header names: the
/// sizes and counts as i32 varints, the page kinds' headers as structs, booleans from the
/// type.
pub(crate) fn read_page_header(bytes: &[u8]) -> Option<PageHeaderFacts> {
    let mut facts = PageHeaderFacts::default();
    let mut reader = Reader { bytes, at: 0 };
    // The fields of a page kind's header (`bools`: the ids read as booleans).
    let kind_header = |r: &mut Reader, ints: &[i16], bools: &[i16], mut count: Option<&mut i64>| {
        r.fields(1, |id, kind, r| {
            if ints.contains(&id) {
                let value = r.zigzag()?;
                if id == 1 {
                    if let Some(count) = count.as_deref_mut() {
                        *count = value;
                    }
                }
                Some(())
            } else if bools.contains(&id) {
                matches!(kind, BOOL_TRUE | BOOL_FALSE).then_some(())
            } else {
                r.skip(kind, 2)
            }
        })
    };
    reader.fields(0, |id, kind, r| {
        match id {
            1 => facts.page_type = Some(r.i32_field()?),
            2 => facts.uncompressed_size = Some(r.i32_field()?),
            3 => facts.compressed_size = Some(r.i32_field()?),
            4 => drop(r.i32_field()?),
            5 => kind_header(r, &[1, 2, 3, 4], &[], None)?,
            6 => kind_header(r, &[], &[], None)?,
            7 => {
                let mut values = 0;
                kind_header(r, &[1, 2], &[3], Some(&mut values))?;
                facts.dictionary_values = Some(values);
            }
            8 => kind_header(r, &[1, 2, 3, 4, 5, 6], &[7], None)?,
            _ => r.skip(kind, 1)?,
        }
        Some(())
    })?;
    Some(facts)
}

/// What the pages of one column chunk may claim, from the chunk's footer entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageLimits {
    /// The chunk's compression codec.
    compression: Compression,
    /// The smallest PLAIN encoding of one value of the column's type, in bytes.
    min_value_bytes: i64,
}

/// The most bytes one stored byte of `compression` can decode to, from the codecs' formats;
/// `None` where no useful bound exists (brotli describes megabytes in a few bytes).
///
/// snappy: a 3-byte copy yields at most 64 bytes; LZ4: each extra match-length byte adds 255;
/// deflate: 258 bytes per 2 bits at best, 1032:1; zstd: a 4-byte RLE block yields 128 KiB.
fn max_expansion(compression: Compression) -> Option<i64> {
    match compression {
        Compression::UNCOMPRESSED => Some(1),
        Compression::SNAPPY => Some(22),
        Compression::LZ4 | Compression::LZ4_RAW => Some(256),
        Compression::GZIP(_) => Some(1032),
        Compression::ZSTD(_) => Some(32 * 1024),
        Compression::BROTLI(_) | Compression::LZO => None,
    }
}

impl PageLimits {
    /// The limits of the pages of `column`.
    pub(crate) fn of(column: &ColumnChunkMetaData) -> Self {
        let min_value_bytes = match column.column_type() {
            PhysicalType::BOOLEAN => 0,
            PhysicalType::INT32 | PhysicalType::FLOAT | PhysicalType::BYTE_ARRAY => 4,
            PhysicalType::INT64 | PhysicalType::DOUBLE => 8,
            PhysicalType::INT96 => 12,
            PhysicalType::FIXED_LEN_BYTE_ARRAY => column.column_descr().type_length().into(),
        };
        PageLimits {
            compression: column.compression(),
            min_value_bytes,
        }
    }

    /// Why the page header `facts` cannot be true, if it cannot: the parquet decoder sizes
    /// (and for some codecs zeroes) the page's buffer from the declared uncompressed size,
    /// and a dictionary from its declared value count, before it reads the page.
    pub(crate) fn refuse(&self, facts: &PageHeaderFacts) -> Option<String> {
        let uncompressed = i64::from(facts.uncompressed_size.unwrap_or(0));
        let compressed = i64::from(facts.compressed_size.unwrap_or(0));
        if let Some(ratio) = max_expansion(self.compression) {
            if uncompressed > compressed.max(0).saturating_mul(ratio) {
                return Some(format!(
                    "a page claims {uncompressed} bytes once uncompressed from {compressed} \
                     stored bytes, more than {} can expand to",
                    self.compression
                ));
            }
        }
        if facts.page_type == Some(DICTIONARY_PAGE) {
            let values = facts.dictionary_values.unwrap_or(0);
            let fits = values >= 0
                && i32::try_from(values).is_ok()
                && values * self.min_value_bytes <= uncompressed;
            if !fits {
                return Some(format!(
                    "the dictionary page claims {values} values but holds {uncompressed} bytes"
                ));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dictionary page header as parquet writers write it: type 2, sizes, crc, and the
    /// dictionary page header {num_values, encoding PLAIN, is_sorted false}.
    fn dictionary_header(values: i32) -> Vec<u8> {
        fn zigzag(v: i64) -> Vec<u8> {
            let mut z = ((v << 1) ^ (v >> 63)) as u64;
            let mut out = Vec::new();
            loop {
                let b = (z & 0x7f) as u8;
                z >>= 7;
                if z == 0 {
                    out.push(b);
                    return out;
                }
                out.push(b | 0x80);
            }
        }
        let mut h = vec![0x15];
        h.extend(zigzag(2)); // 1: type = DICTIONARY_PAGE
        h.push(0x15);
        h.extend(zigzag(320)); // 2: uncompressed_page_size
        h.push(0x15);
        h.extend(zigzag(300)); // 3: compressed_page_size
        h.push(0x15);
        h.extend(zigzag(-12345)); // 4: crc
        h.push(0x3c); // 7: struct (delta 3)
        h.push(0x15);
        h.extend(zigzag(i64::from(values))); // 1: num_values
        h.push(0x15);
        h.extend(zigzag(0)); // 2: encoding PLAIN
        h.push(0x12); // 3: is_sorted = false
        h.push(0); // end of dictionary page header
        h.push(0); // end of page header
        h
    }

    #[test]
    fn reads_the_facts_of_a_dictionary_page_header() {
        let facts = read_page_header(&dictionary_header(40)).unwrap();
        assert_eq!(
            facts,
            PageHeaderFacts {
                page_type: Some(DICTIONARY_PAGE),
                uncompressed_size: Some(320),
                compressed_size: Some(300),
                dictionary_values: Some(40),
            }
        );
        let big = read_page_header(&dictionary_header(2_018_508_800)).unwrap();
        assert_eq!(big.dictionary_values, Some(2_018_508_800));
    }

    #[test]
    fn a_stop_with_a_field_delta_ends_the_header_as_the_decoder_reads_it() {
        // The fuzzed file that zeroed 2 GiB: its dictionary page header ended with 0x70 (delta
        // 7, type 0), a stop to the parquet crate. Read to the end, the page is refused.
        let mut header = dictionary_header(40);
        assert_eq!(header.pop(), Some(0));
        header.extend([0x70, b'p', b'o', b'i', b'n', b't']);
        let facts = read_page_header(&header).expect("a header");
        assert_eq!(facts.dictionary_values, Some(40));
        assert_eq!(facts.uncompressed_size, Some(320));
    }

    #[test]
    fn known_fields_are_read_by_id_whatever_type_their_header_names() {
        // uncompressed_page_size (field 2) marked a double (0x17), compressed_page_size
        // (field 3) a boolean (0x11): the parquet crate reads both as i32 varints.
        let header = [0x15, 0x04, 0x17, 0x80, 0x05, 0x11, 0xda, 0x02, 0x00];
        let facts = read_page_header(&header).expect("a header");
        assert_eq!(facts.uncompressed_size, Some(320));
        assert_eq!(facts.compressed_size, Some(173));
        // A type the crate does not know (14, 15) fails its read, and so here.
        assert_eq!(
            read_page_header(&[0x15, 0x04, 0x1e, 0x80, 0x05, 0x00]),
            None
        );
        // A boolean field of a page kind's header must be a boolean.
        let dictionary = [
            0x15, 0x04, 0x15, 0x80, 0x05, 0x15, 0xda, 0x02, 0x4c, 0x15, 0x50, 0x25, 0x00, 0x00,
            0x00,
        ];
        assert_eq!(read_page_header(&dictionary), None);
    }

    #[test]
    fn truncated_or_hostile_bytes_are_none_never_a_panic() {
        let header = dictionary_header(40);
        for end in 0..header.len() - 1 {
            assert_eq!(read_page_header(&header[..end]), None, "{end}");
        }
        // A list claiming 2^60 elements, deep nesting, an unknown type: all end cleanly.
        assert_eq!(
            read_page_header(&[0x19, 0xf5, 0xff, 0xff, 0xff, 0xff, 0x0f]),
            None
        );
        assert_eq!(read_page_header(&[0x1c; 64]), None);
        assert_eq!(read_page_header(&[0x1d, 0x00]), None);
    }

    #[test]
    fn an_overlong_varint_reads_as_the_parquet_crate_reads_it() {
        // The size of the fuzzed page: 0x8a repeated past 64 bits, bits wrapping around.
        let mut header = vec![0x15, 0x00, 0x15];
        header.extend([0x8a; 35]);
        header.extend([0x80, 0x05, 0x00]);
        let mut expected = 0u64;
        for (i, b) in header[3..].iter().take(36).enumerate() {
            expected |= u64::from(b & 0x7f).wrapping_shl(7 * i as u32);
        }
        let expected = ((expected >> 1) as i64 ^ -((expected & 1) as i64)) as i32;
        let facts = read_page_header(&header).unwrap();
        assert_eq!(facts.uncompressed_size, Some(expected));
    }

    fn limits(compression: Compression, min_value_bytes: i64) -> PageLimits {
        PageLimits {
            compression,
            min_value_bytes,
        }
    }

    fn data_page(uncompressed: i32, compressed: i32) -> PageHeaderFacts {
        PageHeaderFacts {
            page_type: Some(0),
            uncompressed_size: Some(uncompressed),
            compressed_size: Some(compressed),
            dictionary_values: None,
        }
    }

    #[test]
    fn a_page_may_expand_only_as_far_as_its_codec_can() {
        // 2 GiB from a 2.7 KiB snappy page: the fuzzed file that zeroed 2 GiB.
        let bomb = data_page(2_147_000_000, 2_700);
        for codec in [
            Compression::UNCOMPRESSED,
            Compression::SNAPPY,
            Compression::LZ4_RAW,
            Compression::GZIP(Default::default()),
            Compression::ZSTD(Default::default()),
        ] {
            let why = limits(codec, 8).refuse(&bomb).expect("refused");
            assert!(
                why.contains("2147000000 bytes") && why.contains("2700"),
                "{why}"
            );
        }
        // At the codec's own bound, and for brotli, whose bound is no use, it passes.
        assert_eq!(
            limits(Compression::SNAPPY, 8).refuse(&data_page(22 * 2_700, 2_700)),
            None
        );
        assert_eq!(
            limits(Compression::ZSTD(Default::default()), 8)
                .refuse(&data_page(32 * 1024 * 100, 100)),
            None
        );
        assert_eq!(
            limits(Compression::BROTLI(Default::default()), 8).refuse(&bomb),
            None
        );
        // Uncompressed pages hold what they store, no more.
        assert!(limits(Compression::UNCOMPRESSED, 8)
            .refuse(&data_page(301, 300))
            .is_some());
        assert_eq!(
            limits(Compression::UNCOMPRESSED, 8).refuse(&data_page(300, 300)),
            None
        );
        // A negative stored size expands to nothing.
        assert!(limits(Compression::SNAPPY, 8)
            .refuse(&data_page(10, -5))
            .is_some());
    }

    #[test]
    fn a_dictionary_must_hold_the_values_it_claims() {
        let facts = read_page_header(&dictionary_header(40)).unwrap();
        // 40 values of 8 bytes in 320 bytes fit; of 12 bytes they do not.
        assert_eq!(limits(Compression::SNAPPY, 8).refuse(&facts), None);
        let why = limits(Compression::SNAPPY, 12).refuse(&facts).unwrap();
        assert!(why.contains("claims 40 values"), "{why}");
        let big = read_page_header(&dictionary_header(2_018_508_800)).unwrap();
        assert!(limits(Compression::SNAPPY, 0).refuse(&big).is_none());
        assert!(limits(Compression::SNAPPY, 4).refuse(&big).is_some());
    }
}
