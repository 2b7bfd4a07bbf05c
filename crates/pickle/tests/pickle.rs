//! The restricted pickle reader and the writer against real pickles made by CPython / NumPy /
//! hdmf-zarr (see `fixtures/mod.rs` for how they were made), hostile streams, NumPy-checked
//! writer output, and the allow-list: which globals each list accepts and that code-running
//! globals are refused under every list.

use std::sync::LazyLock;

use neurochunk_pickle::{
    decode_object_array, decode_value, encode_object_array, AllowList, Meaning, PickleError,
    PickledArray, RecordField,
};
use neurochunk_testkit::pickle_cases::{
    golden_cases, nan, neg_inf, record_dtype, record_fields, writer_cases, zref,
};
use neurochunk_testkit::pickle_fixtures::*;
use serde_json::{json, Value};

/// The list the reader used before it was a parameter: NumPy plus hdmf-zarr's references.
static HDMF: LazyLock<AllowList> = LazyLock::new(AllowList::hdmf_zarr);

/// The fixtures whose payload calls code: the global each names and its opcode's offset (as
/// `pickletools.dis` shows it for the GLOBAL / STACK_GLOBAL opcode).
const EVIL_FIXTURES: [(&str, &str, usize); 3] = [
    (EVIL_SYSTEM_P2, "posix.system", 188),
    (EVIL_EVAL_P5, "builtins.eval", 161),
    (EVIL_POPEN_P4, "subprocess.Popen", 164),
];

/// `os.system('echo')` called through REDUCE, written by hand (protocol 2 GLOBAL is text).
const OS_SYSTEM: &[u8] = b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00echo\x85R.";

/// A fixture decoded as an object array under [`HDMF`].
fn read_fixture(fixture: &str) -> PickledArray {
    decode_object_array(&b64(fixture), &HDMF).unwrap()
}

/// The message of the error [`decode_value`] reports for `stream` under [`HDMF`].
fn value_error(stream: &[u8]) -> String {
    decode_value(stream, &HDMF).unwrap_err().to_string()
}

/// Assert that `message` contains `expected`, showing the whole message when it does not.
#[track_caller]
fn assert_mentions(message: &str, expected: &str) {
    assert!(
        message.contains(expected),
        "expected {expected:?} in {message}"
    );
}

/// Writer output for `encode_object_array(&[2], &[json!("a"), json!({"k": 1})], None)`.
const WRITER_GOLDEN_OBJECTS: &str = concat!(
    "8002636e756d70792e636f72652e6d756c746961727261790a5f7265636f6e7374727563740a636e756d7079",
    "0a6e6461727261790a4b0085635f636f646563730a656e636f64650a58010000006258060000006c6174696e",
    "3186528752284b014b0285636e756d70790a64747970650a58020000004f3889888752284b0358010000007c",
    "4e4e4e4affffffff4affffffff4b3f7462895d285801000000617d2858010000006b4b01756574622e",
);
/// Writer output for one `[1, 2, ref]` item with the fields of `record_fields()`.
const WRITER_GOLDEN_RECORD: &str = concat!(
    "8002636e756d70792e636f72652e6d756c746961727261790a5f7265636f6e7374727563740a636e756d7079",
    "0a6e6461727261790a4b0085635f636f646563730a656e636f64650a58010000006258060000006c6174696e",
    "3186528752284b014b0185636e756d70790a64747970650a580300000056313689888752284b035801000000",
    "7c4e58090000006964785f73746172745805000000636f756e74580a00000074696d65736572696573877d28",
    "58090000006964785f7374617274636e756d70790a64747970650a5802000000693489888752284b03580100",
    "00003c4e4e4e4affffffff4affffffff4b0074624b00865805000000636f756e74636e756d70790a64747970",
    "650a5802000000693489888752284b0358010000003c4e4e4e4affffffff4affffffff4b0074624b0486580a",
    "00000074696d65736572696573636e756d70790a64747970650a58020000004f3889888752284b0358010000",
    "007c4e4e4e4affffffff4affffffff4b3f74624b0886754b104b014b1b7462895d284b014b027d2858060000",
    "00736f7572636558010000002e58040000007061746858020000002f7858090000006f626a6563745f696458",
    "010000006f5810000000736f757263655f6f626a6563745f69645806000000726f6f742d3075876574622e",
);

// ---------------------------------------------------------------------------------------------
// Real pickles

#[test]
fn zarr_references_read_in_every_protocol() {
    let r1 = zref("/acquisition/ts1", json!("oid-1"));
    let r2 = json!({"source": ".", "path": "/processing/x", "object_id": null,
                    "source_object_id": null});
    let expected = vec![r1.clone(), r2, r1];
    for (name, fixture) in [
        ("protocol 0", REFS_P0),
        ("protocol 1", REFS_P1),
        ("protocol 2", REFS_P2),
        ("protocol 3", REFS_P3),
        ("protocol 4", REFS_P4),
        ("protocol 5", REFS_P5),
        ("numpy 1.x spelling", NUMPY1_REFS_P2),
    ] {
        let array =
            decode_object_array(&b64(fixture), &HDMF).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(array.shape, vec![3], "{name}");
        assert_eq!(array.items, expected, "{name}");
        assert_eq!(array.field_names, None, "{name}");
        assert!(!array.fortran, "{name}");
        // ZarrReference keys keep the order hdmf-zarr set them in.
        let keys: Vec<&String> = array.items[0].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["source", "path", "object_id", "source_object_id"],
            "{name}"
        );
    }
}

#[test]
fn dicts_keep_values_and_insertion_order() {
    for fixture in [DICTS_P2, DICTS_P5] {
        let array = read_fixture(fixture);
        assert_eq!(array.shape, vec![2]);
        let first = &array.items[0];
        assert_eq!(first["a"], json!(1));
        assert_eq!(first["b"], json!([1, 2.5, "x"]));
        assert_eq!(first["c"], Value::Null);
        assert_eq!(first["d"], json!(true));
        assert_eq!(first["e"], json!({"nested": "é"}));
        assert_eq!(first["big"], json!(9_223_372_036_854_775_813u64));
        assert_eq!(first["neg"], json!(-1_099_511_627_776i64));
        assert_eq!(first["nan"], nan());
        assert_eq!(first["inf"], neg_inf());
        assert_eq!(first["bytes"], json!("raw"));
        assert_eq!(first["tup"], json!([1, "two"]));
        let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["a", "b", "c", "d", "e", "big", "neg", "nan", "inf", "bytes", "tup"]
        );
        assert_eq!(array.items[1], json!({}));
    }
}

#[test]
fn structured_arrays_with_object_fields_become_objects() {
    let expected = vec![
        json!({"idx_start": 0, "count": 5, "timeseries": zref("/acquisition/ts1", json!("oid-1"))}),
        json!({"idx_start": 5, "count": 3, "timeseries": zref("/acquisition/ts2", json!("oid-2"))}),
    ];
    for fixture in [COMPOUND_P2, COMPOUND_P5] {
        let array = read_fixture(fixture);
        assert_eq!(array.shape, vec![2]);
        assert_eq!(
            array.field_names.as_deref(),
            Some(&["idx_start".to_string(), "count".into(), "timeseries".into()][..])
        );
        assert_eq!(array.items, expected);
        let keys: Vec<&String> = array.items[1].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["idx_start", "count", "timeseries"]);
    }
}

#[test]
fn lists_of_the_old_hdmf_zarr_layout_stay_lists() {
    let array = read_fixture(LISTS_P5);
    assert_eq!(
        array.items,
        vec![
            json!([0, 5, zref("/acquisition/ts1", json!("oid-1"))]),
            json!([5, 3, zref("/acquisition/ts2", json!("oid-2"))]),
        ]
    );
}

#[test]
fn structured_numpy_scalars_are_decoded_from_their_bytes() {
    // dtype [('name','<U8'),('value','>f8'),('id','<i2'),('raw','S4'),('flag','?')]; NumPy cut
    // 'électrode' to the 8 characters of U8.
    let expected = vec![
        json!({"name": "électrod", "value": 1.5, "id": -3, "raw": "ab", "flag": true}),
        json!({"name": "x", "value": -0.25, "id": 7, "raw": "wxyz", "flag": false}),
    ];
    for fixture in [VOIDS_P2, VOIDS_P5] {
        let array = read_fixture(fixture);
        assert_eq!(array.items, expected);
        // An object array of scalars has no field names of its own.
        assert_eq!(array.field_names, None);
    }
}

#[test]
fn fortran_object_arrays_list_their_elements_in_c_order() {
    let array = read_fixture(FORTRAN_P5);
    assert_eq!(array.shape, vec![2, 3]);
    assert!(array.fortran);
    assert_eq!(
        array.items,
        ["r0c0", "r0c1", "r0c2", "r1c0", "r1c1", "r1c2"]
            .map(Value::from)
            .to_vec()
    );
}

#[test]
fn mixed_python_values_map_to_json() {
    let long = "L".repeat(300);
    let expected = vec![
        json!("plain"),
        json!("é🦀"),
        json!(""),
        json!(long),
        json!(0),
        json!(-1),
        json!(255),
        json!(65535),
        json!(2_147_483_648u64),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(1.5),
        nan(),
        neg_inf(),
        json!(true),
        Value::Null,
        json!("bytes"),
        json!(2.5),
        json!(-7),
    ];
    for fixture in [MIXED_P2, MIXED_P4] {
        let array = read_fixture(fixture);
        assert_eq!(array.shape, vec![19]);
        assert_eq!(array.items, expected);
    }
}

#[test]
fn zero_d_nested_and_numeric_arrays() {
    let zero_d = read_fixture(ZERO_D_P5);
    assert_eq!(zero_d.shape, Vec::<usize>::new());
    assert_eq!(zero_d.items, vec![json!("only")]);
    for fixture in [NESTED_P2, NESTED_P5] {
        let nested = read_fixture(fixture);
        assert_eq!(nested.items, vec![json!([0, 1, 2]), json!([[1.5, 2.0]])]);
    }
    let numeric = read_fixture(NUMERIC_P5);
    assert_eq!(numeric.shape, vec![2, 2]);
    assert_eq!(numeric.items, vec![json!(1), json!(2), json!(3), json!(4)]);
}

#[test]
fn fill_value_pickle_decodes() {
    // The `fill_value` hdmf-zarr arrays with object fields carry: pickle.dumps(0, protocol=5).
    assert_eq!(decode_value(&b64("gAVLAC4="), &HDMF).unwrap(), json!(0));
    let not_an_array = decode_object_array(&b64("gAVLAC4="), &HDMF).unwrap_err();
    assert!(
        not_an_array
            .to_string()
            .contains("holds a int, not a numpy array"),
        "{not_an_array}"
    );
}

// ---------------------------------------------------------------------------------------------
// Hostile input

#[test]
fn malicious_globals_are_refused_by_name() {
    for (fixture, global, offset) in EVIL_FIXTURES {
        let err = decode_object_array(&b64(fixture), &HDMF).unwrap_err();
        assert!(
            matches!(&err, PickleError::RefusedGlobal { offset: o, .. } if *o == offset),
            "{err:?}"
        );
        let message = err.to_string();
        let (named, at) = (format!("'{global}'"), format!("at byte {offset}"));
        for expected in [named.as_str(), at.as_str(), "refused", "never run"] {
            assert_mentions(&message, expected);
        }
        assert!(decode_value(&b64(fixture), &HDMF).is_err());
    }
    // os.system called through REDUCE, written by hand (protocol 2 GLOBAL is text).
    assert_mentions(&value_error(OS_SYSTEM), "'os.system' at byte 2");
    // Allowed module, other name; allowed name, other module.
    for (stream, global) in [
        (&b"cnumpy\nload\n."[..], "numpy.load"),
        (b"cbuiltins\ngetattr\n.", "builtins.getattr"),
        (b"cposix\ndict\n.", "posix.dict"),
        (b"\x8c\x08builtins\x8c\x04eval\x93.", "builtins.eval"),
    ] {
        assert_mentions(&value_error(stream), &format!("'{global}'"));
    }
}

#[test]
fn refused_opcodes_are_named_with_their_offset() {
    for (stream, name, offset) in [
        (&b"\x80\x02\x82\x01."[..], "EXT1", 2),
        (b"\x80\x02\x83\x01\x00.", "EXT2", 2),
        (b"\x80\x02\x84\x01\x00\x00\x00.", "EXT4", 2),
        (b"(iposix\nsystem\n.", "INST", 1),
        (b"(cposix\nsystem\no.", "OBJ", 0),
        (b"Pfoo\n.", "PERSID", 0),
        (b"\x80\x02NQ.", "BINPERSID", 3),
        (b"\x80\x05\x97.", "NEXT_BUFFER", 2),
        (b"\x80\x05N\x98.", "READONLY_BUFFER", 3),
        (b"\x80\x04\x8f.", "EMPTY_SET", 2),
        (b"S'text'\n.", "STRING", 0),
    ] {
        let message = value_error(stream);
        // OBJ follows a GLOBAL, which is refused first.
        if name == "OBJ" {
            assert_mentions(&message, "'posix.system'");
            continue;
        }
        assert!(
            message.contains(&format!("opcode {name} "))
                && message.contains(&format!("at byte {offset}")),
            "{name}: {message}"
        );
    }
    assert_mentions(
        &value_error(b"\x80\x02\xff."),
        "invalid pickle opcode 0xff at byte 2",
    );
    assert_mentions(&value_error(b"\x80\x06N."), "unsupported protocol 6");
}

#[test]
fn every_truncation_is_reported_with_its_length() {
    for fixture in [
        REFS_P0,
        REFS_P2,
        REFS_P5,
        COMPOUND_P2,
        VOIDS_P5,
        MIXED_P4,
        NESTED_P5,
    ] {
        let full = b64(fixture);
        for len in 0..full.len() {
            let err = decode_object_array(&full[..len], &HDMF).unwrap_err();
            assert!(
                matches!(err, PickleError::Truncated { len: l, .. } if l == len),
                "prefix of {len} bytes: {err:?}"
            );
            assert!(
                err.to_string()
                    .contains(&format!("truncated at byte {len}")),
                "{err}"
            );
        }
    }
    assert_mentions(
        &value_error(b"\x80\x02X\x10\x00\x00\x00abc"),
        "truncated at byte 10: BINUNICODE at byte 2 needs 16 more bytes, 3 remain",
    );
}

#[test]
fn missing_stop_and_short_frames_are_truncations() {
    assert_eq!(
        value_error(b"\x80\x02N"),
        "pickle truncated at byte 3: the stream ends before its STOP opcode"
    );
    assert_mentions(
        &value_error(b"\x80\x04\x95\x09\x00\x00\x00\x00\x00\x00\x00N."),
        "truncated at byte 13: FRAME at byte 2 declares 9 bytes, 2 remain",
    );
    assert_mentions(
        &value_error(b"cnumpy\ndtype"),
        "truncated at byte 12: GLOBAL at byte 0 has no end of line",
    );
}

#[test]
fn huge_declared_lengths_fail_before_allocating() {
    let mut streams: Vec<Vec<u8>> = Vec::new();
    for op in [0x8du8, 0x8e, 0x96, 0x95] {
        let mut s = vec![0x80, 0x05, op];
        s.extend_from_slice(&u64::MAX.to_le_bytes());
        streams.push(s);
        let mut s = vec![0x80, 0x05, op];
        s.extend_from_slice(&(1u64 << 40).to_le_bytes());
        s.extend_from_slice(b"abc.");
        streams.push(s);
    }
    let mut s = vec![0x80, 0x02, b'X'];
    s.extend_from_slice(&u32::MAX.to_le_bytes());
    streams.push(s);
    for s in streams {
        let err = decode_value(&s, &HDMF).unwrap_err();
        assert!(matches!(err, PickleError::Truncated { .. }), "{err:?}");
    }
    // A negative LONG4 / BINSTRING length is malformed.
    assert_mentions(
        &value_error(b"\x80\x02\x8b\xff\xff\xff\xff."),
        "negative LONG4 length -1",
    );
}

#[test]
fn malformed_machine_states_are_errors() {
    for (stream, expected) in [
        (&b"\x80\x02."[..], "STOP at byte 2: stack underflow"),
        (b"\x80\x02a.", "APPEND at byte 2: stack underflow"),
        (b"\x80\x02N\x87.", "TUPLE3 at byte 3: stack underflow (needs 3 items, has 1)"),
        (b"\x80\x02t.", "TUPLE at byte 2: no MARK to pop to"),
        (b"\x80\x02h\x05.", "BINGET at byte 2: memo index 5 is not set"),
        (b"\x80\x02j\x00\x00\x00\x01.", "memo index 16777216 is not set"),
        (b"g7\n.", "GET at byte 0: memo index 7 is not set"),
        (b"\x80\x02NNa.", "cannot append to a None"),
        (b"\x80\x02]NNs.", "cannot set items of a list"),
        (b"\x80\x02}(Nu.", "odd count"),
        (b"\x80\x02N)R.", "cannot call a None"),
        (b"\x80\x02cbuiltins\ndict\nN\x81.", "the arguments must be a tuple"),
        (b"\x80\x02Nb.", "stack underflow"),
        (b"\x80\x02NNb.", "BUILD (setting the state) of a None is not supported"),
        (b"Ix\n.", "\"x\" is not a decimal integer"),
        (b"Fnope\n.", "\"nope\" is not a float"),
        (b"\x80\x02X\x02\x00\x00\x00\xff\xfe.", "not valid UTF-8"),
        (
            b"\x80\x02cnumpy.core.multiarray\n_reconstruct\ncbuiltins\ndict\nK\x00\x85C\x01b\x87R.",
            "_reconstruct is only read for numpy.ndarray",
        ),
        (
            b"\x80\x02cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\n\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x40\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x40\x86C\x01b\x87R.",
            "overflows",
        ),
        (b"\x80\x02cnumpy\ndtype\nX\x01\x00\x00\x00x\x85R.", "holds a numpy dtype"),
    ] {
        let message = match decode_object_array(stream, &HDMF) {
            Ok(array) => panic!("{expected}: decoded {array:?}"),
            Err(e) => e.to_string(),
        };
        assert_mentions(&message, expected);
    }
}

#[test]
fn self_reference_deep_nesting_and_blow_up_are_limited() {
    // l = []; l.append(l)
    assert_mentions(
        &value_error(b"\x80\x02]q\x00h\x00a."),
        "deeper than 128 levels",
    );
    // 300 lists nested in each other.
    let mut nested = b"\x80\x02".to_vec();
    nested.extend(std::iter::repeat_n(b']', 300));
    nested.extend(std::iter::repeat_n(b'a', 299));
    nested.push(b'.');
    assert_mentions(&value_error(&nested), "deeper than 128 levels");
    // x = None; 100 times x = (x, x): 2**100 leaves from 203 bytes.
    let mut doubling = b"\x80\x02N".to_vec();
    for _ in 0..100 {
        doubling.extend_from_slice(b"2\x86");
    }
    doubling.push(b'.');
    assert_mentions(&value_error(&doubling), "far larger than the pickle");
    // Too many MARKs.
    let marks = vec![b'('; 10_000];
    assert_mentions(&value_error(&marks), "nested MARKs");
    // An integer beyond 64 bits, and non-UTF-8 bytes, have no JSON form.
    assert_mentions(
        &value_error(b"\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01."),
        "integer 18446744073709551616 does not fit in 64 bits",
    );
    assert_mentions(
        &value_error(b"\x80\x03C\x02\xff\xfe."),
        "bytes value is not UTF-8 text",
    );
}

/// `X` (BINUNICODE) of `s`.
fn binunicode(s: &str) -> Vec<u8> {
    let mut out = vec![b'X'];
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    out
}

/// `numpy.dtype(spec, False, True)` built with a state whose names / fields are given as raw
/// pickle ops (`b"N"` for none); the class is in memo 0.
fn dtype_ops(spec: &str, endian: &str, names_fields: &[u8], size: i8, flags: u8) -> Vec<u8> {
    let mut out = b"h\x00".to_vec();
    out.extend(binunicode(spec));
    out.extend_from_slice(b"\x89\x88\x87R(K\x03");
    out.extend(binunicode(endian));
    out.push(b'N');
    out.extend_from_slice(names_fields);
    out.extend_from_slice(&[b'J', size as u8, 0xff, 0xff, 0xff]);
    out.extend_from_slice(&[b'K', 1, b'K', flags, b't', b'b']);
    out
}

#[test]
fn shared_values_cannot_multiply_work() {
    // A 100 kB str in the memo, encoded to bytes again and again.
    let mut stream = b"\x80\x02c_codecs\nencode\nq\x00".to_vec();
    stream.extend(binunicode(&"a".repeat(100_000)));
    stream.extend_from_slice(b"q\x01");
    for _ in 0..1000 {
        stream.extend_from_slice(b"h\x00h\x01");
        stream.extend(binunicode("latin1"));
        stream.extend_from_slice(b"\x86R0");
    }
    stream.extend_from_slice(b"N.");
    let message = value_error(&stream);
    assert_mentions(&message, "REDUCE at byte");
    assert_mentions(&message, "far more data than it holds");

    // A structured dtype whose two fields are the previous level's dtype at offset 0, 40
    // levels deep: 2**40 values from one byte of a numpy scalar.
    let mut stream = b"\x80\x02cnumpy\ndtype\nq\x00".to_vec();
    stream.extend(dtype_ops("u1", "|", b"NN", -1, 0));
    stream.extend_from_slice(b"q\x01");
    for level in 1..=40u8 {
        let mut names_fields = binunicode("a");
        names_fields.extend(binunicode("b"));
        names_fields.extend_from_slice(b"\x86}(");
        for name in ["a", "b"] {
            names_fields.extend(binunicode(name));
            names_fields.extend_from_slice(&[b'h', level, b'K', 0, 0x86]);
        }
        names_fields.push(b'u');
        let mut ops = dtype_ops("V1", "|", &names_fields, 1, 16);
        // The element size of a structured dtype is written as BININT 1 here.
        ops.extend_from_slice(&[b'q', level + 1]);
        stream.extend(ops);
    }
    stream.extend_from_slice(b"cnumpy.core.multiarray\nscalar\nh\x29C\x01x\x86R.");
    assert_mentions(&value_error(&stream), "far larger than the pickle");
    // The same dtype two levels deep decodes.
    let shallow = {
        let end = stream
            .windows(2)
            .position(|w| w == [b'q', 3])
            .expect("level 2")
            + 2;
        let mut s = stream[..end].to_vec();
        s.extend_from_slice(b"cnumpy.core.multiarray\nscalar\nh\x03C\x01x\x86R.");
        s
    };
    assert_eq!(
        decode_value(&shallow, &HDMF).unwrap(),
        json!({"a": {"a": 120, "b": 120}, "b": {"a": 120, "b": 120}})
    );

    // More dimensions than NumPy allows.
    let mut stream = b"\x80\x02cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\n(".to_vec();
    stream.extend(std::iter::repeat_n([b'K', 1], 65).flatten());
    stream.extend_from_slice(b"tC\x01b\x87R.");
    assert_mentions(
        &value_error(&stream),
        "the shape has 65 items, more than the 64 expected",
    );
}

#[test]
fn wrong_element_counts_are_errors() {
    let good = encode_object_array(&[2], &[json!("a"), json!("b")], None).unwrap();
    // Claim 3 elements in the BUILD state's shape.
    let at = good
        .windows(5)
        .position(|w| w == b"(K\x01K\x02")
        .expect("state shape");
    let mut bad = good.clone();
    bad[at + 4] = 3;
    let message = decode_object_array(&bad, &HDMF).unwrap_err().to_string();
    assert_mentions(&message, "shape [3] holds 2 elements instead of 3");
}

/// A small deterministic generator for the mutation test.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn mutated_fixtures_never_panic() {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for fixture in [
        REFS_P0,
        REFS_P2,
        REFS_P5,
        COMPOUND_P5,
        VOIDS_P2,
        MIXED_P2,
        NESTED_P5,
        DICTS_P5,
    ] {
        let base = b64(fixture);
        for _ in 0..400 {
            let mut data = base.clone();
            for _ in 0..1 + rng.next() % 4 {
                let i = (rng.next() as usize) % data.len();
                data[i] = rng.next() as u8;
            }
            let _ = decode_object_array(&data, &HDMF);
            let _ = decode_value(&data, &HDMF);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The writer

#[test]
fn writer_output_reads_back() {
    for (name, shape, items, record) in writer_cases() {
        let bytes = encode_object_array(&shape, &items, record.as_deref()).unwrap();
        let array = decode_object_array(&bytes, &HDMF).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(array.shape, shape, "{name}");
        assert!(!array.fortran);
        match &record {
            None => {
                assert_eq!(array.items, items, "{name}");
                assert_eq!(array.field_names, None);
            }
            Some(fields) => {
                let names: Vec<String> = fields.iter().map(|f| f.name.clone()).collect();
                assert_eq!(array.field_names.as_ref(), Some(&names), "{name}");
                for (got, given) in array.items.iter().zip(&items) {
                    let given = match given {
                        Value::Array(values) => Value::Object(
                            names.iter().cloned().zip(values.iter().cloned()).collect(),
                        ),
                        other => other.clone(),
                    };
                    let mut given = given;
                    // "NaN" in a float field is stored as a float.
                    if given.get("e") == Some(&json!("NaN")) {
                        given["e"] = nan();
                    }
                    assert_eq!(got, &given, "{name}");
                }
            }
        }
    }
}

#[test]
fn writer_output_is_stable() {
    // Loaded by NumPy 2.4 and 2.5 (`pickle.loads`) when this was written; a change to the
    // writer must be checked against NumPy again (tests/interop/*/test_pickle_writer_numpy_*.py).
    let golden = golden_cases();
    assert_eq!(hex(&golden[0].1), WRITER_GOLDEN_OBJECTS);
    assert_eq!(hex(&golden[1].1), WRITER_GOLDEN_RECORD);
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn writer_refuses_what_it_cannot_write() {
    let err = |shape: &[usize], items: &[Value], record: Option<&[RecordField]>| {
        encode_object_array(shape, items, record)
            .unwrap_err()
            .to_string()
    };
    assert!(err(&[3], &[json!(1)], None).contains("1 items for shape [3]"));
    let fields = record_fields();
    assert!(
        err(&[1], &[json!({"idx_start": 0, "count": 1})], Some(&fields))
            .contains("field \"timeseries\" is missing")
    );
    assert!(err(
        &[1],
        &[json!({"idx_start": 0, "count": 1, "timeseries": null, "x": 1})],
        Some(&fields)
    )
    .contains("no field is named \"x\""));
    assert!(err(&[1], &[json!([1, 2])], Some(&fields)).contains("a list of 3 values"));
    assert!(err(
        &[1],
        &[json!({"idx_start": 2_147_483_648u64, "count": 1, "timeseries": null})],
        Some(&fields)
    )
    .contains("2147483648 is out of range -2147483648..=2147483647"));
    assert!(err(
        &[1],
        &[json!({"idx_start": 1.5, "count": 1, "timeseries": null})],
        Some(&fields)
    )
    .contains("1.5 is not a valid value"));
    let complex = record_dtype(&[("z", "<c8")]);
    assert!(err(&[1], &[json!([0])], Some(&complex)).contains("\"<c8\" is not supported"));
    assert!(err(&[1], &[json!(1)], Some(&[])).contains("at least one field"));
    let mut deep = json!(1);
    for _ in 0..200 {
        deep = json!([deep]);
    }
    assert!(err(&[1], &[deep], None).contains("deeper than 128"));
}

// ---------------------------------------------------------------------------------------------
// The allow-list

/// The refused global of `err` as (module.name, offset).
fn refused(err: &PickleError) -> (String, usize) {
    match err {
        PickleError::RefusedGlobal {
            module,
            name,
            offset,
        } => (format!("{module}.{name}"), *offset),
        other => panic!("expected a refused global, got {other:?}"),
    }
}

#[test]
fn zarr_references_are_refused_under_numpy_and_read_under_hdmf_zarr() {
    // Offsets are those `pickletools.dis` shows for the GLOBAL / STACK_GLOBAL opcode naming
    // the class.
    for (fixture, offset) in [
        (REFS_P2, 189),
        (REFS_P3, 149),
        (REFS_P4, 178),
        (REFS_P5, 178),
        (NUMPY1_REFS_P2, 188),
        (COMPOUND_P2, 354),
        (COMPOUND_P5, 308),
        (LISTS_P5, 185),
    ] {
        let bytes = b64(fixture);
        let err = decode_object_array(&bytes, &AllowList::numpy()).unwrap_err();
        assert_eq!(
            refused(&err),
            ("hdmf_zarr.utils.ZarrReference".to_string(), offset)
        );
        assert_mentions(
            &err.to_string(),
            &format!("'hdmf_zarr.utils.ZarrReference' at byte {offset} is refused"),
        );
        assert!(decode_value(&bytes, &AllowList::numpy()).is_err());
        let array = decode_object_array(&bytes, &AllowList::hdmf_zarr()).unwrap();
        assert!(array.items[0].to_string().contains("/acquisition/ts1"));
    }
    // Protocols 0 and 1 make the instance with copyreg._reconstructor, named first.
    let with_copyreg = AllowList::numpy()
        .allow("copy_reg", "_reconstructor", Meaning::CopyregReconstructor)
        .allow("__builtin__", "dict", Meaning::Dict);
    for (fixture, copyreg_at, class_at) in [(REFS_P0, 219, 249), (REFS_P1, 201, 229)] {
        let bytes = b64(fixture);
        let err = decode_object_array(&bytes, &AllowList::numpy()).unwrap_err();
        assert_eq!(
            refused(&err),
            ("copy_reg._reconstructor".to_string(), copyreg_at)
        );
        let err = decode_object_array(&bytes, &with_copyreg).unwrap_err();
        assert_eq!(
            refused(&err),
            ("hdmf_zarr.utils.ZarrReference".to_string(), class_at)
        );
        let with_class =
            with_copyreg
                .clone()
                .allow("hdmf_zarr.utils", "ZarrReference", Meaning::DictSubclass);
        assert_eq!(
            decode_object_array(&bytes, &with_class).unwrap(),
            decode_object_array(&bytes, &AllowList::hdmf_zarr()).unwrap()
        );
    }
}

#[test]
fn numpy_values_read_under_the_numpy_list() {
    for fixture in [
        DICTS_P2, DICTS_P5, VOIDS_P2, VOIDS_P5, FORTRAN_P5, MIXED_P2, MIXED_P4, ZERO_D_P5,
        NESTED_P2, NESTED_P5, NUMERIC_P5,
    ] {
        let bytes = b64(fixture);
        assert_eq!(
            decode_object_array(&bytes, &AllowList::numpy()).unwrap(),
            decode_object_array(&bytes, &HDMF).unwrap()
        );
    }
    // The writer's output names NumPy's globals only.
    for (name, bytes) in golden_cases() {
        let array = decode_object_array(&bytes, &AllowList::numpy());
        assert!(array.is_ok(), "{name}: {array:?}");
    }
}

#[test]
fn narrowed_extended_and_empty_lists() {
    // Without numpy.dtype no NumPy array reads; the error names the first global refused.
    let no_dtype = AllowList::hdmf_zarr().deny("numpy", "dtype");
    let err = decode_object_array(&b64(REFS_P2), &no_dtype).unwrap_err();
    assert_eq!(refused(&err), ("numpy.dtype".to_string(), 122));
    // NumPy 2.x spellings only: a NumPy 1.x stream is refused at its first opcode.
    let numpy2 = AllowList::hdmf_zarr()
        .deny("numpy.core.multiarray", "_reconstruct")
        .deny("numpy.core.multiarray", "scalar")
        .deny("numpy.core.numeric", "_frombuffer");
    assert!(decode_object_array(&b64(REFS_P2), &numpy2).is_ok());
    let err = decode_object_array(&b64(NUMPY1_REFS_P2), &numpy2).unwrap_err();
    assert_eq!(
        refused(&err),
        ("numpy.core.multiarray._reconstruct".to_string(), 2)
    );

    // A dict subclass of one's own, read like ZarrReference.
    let stream = b"\x80\x02cmypackage.refs\nRef\n)\x81(X\x04\x00\x00\x00pathX\x02\x00\x00\x00/au.";
    let err = decode_value(stream, &HDMF).unwrap_err();
    assert_eq!(refused(&err), ("mypackage.refs.Ref".to_string(), 2));
    let extended = AllowList::numpy().allow("mypackage.refs", "Ref", Meaning::DictSubclass);
    assert_eq!(
        decode_value(stream, &extended).unwrap(),
        json!({"path": "/a"})
    );

    // The empty list reads plain values (the pickled fill value 0) and no NumPy array.
    let empty = AllowList::new();
    assert!(empty.is_empty());
    assert_eq!(decode_value(&b64("gAVLAC4="), &empty).unwrap(), json!(0));
    let err = decode_object_array(&b64(REFS_P5), &empty).unwrap_err();
    assert_eq!(
        refused(&err),
        ("numpy._core.multiarray._reconstruct".to_string(), 51)
    );
}

#[test]
fn code_running_globals_are_refused_under_every_list() {
    let lists = [
        AllowList::new(),
        AllowList::numpy(),
        AllowList::hdmf_zarr(),
        AllowList::hdmf_zarr().allow("mypackage.refs", "Ref", Meaning::DictSubclass),
    ];
    for list in &lists {
        for (fixture, global, offset) in EVIL_FIXTURES {
            let bytes = b64(fixture);
            // The empty list refuses the NumPy reconstructor before the payload.
            let expected = if list.is_empty() {
                (
                    "numpy._core.multiarray._reconstruct".to_string(),
                    if fixture == EVIL_SYSTEM_P2 { 2 } else { 51 },
                )
            } else {
                (global.to_string(), offset)
            };
            assert_eq!(
                refused(&decode_object_array(&bytes, list).unwrap_err()),
                expected
            );
            assert_eq!(refused(&decode_value(&bytes, list).unwrap_err()), expected);
        }
        for (stream, global) in [
            (OS_SYSTEM, "os.system"),
            (
                b"\x80\x02cbuiltins\neval\nX\x03\x00\x00\x001+1\x85R.",
                "builtins.eval",
            ),
            (
                b"\x80\x02csubprocess\nPopen\n]X\x04\x00\x00\x00echoa\x85R.",
                "subprocess.Popen",
            ),
            (b"\x8c\x08builtins\x8c\x04exec\x93.", "builtins.exec"),
        ] {
            assert_eq!(refused(&decode_value(stream, list).unwrap_err()).0, global);
        }
    }
    // A meaning only selects the reader's own behaviour: even a list that names os.system
    // cannot make it run.
    let odd = AllowList::new().allow("os", "system", Meaning::DictSubclass);
    let message = decode_value(OS_SYSTEM, &odd).unwrap_err().to_string();
    assert_mentions(&message, "calling os.system directly is not supported");
}
