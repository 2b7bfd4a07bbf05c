//! `.npy` reading and writing against headers NumPy produced.

mod common;

use std::io::{Cursor, Read};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use neurochunk_dtype::npy::{
    fixed_width_for_npy, read_npy, read_npy_header, write_npy, write_npy_header, NpyHeader,
};
use neurochunk_dtype::{DataType, Endian, StructField, TimeUnit};

/// A fresh path in the system temporary directory (removed by the caller).
fn temp_path(tag: &str) -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!(
        "neurochunk-dtype-{}-{n}-{tag}.npy",
        std::process::id()
    ))
}

fn header(data_type: DataType, endian: Option<Endian>, shape: &[usize]) -> NpyHeader {
    NpyHeader {
        data_type,
        endian,
        shape: shape.to_vec(),
        fortran_order: false,
    }
}

fn header_bytes(h: &NpyHeader) -> Vec<u8> {
    let mut out = Vec::new();
    write_npy_header(&mut out, h).unwrap();
    out
}

#[test]
fn header_is_byte_identical_to_numpy() {
    // np.save of a (2, 4) float32 array (NumPy ≥ 1.23: room for the growth axis).
    let mut expected =
        b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }"
            .to_vec();
    expected.extend(std::iter::repeat_n(b' ', 58));
    expected.push(b'\n');
    assert_eq!(expected.len(), 128);
    assert_eq!(
        header_bytes(&header(DataType::Float32, Some(Endian::Little), &[2, 4])),
        expected
    );
}

#[test]
fn headers_align_data_to_64_bytes_for_any_shape() {
    for shape in [vec![], vec![0], vec![7], vec![123456789, 2], vec![1; 30]] {
        let bytes = header_bytes(&header(DataType::UInt16, Some(Endian::Big), &shape));
        assert_eq!(bytes.len() % 64, 0, "{shape:?}");
        assert_eq!(bytes.last(), Some(&b'\n'));
        let text = String::from_utf8_lossy(&bytes[10..]);
        assert!(
            text.starts_with("{'descr': '>u2', 'fortran_order': False, 'shape': ("),
            "{text}"
        );
        let parsed = read_npy_header(&mut Cursor::new(&bytes)).unwrap();
        assert_eq!(parsed.shape, shape);
        assert_eq!(parsed.endian, Some(Endian::Big));
    }
    let scalar = header_bytes(&header(DataType::Float64, None, &[]));
    assert!(String::from_utf8_lossy(&scalar).contains("'shape': (), }"));
    let one = header_bytes(&header(DataType::Float64, None, &[5]));
    assert!(String::from_utf8_lossy(&one).contains("'shape': (5,), }"));
}

#[test]
fn reads_an_old_numpy_structured_header_and_stops_at_the_data() {
    let mut file = b"\x93NUMPY\x01\x00V\x00{'descr': [('b1', '|u1'), ('b3', '|u1')], 'fortran_order': False, 'shape': (3, 2), } \n".to_vec();
    file.extend([1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3]);
    let mut reader = Cursor::new(&file);
    let h = read_npy_header(&mut reader).unwrap();
    assert_eq!(
        h.data_type,
        DataType::Structured(vec![
            StructField {
                name: "b1".into(),
                data_type: DataType::UInt8,
                shape: vec![],
                endian: None
            },
            StructField {
                name: "b3".into(),
                data_type: DataType::UInt8,
                shape: vec![],
                endian: None
            },
        ])
    );
    assert_eq!(h.shape, vec![3, 2]);
    assert!(!h.fortran_order);
    let mut rest = Vec::new();
    reader.read_to_end(&mut rest).unwrap();
    assert_eq!(rest, [1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3]);
}

#[test]
fn parses_python_literal_variants() {
    let texts = [
        // Python 2 long integers, double quotes, nested struct with a sub-array shape.
        "{'descr': '<i8', 'fortran_order': False, 'shape': (2L, 3L), }",
        "{\"descr\": [('a', '<i2'), ('n', [('x', '>f4', (2, 3))])], 'fortran_order': True, 'shape': (4,)}",
        "{'shape': (), 'fortran_order': False, 'descr': u'<M8[us]'}",
    ];
    let expected_types = [
        DataType::Int64,
        DataType::Structured(vec![
            StructField {
                name: "a".into(),
                data_type: DataType::Int16,
                shape: vec![],
                endian: Some(Endian::Little),
            },
            StructField {
                name: "n".into(),
                data_type: DataType::Structured(vec![StructField {
                    name: "x".into(),
                    data_type: DataType::Float32,
                    shape: vec![2, 3],
                    endian: Some(Endian::Big),
                }]),
                shape: vec![],
                endian: None,
            },
        ]),
        DataType::DateTime64 {
            unit: TimeUnit::Microsecond,
            scale: 1,
        },
    ];
    for (text, expected) in texts.iter().zip(expected_types) {
        let mut file = b"\x93NUMPY\x01\x00".to_vec();
        file.extend((text.len() as u16).to_le_bytes());
        file.extend(text.as_bytes());
        let h = read_npy_header(&mut Cursor::new(&file)).unwrap();
        assert_eq!(h.data_type, expected, "{text}");
    }
}

fn round_trip(data_type: &DataType, shape: &[usize], data: &[u8]) {
    let path = temp_path("rt");
    write_npy(&path, data_type, shape, data).unwrap();
    let (h, back) = read_npy(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(&h.data_type, data_type);
    assert_eq!(h.shape, shape);
    assert_eq!(back, data, "{data_type}");
}

#[test]
fn every_fixed_type_round_trips_through_a_file() {
    let mut types = common::numeric_types();
    types.extend([
        DataType::RawBits { bytes: 3 },
        DataType::FixedBytes { len: 4 },
        DataType::FixedUtf32 { chars: 2 },
        DataType::DateTime64 {
            unit: TimeUnit::Nanosecond,
            scale: 1,
        },
        DataType::TimeDelta64 {
            unit: TimeUnit::Second,
            scale: 10,
        },
        DataType::Structured(vec![
            StructField {
                name: "a".into(),
                data_type: DataType::Int16,
                shape: vec![],
                endian: Some(Endian::Big),
            },
            StructField {
                name: "c".into(),
                data_type: DataType::Float32,
                shape: vec![2],
                endian: Some(Endian::Little),
            },
        ]),
    ]);
    for data_type in types {
        let size = data_type.fixed_size().unwrap();
        for shape in [vec![2, 3], vec![], vec![0, 4]] {
            let count: usize = shape.iter().product();
            let data: Vec<u8> = (0..count * size).map(|i| (i * 7 % 251) as u8).collect();
            round_trip(&data_type, &shape, &data);
        }
    }
}

#[test]
fn big_endian_struct_fields_are_stored_big_endian() {
    let data_type = DataType::Structured(vec![StructField {
        name: "a".into(),
        data_type: DataType::UInt16,
        shape: vec![],
        endian: Some(Endian::Big),
    }]);
    let path = temp_path("be-field");
    write_npy(&path, &data_type, &[1], &[0x01, 0x02]).unwrap();
    let raw = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(String::from_utf8_lossy(&raw).contains("'descr': [('a', '>u2')]"));
    assert_eq!(
        &raw[raw.len() - 2..],
        &[0x02, 0x01],
        "stored in the field's byte order"
    );
}

#[test]
fn big_endian_and_fortran_data_are_converted_on_read() {
    let mut h = header(DataType::UInt16, Some(Endian::Big), &[2, 3]);
    h.fortran_order = true;
    let mut file = header_bytes(&h);
    assert!(String::from_utf8_lossy(&file).contains("'fortran_order': True"));
    // [[0, 1, 2], [3, 4, 5]] column-major, big-endian.
    for v in [0u16, 3, 1, 4, 2, 5] {
        file.extend(v.to_be_bytes());
    }
    let path = temp_path("fortran");
    std::fs::write(&path, &file).unwrap();
    let (back_header, data) = read_npy(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(back_header.fortran_order);
    let values: Vec<u16> = data
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    assert_eq!(values, [0, 1, 2, 3, 4, 5]);
}

#[test]
fn long_headers_use_version_2_and_non_latin1_names_version_3() {
    let fields: Vec<StructField> = (0..3000)
        .map(|i| StructField {
            name: format!("a_rather_long_field_name_{i:05}"),
            data_type: DataType::UInt8,
            shape: vec![],
            endian: None,
        })
        .collect();
    let wide = DataType::Structured(fields);
    let bytes = header_bytes(&header(wide.clone(), None, &[1]));
    assert_eq!(&bytes[6..8], &[2, 0]);
    assert!(bytes.len() > 65535 && bytes.len() % 64 == 0);
    assert_eq!(
        read_npy_header(&mut Cursor::new(&bytes)).unwrap().data_type,
        wide
    );

    let latin1 = DataType::Structured(vec![StructField {
        name: "grün".into(),
        data_type: DataType::UInt8,
        shape: vec![],
        endian: None,
    }]);
    let bytes = header_bytes(&header(latin1.clone(), None, &[1]));
    assert_eq!(&bytes[6..8], &[1, 0], "Latin-1 text fits version 1.0");
    assert_eq!(
        read_npy_header(&mut Cursor::new(&bytes)).unwrap().data_type,
        latin1
    );

    let cjk = DataType::Structured(vec![StructField {
        name: "位置".into(),
        data_type: DataType::Float32,
        shape: vec![],
        endian: Some(Endian::Little),
    }]);
    let bytes = header_bytes(&header(cjk.clone(), None, &[1]));
    assert_eq!(&bytes[6..8], &[3, 0]);
    assert_eq!(bytes.len() % 64, 0);
    assert_eq!(
        read_npy_header(&mut Cursor::new(&bytes)).unwrap().data_type,
        cjk
    );
}

#[test]
fn variable_length_elements_are_converted_to_fixed_width() {
    let (data_type, packed) = fixed_width_for_npy(&DataType::String, &["a", "héllo", ""]).unwrap();
    assert_eq!(data_type, DataType::FixedUtf32 { chars: 5 });
    assert_eq!(packed.len(), 3 * 20);
    assert_eq!(&packed[20..28], &[b'h', 0, 0, 0, 0xe9, 0, 0, 0]);
    round_trip(&data_type, &[3], &packed);

    let (data_type, packed) =
        fixed_width_for_npy(&DataType::Bytes, &[vec![0u8, 1], vec![]]).unwrap();
    assert_eq!(data_type, DataType::FixedBytes { len: 2 });
    assert_eq!(packed, [0, 1, 0, 0]);

    let err = fixed_width_for_npy(&DataType::String, &[vec![0xffu8]]).unwrap_err();
    assert!(
        err.to_string().contains("string element 0 is not UTF-8"),
        "{err}"
    );
    let err = write_npy(temp_path("vlen"), &DataType::String, &[1], b"a").unwrap_err();
    assert!(
        err.to_string().contains("cannot be stored in .npy"),
        "{err}"
    );
    assert!(err.to_string().contains("fixed_width_for_npy"), "{err}");
}

fn header_error(file: &[u8]) -> String {
    read_npy_header(&mut Cursor::new(file))
        .unwrap_err()
        .to_string()
}

fn with_header(text: &str) -> Vec<u8> {
    let mut file = b"\x93NUMPY\x01\x00".to_vec();
    file.extend((text.len() as u16).to_le_bytes());
    file.extend(text.as_bytes());
    file
}

#[test]
fn bad_files_are_explained() {
    assert!(header_error(b"\x93NUM")
        .contains("truncated header: the file ends before the 8-byte magic"));
    assert!(header_error(b"\x93NUMPY\x01\x00\x40")
        .contains("truncated header: the file ends before the header length"));
    let mut short = b"\x93NUMPY\x01\x00\x76\x00{'descr'".to_vec();
    short.extend(b": '<f4'");
    assert!(header_error(&short).contains("truncated header: expected 118 bytes, found 15"));
    assert!(header_error(b"PK\x03\x04 not npy at all").contains("does not start with the magic"));
    assert!(header_error(b"\x93NUMPY\x09\x00\x00\x00").contains("unsupported format version 9.0"));

    let unknown = header_error(&with_header(
        "{'descr': '<q9', 'fortran_order': False, 'shape': (1,), }",
    ));
    assert!(unknown.contains("unknown typestr"), "{unknown}");
    assert!(unknown.contains("NumPy .npy"), "{unknown}");
    let malformed = header_error(&with_header(
        "{'descr': [('a',)], 'fortran_order': False, 'shape': (1,), }",
    ));
    assert!(
        malformed.contains("[name, type] or [name, type, shape]"),
        "{malformed}"
    );
    let unclosed = header_error(&with_header(
        "{'descr': [('a', '<i2'), 'fortran_order': False}",
    ));
    assert!(unclosed.contains("expected ',' or ']'"), "{unclosed}");
    let missing = header_error(&with_header("{'descr': '<i2', 'shape': (1,), }"));
    assert!(
        missing.contains("expected the keys 'descr', 'fortran_order' and 'shape'"),
        "{missing}"
    );
    let negative = header_error(&with_header(
        "{'descr': '<i2', 'fortran_order': False, 'shape': (-1,), }",
    ));
    assert!(negative.contains("non-negative integers"), "{negative}");
    let object = header_error(&with_header(
        "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }",
    ));
    assert!(object.contains("pickled Python objects"), "{object}");
    let huge = header_error(&with_header(
        "{'descr': '<f8', 'fortran_order': False, 'shape': (18446744073709551615, 4), }",
    ));
    assert!(huge.contains("is too large"), "{huge}");
    let deep = format!(
        "{{'descr': {}'<i2'{}, 'fortran_order': False, 'shape': (1,)}}",
        "[".repeat(200),
        "]".repeat(200)
    );
    assert!(header_error(&with_header(&deep)).contains("nest deeper"));
}

#[test]
fn truncated_data_names_the_file() {
    let path = temp_path("short");
    let mut file = header_bytes(&header(DataType::Int32, Some(Endian::Little), &[4]));
    file.extend([0u8; 10]);
    std::fs::write(&path, &file).unwrap();
    let err = read_npy(&path).unwrap_err().to_string();
    std::fs::remove_file(&path).unwrap();
    assert!(err.starts_with(&path.display().to_string()), "{err}");
    assert!(
        err.contains("truncated data: shape [4] of int32 needs 16 bytes, found 10"),
        "{err}"
    );
}

#[test]
fn write_checks_the_data_length_and_leaves_no_file_behind() {
    let path = temp_path("wrong-len");
    let err = write_npy(&path, &DataType::UInt16, &[3], &[0; 5])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("shape [3] of uint16 needs 6 bytes of data, got 5"),
        "{err}"
    );
    assert!(!path.exists());
}
