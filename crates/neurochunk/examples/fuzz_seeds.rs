//! Seed corpora for the fuzz targets in `fuzz/` (see `docs/fuzzing.md`): valid inputs of
//! every kind, written by the library itself, so the fuzzer starts from data that reaches deep
//! into each parser.
//!
//! ```text
//! cargo run --release -p neurochunk --example fuzz_seeds -- OUT_DIR
//! ```
//! writes `OUT_DIR/<target>/<case>` for the targets `metadata`, `chunk`, `pickle`, `npy`,
//! `nwb_attributes`, `table_file`, `swc`, `lindi`, `h5`, `precomputed`, `skeleton`,
//! `annotation` and `mesh`.
//!
//! Framed inputs (`metadata`, `chunk`, `nwb_attributes`, `precomputed`, `skeleton`,
//! `annotation`, `mesh`) are `selector |
//! u16 LE document length |
//! document | payload`, the layout `fuzz/src/lib.rs` splits.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use neurochunk::dtype::npy::{write_npy_header, NpyHeader};
use neurochunk::dtype::Endian;
use neurochunk::nwb::demo::{write_demo_into, DemoOptions};
use neurochunk::nwb::{Convention, NwbWriter, WriteOptions};
use neurochunk::pickle::{encode_object_array, encode_text_array};
use neurochunk::table::io::{Format, TableWriter};
use neurochunk::table::synth::SkeletonSynth;
use neurochunk::{consolidate, Array, ArrayBuilder, ArrayBytes, Codec, DataType, FillValue};
use neurochunk::{MemoryStore, Store, ZarrFormat};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// `selector | u16 LE length | document | payload`.
fn framed(selector: u8, document: &[u8], payload: &[u8]) -> Result<Vec<u8>> {
    let len = u16::try_from(document.len())?;
    let mut out = vec![selector];
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(document);
    out.extend_from_slice(payload);
    Ok(out)
}

struct Seeds {
    dir: PathBuf,
    written: usize,
}

impl Seeds {
    fn put(&mut self, target: &str, name: &str, bytes: &[u8]) -> Result<()> {
        let dir = self.dir.join(target);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(name), bytes)?;
        self.written += 1;
        Ok(())
    }
}

const V2_NUMERIC: &str = r#""shape": [8, 8], "chunks": [8, 8], "fill_value": 0, "order": "C""#;

/// Zarr v2 documents of one 8×8 chunk, one per codec (compressors, checksums, filters, object
/// codecs).
fn v2_documents() -> Vec<(String, String)> {
    let mut docs = Vec::new();
    let compressors = [
        ("raw", "null"),
        (
            "blosc-lz4-shuffle",
            r#"{"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}"#,
        ),
        (
            "blosc-zstd-bitshuffle",
            r#"{"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2, "blocksize": 0}"#,
        ),
        (
            "blosc-blosclz",
            r#"{"id": "blosc", "cname": "blosclz", "clevel": 9, "shuffle": 0, "blocksize": 0}"#,
        ),
        (
            "blosc-zlib",
            r#"{"id": "blosc", "cname": "zlib", "clevel": 1, "shuffle": 1, "blocksize": 0}"#,
        ),
        ("zstd", r#"{"id": "zstd", "level": 3}"#),
        ("gzip", r#"{"id": "gzip", "level": 5}"#),
        ("zlib", r#"{"id": "zlib", "level": 5}"#),
        ("bz2", r#"{"id": "bz2", "level": 5}"#),
        (
            "lzma",
            r#"{"id": "lzma", "format": 1, "check": -1, "preset": 1, "filters": null}"#,
        ),
        ("lz4", r#"{"id": "lz4", "acceleration": 1}"#),
        ("crc32c", r#"{"id": "crc32c"}"#),
        ("crc32", r#"{"id": "crc32"}"#),
        ("adler32", r#"{"id": "adler32"}"#),
        ("fletcher32", r#"{"id": "fletcher32"}"#),
    ];
    for (name, compressor) in compressors {
        docs.push((
            format!("v2-{name}"),
            format!(r#"{{"zarr_format": 2, {V2_NUMERIC}, "dtype": "<u2", "compressor": {compressor}, "filters": null}}"#),
        ));
    }
    let filters = [
        ("delta", "<u2", r#"[{"id": "delta", "dtype": "<u2"}]"#),
        ("shuffle", "<u2", r#"[{"id": "shuffle", "elementsize": 2}]"#),
        (
            "fixedscaleoffset",
            "<f8",
            r#"[{"id": "fixedscaleoffset", "dtype": "<f8", "astype": "<u2", "scale": 10, "offset": 0}]"#,
        ),
        (
            "astype",
            "<f8",
            r#"[{"id": "astype", "encode_dtype": "<f4", "decode_dtype": "<f8"}]"#,
        ),
    ];
    for (name, dtype, filters) in filters {
        docs.push((
            format!("v2-{name}"),
            format!(r#"{{"zarr_format": 2, {V2_NUMERIC}, "dtype": "{dtype}", "compressor": {{"id": "zstd", "level": 1}}, "filters": {filters}}}"#),
        ));
    }
    docs.push((
        "v2-order-f".into(),
        r#"{"zarr_format": 2, "shape": [8, 8], "chunks": [8, 8], "fill_value": 0, "order": "F", "dtype": ">i4", "compressor": null, "filters": null}"#.into(),
    ));
    docs.push((
        "v2-struct".into(),
        r#"{"zarr_format": 2, "shape": [8, 8], "chunks": [8, 8], "fill_value": null, "order": "C", "dtype": [["a", "<i2"], ["b", ">f4"], ["c", "|S3"]], "compressor": null, "filters": null}"#.into(),
    ));
    let object_codecs = [
        ("vlen-utf8", r#"{"id": "vlen-utf8"}"#),
        ("vlen-bytes", r#"{"id": "vlen-bytes"}"#),
        (
            "json2",
            r#"{"id": "json2", "allow_nan": true, "check_circular": true, "encoding": "utf-8", "ensure_ascii": true, "indent": null, "separators": [",", ":"], "skipkeys": false, "sort_keys": true, "strict": true}"#,
        ),
        ("pickle", r#"{"id": "pickle", "protocol": 5}"#),
        // Element bytes of any length are whole uint8 numbers.
        ("vlen-array", r#"{"id": "vlen-array", "dtype": "|u1"}"#),
    ];
    // categorize of the sample texts ("value 0" … "value 63").
    let labels: Vec<String> = (0..64).map(|i| format!("\"value {i}\"")).collect();
    let categorize = format!(
        r#"{{"id": "categorize", "labels": [{}], "dtype": "|O", "astype": "|u1"}}"#,
        labels.join(", ")
    );
    let object_codecs = object_codecs
        .into_iter()
        .map(|(n, c)| (n, c.to_string()))
        .chain([("categorize", categorize)]);
    // The numcodecs codecs beyond the core set.
    let extra = [
        ("bitround", "<f4", "[{\"id\": \"bitround\", \"keepbits\": 7}]", "null"),
        ("quantize", "<f8", "[{\"id\": \"quantize\", \"digits\": 2, \"dtype\": \"<f8\"}]", "null"),
        ("packbits", "|b1", "[{\"id\": \"packbits\"}]", "{\"id\": \"zstd\", \"level\": 1}"),
        ("delta-bool", "|b1", "[{\"id\": \"delta\", \"dtype\": \"|b1\"}]", "null"),
        ("jenkins", "<u2", "null", "{\"id\": \"jenkins_lookup3\", \"initval\": 0, \"prefix\": null}"),
        ("pcodec", "<u2", "null", "{\"id\": \"pcodec\", \"level\": 8, \"mode_spec\": \"auto\", \"delta_spec\": \"auto\", \"paging_spec\": \"equal_pages_up_to\", \"delta_encoding_order\": null, \"equal_pages_up_to\": 262144}"),
        ("pcodec-f8", "<f8", "null", "{\"id\": \"pcodec\", \"level\": 3}"),
        ("zfpy-reversible", "<i4", "null", "{\"id\": \"zfpy\", \"mode\": 4, \"tolerance\": -1, \"rate\": -1, \"precision\": -1}"),
        ("zfpy-rate", "<f4", "null", "{\"id\": \"zfpy\", \"mode\": 2, \"tolerance\": -1, \"rate\": 8, \"precision\": -1}"),
        ("zfpy-accuracy", "<f8", "null", "{\"id\": \"zfpy\", \"mode\": 4, \"tolerance\": 0.5, \"rate\": -1, \"precision\": -1}"),
    ];
    for (name, dtype, filters, compressor) in extra {
        docs.push((
            format!("v2-{name}"),
            format!(r#"{{"zarr_format": 2, {V2_NUMERIC}, "dtype": "{dtype}", "compressor": {compressor}, "filters": {filters}}}"#),
        ));
    }
    for (name, codec) in object_codecs {
        docs.push((
            format!("v2-{name}"),
            format!(r#"{{"zarr_format": 2, "shape": [8, 8], "chunks": [8, 8], "fill_value": null, "order": "C", "dtype": "|O", "compressor": null, "filters": [{codec}]}}"#),
        ));
    }
    docs
}

/// Zarr v3 and N5 arrays of every codec, built with the library's builder.
fn built_arrays() -> Vec<(String, ArrayBuilder)> {
    let numeric = |codecs: Vec<Codec>| {
        ArrayBuilder::new([8, 8], DataType::UInt16)
            .chunks([8, 8])
            .codecs(codecs)
    };
    let mut arrays = vec![
        ("v3-zstd".to_string(), numeric(vec![Codec::zstd(3)])),
        (
            "v3-gzip".to_string(),
            numeric(vec![Codec::Gzip { level: 6 }]),
        ),
        ("v3-crc32c".to_string(), numeric(vec![Codec::Crc32c])),
        (
            "v3-blosc".to_string(),
            numeric(vec![Codec::blosc(
                neurochunk::codec::BloscCompressor::Lz4,
                5,
            )]),
        ),
        (
            "v3-sharded".to_string(),
            ArrayBuilder::new([8, 8], DataType::UInt16)
                .chunks([4, 4])
                .shards([8, 8])
                .codecs([Codec::zstd(1), Codec::Crc32c]),
        ),
        (
            "v3-string".to_string(),
            ArrayBuilder::new([8, 8], DataType::String).chunks([8, 8]),
        ),
        (
            "v3-bytes".to_string(),
            ArrayBuilder::new([8, 8], DataType::Bytes).chunks([8, 8]),
        ),
    ];
    for (name, codecs) in [
        ("raw", vec![]),
        ("gzip", vec![Codec::Gzip { level: 6 }]),
        ("bz2", vec![Codec::Bz2 { level: 5 }]),
        ("xz", vec![Codec::Lzma { preset: Some(1) }]),
        ("lz4", vec![Codec::Lz4 { acceleration: 1 }]),
        ("zstd", vec![Codec::zstd(3)]),
    ] {
        arrays.push((
            format!("n5-{name}"),
            numeric(codecs)
                .format(ZarrFormat::N5)
                .fill_value(FillValue::Zero),
        ));
    }
    arrays
}

/// Values for every element of `array`: numbers whose bytes differ, or short texts.
fn sample_values(array: &Array) -> ArrayBytes {
    let n = array.shape().iter().product::<u64>() as usize;
    match array.metadata().data_type.fixed_size() {
        Some(size) => ArrayBytes::Fixed((0..n * size).map(|i| (i * 37 % 251) as u8).collect()),
        None => {
            let mut data = Vec::new();
            let mut offsets = vec![0];
            for i in 0..n {
                data.extend_from_slice(format!("value {i}").as_bytes());
                offsets.push(data.len());
            }
            ArrayBytes::Variable { data, offsets }
        }
    }
}

/// The metadata document and first chunk of an array written with sample values.
fn document_and_chunk(store: &Arc<dyn Store>, array: &Array) -> Result<(u8, Vec<u8>, Vec<u8>)> {
    array.write_all(&sample_values(array))?;
    let (selector, key) = match array.metadata().format {
        ZarrFormat::V2 => (0, ".zarray"),
        ZarrFormat::V3 => (1, "zarr.json"),
        ZarrFormat::N5 => (2, "attributes.json"),
        ZarrFormat::Precomputed => {
            return Err("the array fuzz target reads no precomputed scales".into())
        }
    };
    let document = store.get_required(key)?.to_vec();
    let chunk = store.get_required(&array.chunk_key(&[0, 0]))?.to_vec();
    Ok((selector, document, chunk))
}

fn chunk_and_metadata_seeds(seeds: &mut Seeds) -> Result<()> {
    for (name, document) in v2_documents() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        store.set(".zarray", document.clone().into_bytes().into())?;
        let array = Array::open(store.clone(), "").map_err(|e| format!("seed {name}: {e}"))?;
        let (selector, document, chunk) =
            document_and_chunk(&store, &array).map_err(|e| format!("seed {name}: {e}"))?;
        seeds.put("chunk", &name, &framed(selector, &document, &chunk)?)?;
        seeds.put(
            "metadata",
            &name,
            &framed(0, &document, b"{\"units\": \"mV\"}")?,
        )?;
    }
    for (name, builder) in built_arrays() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let array = builder
            .create(store.clone(), "")
            .map_err(|e| format!("seed {name}: {e}"))?;
        let (selector, document, chunk) =
            document_and_chunk(&store, &array).map_err(|e| format!("seed {name}: {e}"))?;
        seeds.put("chunk", &name, &framed(selector, &document, &chunk)?)?;
        // metadata selectors: 2 = zarr.json, 3 = N5 root attributes.json.
        let metadata_selector = if selector == 1 { 2 } else { 3 };
        seeds.put(
            "metadata",
            &name,
            &framed(metadata_selector, &document, b"")?,
        )?;
    }
    // Consolidated metadata of a small hierarchy, in both Zarr formats.
    for (selector, format, key) in [
        (1u8, ZarrFormat::V2, ".zmetadata"),
        (2, ZarrFormat::V3, "zarr.json"),
    ] {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        neurochunk::create_group(store.as_ref(), "", format, Default::default())?;
        for (path, data_type) in [("raw", DataType::Int16), ("labels", DataType::UInt64)] {
            ArrayBuilder::new([100, 64], data_type)
                .format(format)
                .chunks([10, 64])
                .create(store.clone(), path)?;
        }
        consolidate(store.as_ref(), "")?;
        let document = store.get_required(key)?.to_vec();
        seeds.put(
            "metadata",
            &format!("consolidated-{}", format.label().replace(' ', "")),
            &framed(selector, &document, b"")?,
        )?;
    }
    Ok(())
}

fn pickle_and_npy_seeds(seeds: &mut Seeds) -> Result<()> {
    let texts = [
        "alpha",
        "",
        "ünïcode",
        "a much longer value that needs more bytes",
    ];
    seeds.put(
        "pickle",
        "text-array",
        &encode_text_array(&[2, 2], texts.iter().copied())?,
    )?;
    for (name, value) in [
        (
            "references",
            serde_json::json!([{"source": ".", "path": "/acquisition/ts", "object_id": "a1b2", "source_object_id": "c3d4"}]),
        ),
        ("numbers", serde_json::json!([1, 2.5, -3, null, true])),
    ] {
        let items = value.as_array().cloned().unwrap_or_default();
        seeds.put(
            "pickle",
            name,
            &encode_object_array(&[items.len()], &items, None)?,
        )?;
    }
    for (name, data_type, endian, shape) in [
        ("u2", DataType::UInt16, Some(Endian::Little), vec![4, 5]),
        (
            "f8-fortran",
            DataType::Float64,
            Some(Endian::Big),
            vec![3, 2, 7],
        ),
        (
            "text",
            DataType::FixedUtf32 { chars: 12 },
            Some(Endian::Little),
            vec![10],
        ),
        ("scalar", DataType::Bool, None, vec![]),
    ] {
        let header = NpyHeader {
            data_type,
            endian,
            shape,
            fortran_order: name.ends_with("fortran"),
        };
        let mut bytes = Vec::new();
        write_npy_header(&mut bytes, &header)?;
        seeds.put("npy", name, &bytes)?;
    }
    Ok(())
}

/// The attributes of every node of the NWB demo file in both conventions, framed as the root's
/// and `/x`'s attributes.
fn nwb_seeds(seeds: &mut Seeds) -> Result<()> {
    for (selector, convention, attributes_key) in [
        (0u8, Convention::Legacy, ".zattrs"),
        (1, Convention::V3, "zarr.json"),
    ] {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let writer = NwbWriter::create_in(store.clone(), "f", convention, WriteOptions::default())?;
        let options = DemoOptions {
            convention,
            scale: 0,
            namespaces: Vec::new(),
            write: WriteOptions::default(),
        };
        write_demo_into(writer, &options)?;
        let root = attributes_of(
            &store.get_required(&format!("f/{attributes_key}"))?,
            selector,
        )?;
        let mut keys = store.list_prefix("f/")?;
        keys.retain(|k| k.ends_with(attributes_key) && k != &format!("f/{attributes_key}"));
        for (i, key) in keys.iter().enumerate() {
            let node = attributes_of(&store.get_required(key)?, selector)?;
            if node.len() > 2 {
                seeds.put(
                    "nwb_attributes",
                    &format!("{}-{i}", convention_name(convention)),
                    &framed(selector, &root, &node)?,
                )?;
            }
        }
    }
    Ok(())
}

fn convention_name(convention: Convention) -> &'static str {
    match convention {
        Convention::Legacy => "legacy",
        Convention::V3 => "v3",
    }
}

/// The attributes object of a `.zattrs` (as is) or a `zarr.json` (its `attributes`).
fn attributes_of(document: &[u8], selector: u8) -> Result<Vec<u8>> {
    if selector == 0 {
        return Ok(document.to_vec());
    }
    let doc: serde_json::Value = serde_json::from_slice(document)?;
    Ok(serde_json::to_vec(&doc["attributes"])?)
}

fn table_and_swc_seeds(seeds: &mut Seeds) -> Result<()> {
    for (format, key) in [
        (Format::Parquet, "t.skeletons.parquet"),
        (Format::ArrowIpc, "t.skeletons.arrow"),
    ] {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let samples = SkeletonSynth::new(40, 2, 16, 1, "urn:uuid:fuzz-seed");
        let options = neurochunk::table::WriteOptions {
            format: Some(format),
            ..Default::default()
        };
        let mut writer = TableWriter::create_in(store.clone(), key, samples.schema(), &options)?;
        for batch in samples {
            writer.write(&batch)?;
        }
        writer.finish()?;
        seeds.put("table_file", key, &store.get_required(key)?)?;
    }
    for (name, text) in [
        ("tree", "# ORIGINAL_SOURCE seed\n1 1 0 0 0 5 -1\n2 3 1 0 0 1 1\n3 3 2 1 0 0.5 2\n4 2 1 -1 0 0.5 2\n"),
        ("swc-plus", "# <swcPlus>\n# <customTypes><t code=\"16\" name=\"Spine\"/></customTypes>\n1 1 0 0 0 1 -1\n2 16 1 1 1 0.2 1\n"),
        ("cycle", "1 1 0 0 0 1 2\n2 3 1 0 0 1 1\n"),
    ] {
        seeds.put("swc", name, text.as_bytes())?;
    }
    Ok(())
}

/// Precomputed skeletons (framed: the layer's `info`, then the segment file or shard): a tree
/// with radius and vertex types, the same gzip-compressed, a forest without attributes, a
/// sharded layer with gzip indexes and data, and a cycle.
fn skeleton_seeds(seeds: &mut Seeds) -> Result<()> {
    use neurochunk::array::precomputed::skeleton::{
        AttributeType, Skeleton, SkeletonInfo, SkeletonLayer, VertexAttribute,
    };
    use neurochunk::array::precomputed::{ShardEncoding, ShardHash, ShardingSpec};
    let attributes = vec![
        VertexAttribute::new("radius", AttributeType::Float32),
        VertexAttribute::new("vertex_types", AttributeType::Uint8),
    ];
    let tree = Skeleton {
        vertices: vec![
            [0.0, 0.0, 0.0],
            [4.0, 0.0, 0.0],
            [8.0, 2.0, 0.0],
            [4.0, 4.0, 1.0],
        ],
        edges: vec![[1, 0], [2, 1], [3, 1]],
        attributes: vec![vec![2.0, 1.0, 0.5, 0.5], vec![1.0, 3.0, 3.0, 2.0]],
    };
    let forest = Skeleton {
        vertices: vec![[0.0; 3], [1.0; 3], [2.0; 3]],
        edges: vec![[0, 1]],
        attributes: vec![],
    };
    let cycle = Skeleton {
        vertices: vec![[0.0; 3], [1.0; 3], [2.0; 3]],
        edges: vec![[0, 1], [1, 2], [2, 0]],
        attributes: vec![],
    };
    let sharding = ShardingSpec {
        preshift_bits: 0,
        hash: ShardHash::Murmurhash3X86_128,
        minishard_bits: 1,
        shard_bits: 0,
        minishard_index_encoding: ShardEncoding::Gzip,
        data_encoding: ShardEncoding::Gzip,
    };
    let cases = [
        ("tree", 0u8, None, &tree, false),
        ("tree-gz", 2, None, &tree, true),
        ("forest", 0, None, &forest, false),
        ("cycle", 0, None, &cycle, false),
        ("sharded", 1, Some(sharding), &tree, false),
    ];
    for (name, selector, sharding, skeleton, gz) in cases {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let info = SkeletonInfo {
            vertex_attributes: attributes.clone(),
            sharding: sharding.clone(),
            ..SkeletonInfo::default()
        };
        let layer = SkeletonLayer::create(store.clone(), "sk", info.clone())?;
        let key = if sharding.is_some() {
            layer.write(&[(5, skeleton.clone()), (9, skeleton.clone())])?;
            "sk/0.shard"
        } else {
            store.set(
                "sk/5",
                neurochunk::Bytes::from(skeleton.encode(&attributes).map_err(|e| e.to_string())?),
            )?;
            "sk/5"
        };
        let mut payload = store.get_required(key)?.to_vec();
        if gz {
            payload = neurochunk::array::precomputed::sharding::gzip(&payload);
        }
        let document = serde_json::to_vec(&info.to_json())?;
        seeds.put("skeleton", name, &framed(selector, &document, &payload)?)?;
    }
    Ok(())
}

/// Precomputed annotations (framed: the collection's `info`, then an index file): points with
/// properties and a relationship, unsharded (the id index entry, a related-object entry, a
/// spatial cell) and sharded (an id index shard); lines.
fn annotation_seeds(seeds: &mut Seeds) -> Result<()> {
    use neurochunk::array::precomputed::annotation::{
        Annotation, AnnotationCollection, AnnotationInfo, AnnotationType, Dimension, IndexSpec,
        PropertySpec, PropertyType, PropertyValue, RelationshipSpec,
    };
    let index = |key: &str| IndexSpec {
        key: key.into(),
        sharding: None,
    };
    for (kind, values) in [(AnnotationType::Point, 3), (AnnotationType::Line, 6)] {
        let info = AnnotationInfo {
            dimensions: ["x", "y", "z"]
                .iter()
                .map(|n| Dimension {
                    name: n.to_string(),
                    scale: 4e-9,
                    unit: "m".into(),
                })
                .collect(),
            lower_bound: vec![],
            upper_bound: vec![],
            annotation_type: kind,
            properties: vec![
                PropertySpec::new("score", PropertyType::Float32),
                PropertySpec::new("kind", PropertyType::Uint8),
                PropertySpec::new("color", PropertyType::Rgb),
            ],
            relationships: vec![RelationshipSpec {
                id: "segments".into(),
                index: index("rel_segments"),
            }],
            by_id: index("by_id"),
            spatial: vec![],
            other: Default::default(),
        };
        let annotations: Vec<Annotation> = (0..6u64)
            .map(|i| Annotation {
                id: i,
                geometry: (0..values).map(|k| (i * 3 + k) as f32).collect(),
                properties: vec![
                    PropertyValue::Float(i as f32 / 2.0),
                    PropertyValue::Int(i as i64),
                    PropertyValue::Rgb([i as u8, 2, 3]),
                ],
                relationships: vec![vec![5, 7 + i]],
            })
            .collect();
        for sharded in [false, true] {
            let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
            let sharding = sharded.then(|| neurochunk::table::precomputed::default_sharding(1));
            let collection = AnnotationCollection::create(
                store.clone(),
                "an",
                info.clone(),
                &annotations,
                4,
                sharding,
            )?;
            let document = serde_json::to_vec(&collection.info().to_json())?;
            let files: &[(u8, &str)] = if sharded {
                &[(3, "an/by_id/0.shard")]
            } else {
                &[
                    (0, "an/by_id/5"),
                    (1, "an/rel_segments/5"),
                    (2, "an/spatial0/0_0_0"),
                ]
            };
            for &(selector, key) in files {
                let payload = store.get_required(key)?;
                let name = format!("{}-{}", kind.name(), key.replace('/', "-"));
                seeds.put("annotation", &name, &framed(selector, &document, &payload)?)?;
            }
        }
    }
    Ok(())
}

/// LINDI reference files: a group with attributes, a soft link, an array with zlib chunks
/// inline (base64), a JSON object array of references, a scalar, a byte range and a template.
fn lindi_seeds(seeds: &mut Seeds) -> Result<()> {
    use base64::Engine;
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let array = ArrayBuilder::new(vec![6u64, 4], DataType::Int16)
        .format(ZarrFormat::V2)
        .chunks(vec![3, 4])
        .codecs([Codec::Zlib { level: 3 }])
        .create(store.clone(), "acquisition/data")?;
    let values: Vec<u8> = (0..24i16).flat_map(|v| v.to_le_bytes()).collect();
    array.write_all(&ArrayBytes::Fixed(values))?;
    let mut refs = serde_json::Map::new();
    for key in store.list_prefix("")? {
        let bytes = store.get_required(&key)?;
        let value = match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(v) if v.is_object() => v,
            _ => serde_json::Value::String(format!(
                "base64:{}",
                base64::engine::general_purpose::STANDARD.encode(&bytes)
            )),
        };
        refs.insert(key, value);
    }
    let json2 = serde_json::json!({"id": "json2", "encoding": "utf-8", "allow_nan": true, "check_circular": true, "ensure_ascii": true, "indent": null, "separators": [",", ":"], "skipkeys": false, "sort_keys": true, "strict": true});
    for (key, value) in [
        (".zgroup", serde_json::json!({"zarr_format": 2})),
        (".zattrs", serde_json::json!({"neurodata_type": "NWBFile", "namespace": "core", "nwb_version": "2.8.0", "object_id": "0"})),
        ("acquisition/.zgroup", serde_json::json!({"zarr_format": 2})),
        ("acquisition/data/.zattrs", serde_json::json!({"unit": "mV", "target": {"_REFERENCE": {"path": "/acquisition", "source": ".", "object_id": null, "source_object_id": null}}})),
        ("alias/.zgroup", serde_json::json!({"zarr_format": 2})),
        ("alias/.zattrs", serde_json::json!({"_SOFT_LINK": {"path": "/acquisition"}})),
        ("refs/.zarray", serde_json::json!({"chunks": [2], "compressor": null, "dtype": "|O", "fill_value": 0, "filters": [json2], "order": "C", "shape": [2], "zarr_format": 2})),
        ("refs/0", serde_json::Value::String(r#"[{"_REFERENCE":{"path":"/acquisition/data","source":"."}},{"_REFERENCE":{"path":"/alias","source":"."}},"|O",[2]]"#.into())),
        ("scalar/.zarray", serde_json::json!({"chunks": [1], "compressor": null, "dtype": "<f8", "fill_value": 0.0, "filters": null, "order": "C", "shape": [1], "zarr_format": 2})),
        ("scalar/.zattrs", serde_json::json!({"_SCALAR": true})),
        ("scalar/0", serde_json::Value::String("base64:AAAAAAAA+D8=".into())),
        ("ranged/.zarray", serde_json::json!({"chunks": [4], "compressor": null, "dtype": "<i4", "fill_value": 0, "filters": null, "order": "C", "shape": [4], "zarr_format": 2})),
        ("ranged/0", serde_json::json!(["{{u}}", 16, 16])),
    ] {
        refs.insert(key.to_string(), value);
    }
    let doc = serde_json::json!({"version": 1, "templates": {"u": "data.h5"}, "refs": refs});
    seeds.put("lindi", "nwb", serde_json::to_string(&doc)?.as_bytes())?;
    Ok(())
}

/// HDF5 files: the reader's documentation example and a small NWB-like file written by h5py
/// (chunked + deflate + shuffle, big-endian contiguous, fill values, a soft link).
fn h5_seeds(seeds: &mut Seeds) -> Result<()> {
    seeds.put("h5", "tiny", include_bytes!("../../h5/tests/data/tiny.h5"))?;
    seeds.put(
        "h5",
        "source",
        include_bytes!("../../hdf5/tests/data/source.nwb"),
    )?;
    Ok(())
}

/// Precomputed layers of one scale `s` (16 x 12 x 5 voxels, chunks of 8 x 8 x 4, so edge
/// chunks are truncated): `info` and the origin's chunk file, or the one shard file.
fn precomputed_seeds(seeds: &mut Seeds) -> Result<()> {
    use neurochunk::array::precomputed::sharding::{ShardEncoding, ShardHash};
    use neurochunk::array::{PrecomputedOptions, ShardingSpec};
    let sharded = |hash, encoding| ShardingSpec {
        preshift_bits: 1,
        hash,
        minishard_bits: 2,
        shard_bits: 0,
        minishard_index_encoding: encoding,
        data_encoding: encoding,
    };
    // name, data type, channels, encoding, sharding, gzip-compressed chunk files
    type Case = (
        &'static str,
        DataType,
        u64,
        Codec,
        Option<ShardingSpec>,
        bool,
    );
    let cases: Vec<Case> = vec![
        (
            "raw-uint16",
            DataType::UInt16,
            1,
            Codec::NeuroglancerRaw,
            None,
            false,
        ),
        (
            "raw-float32-gz",
            DataType::Float32,
            2,
            Codec::NeuroglancerRaw,
            None,
            true,
        ),
        (
            "cseg-uint64",
            DataType::UInt64,
            1,
            Codec::CompressedSegmentation {
                block_size: [4, 4, 2],
            },
            None,
            false,
        ),
        (
            "cseg-uint32-sharded-murmur-gzip",
            DataType::UInt32,
            1,
            Codec::CompressedSegmentation {
                block_size: [8, 8, 8],
            },
            Some(sharded(ShardHash::Murmurhash3X86_128, ShardEncoding::Gzip)),
            false,
        ),
        (
            "raw-uint8-sharded-identity",
            DataType::UInt8,
            1,
            Codec::NeuroglancerRaw,
            Some(sharded(ShardHash::Identity, ShardEncoding::Raw)),
            false,
        ),
        (
            "jpeg-uint8",
            DataType::UInt8,
            3,
            Codec::NeuroglancerJpeg { quality: 80 },
            None,
            false,
        ),
        (
            "png-uint16",
            DataType::UInt16,
            2,
            Codec::NeuroglancerPng { level: None },
            None,
            false,
        ),
    ];
    for (name, data_type, channels, codec, sharding, gzip) in cases {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let is_sharded = sharding.is_some();
        let array = ArrayBuilder::new([16, 12, 5, channels], data_type)
            .format(ZarrFormat::Precomputed)
            .codecs(vec![codec])
            .chunks([8, 8, 4, channels as usize])
            .precomputed(PrecomputedOptions {
                sharding,
                gzip,
                ..Default::default()
            })
            .create(store.clone(), "s")
            .map_err(|e| format!("seed {name}: {e}"))?;
        array.write_all(&sample_values(&array))?;
        let info = store.get_required("info")?.to_vec();
        let (selector, payload) = if is_sharded {
            (1, store.get_required("s/0.shard")?.to_vec())
        } else {
            let key = array.chunk_key(&[0, 0, 0, 0]);
            match gzip {
                true => (2, store.get_required(&format!("{key}.gz"))?.to_vec()),
                false => (0, store.get_required(&key)?.to_vec()),
            }
        };
        seeds.put("precomputed", name, &framed(selector, &info, &payload)?)?;
    }
    Ok(())
}

/// Precomputed meshes (framed: the mesh directory's `info`, then one file; the selector's low
/// bits say which, see `fuzz/fuzz_targets/mesh.rs`): a legacy fragment plain and gzip, a legacy
/// manifest, and a multi-resolution manifest with its fragment data (a Draco fragment DracoPy
/// wrote, from the test fixture).
fn mesh_seeds(seeds: &mut Seeds) -> Result<()> {
    use neurochunk::array::precomputed::mesh::{
        encode_legacy_fragment, encode_multires_manifest, Lod, LodFragment, MultiresManifest,
    };
    let vertices = [
        [0.0, 0.0, 0.0],
        [4.0, 0.0, 0.0],
        [0.0, 4.0, 0.0],
        [0.0, 0.0, 4.0],
    ];
    let triangles = [[0, 1, 2], [0, 2, 3], [0, 3, 1], [1, 3, 2]];
    let fragment = encode_legacy_fragment(&vertices, &triangles).map_err(|e| e.to_string())?;
    let legacy_info = br#"{"@type": "neuroglancer_legacy_mesh"}"#;
    seeds.put(
        "mesh",
        "legacy_fragment",
        &framed(0, legacy_info, &fragment)?,
    )?;
    seeds.put(
        "mesh",
        "legacy_fragment_no_info",
        &framed(0, b"", &fragment)?,
    )?;
    let gz = neurochunk::array::precomputed::sharding::gzip(&fragment);
    seeds.put("mesh", "legacy_fragment_gz", &framed(4, legacy_info, &gz)?)?;
    let manifest = br#"{"fragments": ["5:0:1", "5:0:2"]}"#;
    seeds.put(
        "mesh",
        "legacy_manifest",
        &framed(1, legacy_info, manifest)?,
    )?;

    let draco: &[u8] = include_bytes!("../../array/tests/data/multires_draco/plain/mesh/5");
    let multires_info = br#"{"@type": "neuroglancer_multilod_draco", "vertex_quantization_bits": 10, "transform": [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0], "lod_scale_multiplier": 1}"#;
    let index = encode_multires_manifest(&MultiresManifest {
        chunk_shape: [8.0, 8.0, 8.0],
        grid_origin: [0.0, 0.0, 0.0],
        lods: vec![Lod {
            scale: 1.0,
            vertex_offset: [0.0; 3],
            fragments: vec![LodFragment {
                position: [0, 0, 0],
                offset: 0,
                size: draco.len() as u64,
            }],
        }],
    });
    let mut payload = u16::try_from(index.len())?.to_le_bytes().to_vec();
    payload.extend_from_slice(&index);
    payload.extend_from_slice(draco);
    seeds.put("mesh", "multires", &framed(2, multires_info, &payload)?)?;
    Ok(())
}

fn main() -> Result<()> {
    let Some(dir) = std::env::args_os().nth(1) else {
        return Err("usage: fuzz_seeds OUT_DIR".into());
    };
    let mut seeds = Seeds {
        dir: Path::new(&dir).to_path_buf(),
        written: 0,
    };
    chunk_and_metadata_seeds(&mut seeds)?;
    pickle_and_npy_seeds(&mut seeds)?;
    nwb_seeds(&mut seeds)?;
    table_and_swc_seeds(&mut seeds)?;
    lindi_seeds(&mut seeds)?;
    h5_seeds(&mut seeds)?;
    precomputed_seeds(&mut seeds)?;
    skeleton_seeds(&mut seeds)?;
    annotation_seeds(&mut seeds)?;
    mesh_seeds(&mut seeds)?;
    println!("{} seeds in {}", seeds.written, seeds.dir.display());
    Ok(())
}
