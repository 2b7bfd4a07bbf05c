//! JSON helpers against Python's `json` module: expected strings were produced with CPython
//! 3.11 `json.dumps` / `repr`.

use neurochunk_dtype::json::{parse_lenient, python_float_repr, to_python_json, PyJsonStyle};
use neurochunk_dtype::DtypeError;
use serde_json::{json, Value};

#[test]
fn float_repr_matches_python() {
    let cases: &[(f64, &str)] = &[
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.5, "1.5"),
        (1e20, "1e+20"),
        (1e-5, "1e-05"),
        (123456789.0, "123456789.0"),
        (1.2345678901234567e16, "1.2345678901234568e+16"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (0.1, "0.1"),
        (1.0 / 3.0, "0.3333333333333333"),
        (1e16, "1e+16"),
        (1e15, "1000000000000000.0"),
        (0.0001, "0.0001"),
        (2.5e-5, "2.5e-05"),
        (100.0, "100.0"),
        (1e22, "1e+22"),
        (-1e-7, "-1e-07"),
        (12345678901234567890.0, "1.2345678901234567e+19"),
        (0.30000000000000004, "0.30000000000000004"),
        (f64::NAN, "NaN"),
        (f64::NEG_INFINITY, "-Infinity"),
    ];
    for (x, expected) in cases {
        assert_eq!(python_float_repr(*x), *expected, "repr of {x:e}");
    }
}

fn sample() -> Value {
    json!({
        "foo": "bär",
        "e": "😀",
        "ctl": "a\u{1}\u{7f}\t\n\"\\",
        "nested": {"z": [], "a": {}, "l": [1, [2, {}], {"k": null}]},
        "f": [1.0, -0.0, 1e20]
    })
}

#[test]
fn zarr_python2_style_is_byte_identical() {
    let expected = "{\n    \"ctl\": \"a\\u0001\\u007f\\t\\n\\\"\\\\\",\n    \"e\": \"\\ud83d\\ude00\",\n    \"f\": [\n        1.0,\n        -0.0,\n        1e+20\n    ],\n    \"foo\": \"b\\u00e4r\",\n    \"nested\": {\n        \"a\": {},\n        \"l\": [\n            1,\n            [\n                2,\n                {}\n            ],\n            {\n                \"k\": null\n            }\n        ],\n        \"z\": []\n    }\n}";
    assert_eq!(
        to_python_json(&sample(), PyJsonStyle::ZARR_PYTHON2),
        expected
    );
}

#[test]
fn zarr_python3_style_keeps_insertion_order() {
    let expected = "{\n  \"foo\": \"b\\u00e4r\",\n  \"e\": \"\\ud83d\\ude00\",\n  \"ctl\": \"a\\u0001\\u007f\\t\\n\\\"\\\\\",\n  \"nested\": {\n    \"z\": [],\n    \"a\": {},\n    \"l\": [\n      1,\n      [\n        2,\n        {}\n      ],\n      {\n        \"k\": null\n      }\n    ]\n  },\n  \"f\": [\n    1.0,\n    -0.0,\n    1e+20\n  ]\n}";
    assert_eq!(
        to_python_json(&sample(), PyJsonStyle::ZARR_PYTHON3),
        expected
    );
}

#[test]
fn python_default_and_compact_styles() {
    let default = "{\"foo\": \"b\\u00e4r\", \"e\": \"\\ud83d\\ude00\", \"ctl\": \"a\\u0001\\u007f\\t\\n\\\"\\\\\", \"nested\": {\"z\": [], \"a\": {}, \"l\": [1, [2, {}], {\"k\": null}]}, \"f\": [1.0, -0.0, 1e+20]}";
    assert_eq!(
        to_python_json(&sample(), PyJsonStyle::PYTHON_DEFAULT),
        default
    );
    // ensure_ascii=False keeps text (and DEL) as is; control characters are still escaped.
    let raw = PyJsonStyle {
        ensure_ascii: false,
        ..PyJsonStyle::COMPACT
    };
    let expected = "{\"foo\":\"bär\",\"e\":\"😀\",\"ctl\":\"a\\u0001\u{7f}\\t\\n\\\"\\\\\",\"nested\":{\"z\":[],\"a\":{},\"l\":[1,[2,{}],{\"k\":null}]},\"f\":[1.0,-0.0,1e+20]}";
    assert_eq!(to_python_json(&sample(), raw), expected);
}

#[test]
fn zarray_documents_match_the_reference_writers() {
    // V2-01 as zarr-python 3 writes it: 209 bytes, insertion order, indent 2.
    let zp3 = json!({"shape": [2, 3], "chunks": [2, 2], "dtype": "<u2", "fill_value": 0,
        "order": "C", "filters": null, "dimension_separator": ".", "compressor": null,
        "zarr_format": 2});
    let text = to_python_json(&zp3, PyJsonStyle::ZARR_PYTHON3);
    assert_eq!(text.len(), 209);
    assert!(text.starts_with("{\n  \"shape\": [\n    2,\n    3\n  ],\n  \"chunks\""));
    // tensorstore: compact, sorted, 146 bytes.
    let ts = to_python_json(&zp3, PyJsonStyle::COMPACT.with_sorted_keys(true));
    assert_eq!(
        ts,
        "{\"chunks\":[2,2],\"compressor\":null,\"dimension_separator\":\".\",\"dtype\":\"<u2\",\"fill_value\":0,\"filters\":null,\"order\":\"C\",\"shape\":[2,3],\"zarr_format\":2}"
    );
    assert_eq!(ts.len(), 146);
}

#[test]
fn integers_keep_full_u64_and_i64_range() {
    let value = json!([u64::MAX, i64::MIN, 0]);
    assert_eq!(
        to_python_json(&value, PyJsonStyle::COMPACT),
        "[18446744073709551615,-9223372036854775808,0]"
    );
}

#[test]
fn bar_with_umlaut_is_escaped_like_python() {
    let value = json!({"foo": "bär"});
    assert_eq!(
        to_python_json(&value, PyJsonStyle::PYTHON_DEFAULT),
        "{\"foo\": \"b\\u00e4r\"}"
    );
}

#[test]
fn lenient_parse_quotes_bare_non_finite_tokens() {
    let text = br#"{"fill_value": NaN, "a": [Infinity, -Infinity, 1.5], "s": "NaN Infinity -Infinity", "t": "x\"NaN"}"#;
    let value = parse_lenient(text).unwrap();
    assert_eq!(value["fill_value"], json!("\u{0}NaN"));
    assert_eq!(value["a"], json!(["\u{0}Infinity", "\u{0}-Infinity", 1.5]));
    // Inside strings (even after an escaped quote) nothing changes.
    assert_eq!(value["s"], json!("NaN Infinity -Infinity"));
    assert_eq!(value["t"], json!("x\"NaN"));
    // Written back, bare tokens stay bare and real strings stay strings.
    assert_eq!(
        to_python_json(&value, PyJsonStyle::COMPACT),
        r#"{"fill_value":NaN,"a":[Infinity,-Infinity,1.5],"s":"NaN Infinity -Infinity","t":"x\"NaN"}"#
    );
    assert_eq!(
        to_python_json(
            &neurochunk_dtype::json::non_finite_value(f64::NEG_INFINITY),
            PyJsonStyle::COMPACT
        ),
        "-Infinity"
    );
}

#[test]
fn lenient_parse_reports_position_in_the_original_text() {
    // The error is on line 2 after two rewritten tokens; columns must not count the quotes
    // inserted around them.
    let text = b"{\"a\": NaN,\n \"b\": [NaN, Infinity, tru]}";
    let err = parse_lenient(text).unwrap_err();
    match &err {
        DtypeError::Json { line, column, .. } => {
            assert_eq!(*line, 2);
            // ` "b": [NaN, Infinity, tru]}`: serde_json stops at the `]`, column 26 of the
            // original line (column 30 of the rewritten one).
            assert_eq!(*column, 26);
        }
        other => panic!("unexpected error {other:?}"),
    }
    let message = err.to_string();
    assert!(
        message.starts_with("invalid JSON at line 2, column"),
        "{message}"
    );
    assert!(message.contains("expected ident"), "{message}");

    let err = parse_lenient(b"{\"a\": NaN x}").unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid JSON at line 1, column 11: expected `,` or `}`"
    );
}

#[test]
fn lenient_parse_rejects_truncated_text() {
    let err = parse_lenient(b"{\"a\": [1, 2").unwrap_err();
    let message = err.to_string();
    assert!(message.contains("line 1"), "{message}");
    assert!(message.contains("EOF"), "{message}");
}
