//! The numcodecs `pickle` codec (on `neurochunk-pickle`'s restricted reader and writer) against
//! real pickles made by CPython / NumPy / hdmf-zarr (`neurochunk_testkit::pickle_fixtures`, shared with `neurochunk-pickle`'s
//! tests) and chunks zarr-python wrote: decoding through the v2 chain, element texts, Fortran
//! order, round trips, the allow-list the codec decodes under, registration.
//!
//! The `ZARR_*` chunks are files zarr-python 2.18 wrote for datasets created the way hdmf-zarr
//! creates them (`require_dataset(..., object_codec=numcodecs.Pickle())`, default blosc), with
//! `NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE=1`:
//!
//! ```python
//! d = g.require_dataset('refs', shape=(3,), chunks=(2,), dtype=object, object_codec=Pickle())
//! d[:] = np.array([ref('/a', 'o1'), ref('/b', 'o2'), ref('/c', 'o3')])
//! c = g.require_dataset('comp', shape=(2,), dtype=cdt, object_codec=Pickle())
//! c[...] = np.array([(0, 5, ref('/a', 'o1')), (5, 3, ref('/b', 'o2'))], dtype=cdt)
//! ```
//! (with `ref(p, o) = ZarrReference(source='.', path=p, object_id=o, source_object_id='root-0')`
//! and `cdt` as in `neurochunk_testkit::pickle_fixtures`).

use neurochunk_codec::{
    AnyCodec, ArrayBytes, ArrayToBytesCodec, ChunkRepr, CodecChain, CodecError, CodecRegistry,
    PickleCodec,
};
use neurochunk_dtype::DataType;
use neurochunk_pickle::{decode_object_array, AllowList};
use neurochunk_testkit::pickle_cases::{pickle_chain, repr, variable};
use neurochunk_testkit::pickle_fixtures::{
    b64, DICTS_P5, EVIL_SYSTEM_P2, FORTRAN_P5, MIXED_P2, REFS_P5,
};
use serde_json::json;

// refs/.zarray: {"chunks": [2], "compressor": {"blocksize": 0, "clevel": 5, "cname": "lz4", "id": "blosc", "shuffle": 1}, "dtype": "|O", "fill_value": 0, "filters": [{"id": "pickle", "protocol": 5}], "order": "C", "shape": [3], "zarr_format": 2}
const ZARR_REFS_0: &str = concat!(
    "AgEjASEBAAAhAQAAMQEAAIAFlRYBAAAAAAAAjBZudW1weS5fY29yZS5tdWx0aWFycmF5lIwMX3JlY29uc3RydWN0",
    "lJOUjAVudW1weZSMB25kYXJyYXmUk5RLAIWUQwFilIeUUpQoSwFLAoWUaAOMBWR0eXBllJOUjAJPOJSJiIeUUpQo",
    "SwOMAXyUTk5OSv////9K/////0s/dJRiiV2UKIwPaGRtZl96YXJyLnV0aWxzlIwNWmFyclJlZmVyZW5jZZSTlCmB",
    "lCiMBnNvdXJjZZSMAS6UjARwYXRolIwCL2GUjAlvYmplY3RfaWSUjAJvMZSMEHNvdXJjZV9vYmplY3RfaWSUjAZy",
    "b290LTCUdWgVKYGUKGgXaBhoGYwCL2KUaBuMAm8ylGgdaB51ZXSUYi4=",
);
const ZARR_REFS_1: &str = concat!(
    "AgEjAQYBAAAGAQAAFgEAAIAFlfsAAAAAAAAAjBZudW1weS5fY29yZS5tdWx0aWFycmF5lIwMX3JlY29uc3RydWN0",
    "lJOUjAVudW1weZSMB25kYXJyYXmUk5RLAIWUQwFilIeUUpQoSwFLAoWUaAOMBWR0eXBllJOUjAJPOJSJiIeUUpQo",
    "SwOMAXyUTk5OSv////9K/////0s/dJRiiV2UKIwPaGRtZl96YXJyLnV0aWxzlIwNWmFyclJlZmVyZW5jZZSTlCmB",
    "lCiMBnNvdXJjZZSMAS6UjARwYXRolIwCL2OUjAlvYmplY3RfaWSUjAJvM5SMEHNvdXJjZV9vYmplY3RfaWSUjAZy",
    "b290LTCUdUsAZXSUYi4=",
);
// comp/.zarray: {"chunks": [2], "compressor": {"blocksize": 0, "clevel": 5, "cname": "lz4", "id": "blosc", "shuffle": 1}, "dtype": [["idx_start", "<i4"], ["count", "<i4"], ["timeseries", "|O"]], "fill_value": "gAVLAC4=", "filters": [{"id": "pickle", "protocol": 5}], "order": "C", "shape": [2], "zarr_format": 2}
const ZARR_COMP_0: &str = concat!(
    "AgEjAasBAACrAQAAuwEAAIAFlaABAAAAAAAAjBZudW1weS5fY29yZS5tdWx0aWFycmF5lIwMX3JlY29uc3RydWN0",
    "lJOUjAVudW1weZSMB25kYXJyYXmUk5RLAIWUQwFilIeUUpQoSwFLAoWUaAOMBWR0eXBllJOUjANWMTaUiYiHlFKU",
    "KEsDjAF8lE6MCWlkeF9zdGFydJSMBWNvdW50lIwKdGltZXNlcmllc5SHlH2UKGgRaAyMAmk0lImIh5RSlChLA4wB",
    "PJROTk5K/////0r/////SwB0lGJLAIaUaBJoGEsEhpRoE2gMjAJPOJSJiIeUUpQoSwNoEE5OTkr/////Sv////9L",
    "P3SUYksIhpR1SxBLAUsbdJRiiV2UKEsASwWMD2hkbWZfemFyci51dGlsc5SMDVphcnJSZWZlcmVuY2WUk5QpgZQo",
    "jAZzb3VyY2WUjAEulIwEcGF0aJSMAi9hlIwJb2JqZWN0X2lklIwCbzGUjBBzb3VyY2Vfb2JqZWN0X2lklIwGcm9v",
    "dC0wlHWHlEsFSwNoJimBlChoKGgpaCqMAi9ilGgsjAJvMpRoLmgvdYeUZXSUYi4=",
);

fn texts(bytes: &ArrayBytes) -> Vec<String> {
    let ArrayBytes::Variable { data, offsets } = bytes else {
        panic!("not variable-length: {bytes:?}");
    };
    offsets
        .windows(2)
        .map(|w| String::from_utf8(data[w[0]..w[1]].to_vec()).unwrap())
        .collect()
}

#[test]
fn real_hdmf_zarr_chunks_decode_through_the_v2_chain() {
    // refs/.zarray: "|O", filters [{"id": "pickle", "protocol": 5}], blosc lz4, chunks [2] of
    // shape [3]; the edge chunk is padded with the fill value 0.
    let blosc = json!({"blocksize": 0, "clevel": 5, "cname": "lz4", "id": "blosc", "shuffle": 1});
    let filters = [json!({"id": "pickle", "protocol": 5})];
    let chain =
        CodecChain::from_v2(false, Some(&filters), Some(&blosc), None, &repr(&[2])).unwrap();
    let r = |p: &str, o: &str| {
        format!(r#"{{"source":".","path":"{p}","object_id":"{o}","source_object_id":"root-0"}}"#)
    };
    let first = chain.decode(b64(ZARR_REFS_0), &repr(&[2])).unwrap();
    assert_eq!(texts(&first), vec![r("/a", "o1"), r("/b", "o2")]);
    let edge = chain.decode(b64(ZARR_REFS_1), &repr(&[2])).unwrap();
    assert_eq!(texts(&edge), vec![r("/c", "o3"), "0".to_string()]);

    // comp/.zarray: [["idx_start","<i4"],["count","<i4"],["timeseries","|O"]], read as text.
    let (data_type, _) = neurochunk_dtype::v2::dtype_from_json(
        &json!([["idx_start", "<i4"], ["count", "<i4"], ["timeseries", "|O"]]),
        Some("pickle"),
    )
    .unwrap();
    assert_eq!(data_type, DataType::String);
    let comp = chain.decode(b64(ZARR_COMP_0), &repr(&[2])).unwrap();
    assert_eq!(
        texts(&comp),
        vec![
            format!(
                r#"{{"idx_start":0,"count":5,"timeseries":{}}}"#,
                r("/a", "o1")
            ),
            format!(
                r#"{{"idx_start":5,"count":3,"timeseries":{}}}"#,
                r("/b", "o2")
            ),
        ]
    );
    // The chain writes its filters back unchanged.
    let v2 = chain.to_v2().unwrap();
    assert_eq!(v2.filters, Some(filters.to_vec()));
    assert_eq!(v2.compressor, Some(blosc));
}

#[test]
fn codec_element_texts() {
    let chain = pickle_chain(&[19]);
    let decoded = chain.decode(b64(MIXED_P2), &repr(&[19])).unwrap();
    let got = texts(&decoded);
    assert_eq!(got[0], "plain");
    assert_eq!(got[1], "é🦀");
    assert_eq!(got[2], "");
    assert_eq!(got[4], "0");
    assert_eq!(got[9], "18446744073709551615");
    assert_eq!(got[11], "1.5");
    assert_eq!(got[12], "NaN");
    assert_eq!(got[13], "-Infinity");
    assert_eq!(got[14], "true");
    assert_eq!(got[15], "null");
    assert_eq!(got[16], "bytes");
    let chain = pickle_chain(&[2]);
    let dicts = texts(&chain.decode(b64(DICTS_P5), &repr(&[2])).unwrap());
    assert_eq!(
        dicts[0],
        r#"{"a":1,"b":[1,2.5,"x"],"c":null,"d":true,"e":{"nested":"é"},"big":9223372036854775813,"neg":-1099511627776,"nan":NaN,"inf":-Infinity,"bytes":"raw","tup":[1,"two"]}"#
    );
    assert_eq!(dicts[1], "{}");
}

#[test]
fn codec_orders_fortran_chunks_like_zarr() {
    // zarr-python flattens a Fortran-contiguous chunk in Fortran order (reshape order "A").
    let chain = pickle_chain(&[3, 2]);
    let decoded = chain.decode(b64(FORTRAN_P5), &repr(&[3, 2])).unwrap();
    assert_eq!(
        texts(&decoded),
        ["r0c0", "r1c0", "r0c1", "r1c1", "r0c2", "r1c2"]
    );
}

#[test]
fn codec_round_trips_and_checks_counts() {
    let chain = pickle_chain(&[2, 2]);
    let given = ["x", "{\"k\":1}", "é🦀", ""];
    let encoded = chain.encode(variable(&given), &repr(&[2, 2])).unwrap();
    let decoded = chain.decode(encoded.clone(), &repr(&[2, 2])).unwrap();
    assert_eq!(texts(&decoded), given);
    // Text is written as a Python str; JSON-object text (how the decoder presents
    // dictionaries such as hdmf-zarr's references) is written back as a dict.
    let array = decode_object_array(&encoded, &AllowList::hdmf_zarr()).unwrap();
    assert_eq!(array.shape, vec![2, 2]);
    assert_eq!(array.items[0], json!("x"));
    assert_eq!(array.items[1], json!({"k": 1}));
    // The same elements read as a flat chunk of 4 (zarr-python reshapes), not as 3.
    assert!(pickle_chain(&[4])
        .decode(encoded.clone(), &repr(&[4]))
        .is_ok());
    let err = pickle_chain(&[3]).decode(encoded, &repr(&[3])).unwrap_err();
    assert!(matches!(err, CodecError::Corrupt { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("holds 4 elements (shape [2, 2]), expected 3"),
        "{err}"
    );
    // Refused globals surface as unsupported, naming the global.
    let err = pickle_chain(&[1])
        .decode(b64(EVIL_SYSTEM_P2), &repr(&[1]))
        .unwrap_err();
    assert!(matches!(err, CodecError::Unsupported { .. }), "{err:?}");
    assert!(err.to_string().contains("'posix.system'"), "{err}");
}

#[test]
fn codec_registration_and_configuration() {
    let registry = CodecRegistry::global();
    assert!(registry.v2_ids().contains(&"pickle".to_string()));
    assert!(registry
        .v3_names()
        .contains(&"numcodecs.pickle".to_string()));
    let codec = registry
        .create_v3("numcodecs.pickle", &json!({"protocol": 4}), &repr(&[1]))
        .unwrap();
    let AnyCodec::ArrayToBytes(codec) = codec else {
        panic!("pickle is an array→bytes codec");
    };
    assert_eq!(
        codec.to_v3_json(),
        json!({"name": "numcodecs.pickle", "configuration": {"protocol": 4}})
    );
    assert_eq!(
        codec.to_v2_json(),
        Some(json!({"id": "pickle", "protocol": 4}))
    );
    // Only object arrays (read as text) can use it.
    let numeric = ChunkRepr {
        shape: vec![1],
        data_type: DataType::Int32,
        fill_value: vec![0; 4],
    };
    let err = registry
        .create_v2(&json!({"id": "pickle", "protocol": 5}), &numeric)
        .unwrap_err();
    assert!(err.to_string().contains("only object (|O) arrays"), "{err}");
    let err = registry
        .create_v2(&json!({"id": "pickle", "protocol": 9}), &repr(&[1]))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("'protocol' must be between -1 and 5"),
        "{err}"
    );
    // Without an object codec, |O arrays name pickle among the choices.
    let err = CodecChain::from_v2(false, None, None, None, &repr(&[1])).unwrap_err();
    assert!(err.to_string().contains("json2 or pickle"), "{err}");
}

#[test]
fn codec_decodes_under_its_allow_list() {
    // hdmf-zarr's list unless told otherwise: the registry's codec, `from_config`, `Default`.
    let refs = b64(REFS_P5);
    let config = json!({"id": "pickle", "protocol": 5});
    let default = PickleCodec::from_config(&config).unwrap();
    assert_eq!(default.allow_list(), &AllowList::hdmf_zarr());
    assert_eq!(PickleCodec::default(), default);
    let decoded = texts(&default.decode(refs.clone(), &repr(&[3])).unwrap());
    assert!(
        decoded[0].contains(r#""path":"/acquisition/ts1""#),
        "{decoded:?}"
    );
    let decoded = texts(
        &pickle_chain(&[3])
            .decode(refs.clone(), &repr(&[3]))
            .unwrap(),
    );
    assert!(
        decoded[0].contains(r#""path":"/acquisition/ts1""#),
        "{decoded:?}"
    );

    // NumPy only: the reference class is refused, naming it; plain objects still read.
    let numpy = PickleCodec::from_config_with(&config, AllowList::numpy()).unwrap();
    assert_eq!(numpy.allow_list(), &AllowList::numpy());
    assert_eq!(numpy, PickleCodec::new(AllowList::numpy()));
    let err = numpy.decode(refs, &repr(&[3])).unwrap_err();
    assert!(matches!(err, CodecError::Unsupported { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("'hdmf_zarr.utils.ZarrReference' at byte 178"),
        "{err}"
    );
    let decoded = texts(&numpy.decode(b64(MIXED_P2), &repr(&[19])).unwrap());
    assert_eq!(decoded[1], "é🦀");
    // The list is not part of the stored configuration.
    assert_eq!(numpy.to_v2_json(), default.to_v2_json());
}
