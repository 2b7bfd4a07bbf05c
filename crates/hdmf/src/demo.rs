//! A realistic extracellular-electrophysiology NWB file, written in either convention: a probe,
//! electrode groups linked to it, an electrodes table whose `group` column references the
//! groups, an ElectricalSeries with a DynamicTableRegion, position series sharing timestamps
//! through a link, sorted units with ragged spike times, and trials whose `timeseries` column
//! references the recordings. `scale` adds that many more typed TimeSeries (for large-file
//! benchmarks).

use std::path::Path;

use neurochunk_dtype::DataType;
use serde_json::{json, Value};

use crate::convention::Convention;
use crate::error::HdmfResult;
use crate::file::AttributeValue;
use crate::reference::Reference;
use crate::values::{CompoundField, Dataset, DatasetValue, FieldKind, FieldValue};
use crate::write::{DatasetOptions, NamespaceDocs, NwbWriter, TypeInfo, WriteOptions};

/// What to write.
#[derive(Clone, Debug)]
pub struct DemoOptions {
    /// The convention to write (used by [`write_demo`]).
    pub convention: Convention,
    /// Extra typed TimeSeries under `/processing/scaled`.
    pub scale: usize,
    /// Namespaces to cache (e.g. NWB core and hdmf-common from their YAML files).
    pub namespaces: Vec<NamespaceDocs>,
    /// Options of the write session (used by [`write_demo`]).
    pub write: WriteOptions,
}

/// Numbers of what the demo wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DemoSummary {
    /// The file's display name (its path, for [`write_demo`]).
    pub name: String,
    /// Electrodes (rows of the electrodes table, channels of the recording).
    pub electrodes: usize,
    /// Samples per channel of the recording.
    pub samples: usize,
    /// Sorted units.
    pub units: usize,
    /// Trials.
    pub trials: usize,
    /// Extra typed TimeSeries (`scale`).
    pub extra_series: usize,
}

/// The NWB version written when no core namespace is cached (pynwb 4.2's schema).
pub const DEFAULT_NWB_VERSION: &str = "2.11.0";

const ELECTRODES: usize = 8;
const SAMPLES: usize = 3000;
const RATE: f64 = 30_000.0;
const POSITIONS: usize = 100;
const ELECTRODES_PATH: &str = "/general/extracellular_ephys/electrodes";
const SERIES_PATH: &str = "/acquisition/ElectricalSeries";

fn v(x: Value) -> AttributeValue {
    AttributeValue::Value(x)
}

fn attrs(pairs: &[(&str, Value)]) -> Vec<(String, AttributeValue)> {
    pairs
        .iter()
        .map(|(k, x)| (k.to_string(), v(x.clone())))
        .collect()
}

fn core(t: &str) -> TypeInfo {
    TypeInfo::new("core", t)
}

fn common(t: &str) -> TypeInfo {
    TypeInfo::new("hdmf-common", t)
}

fn dims(names: &[&str]) -> DatasetOptions {
    DatasetOptions {
        chunks: None,
        dims: Some(names.iter().map(|s| s.to_string()).collect()),
    }
}

/// The attributes of a TimeSeries group.
fn series_attrs(description: &str) -> Vec<(String, AttributeValue)> {
    attrs(&[
        ("comments", json!("no comments")),
        ("description", json!(description)),
    ])
}

/// The attributes of a TimeSeries `data` dataset.
fn series_data_attrs(conversion: f64, unit: &str) -> Vec<(String, AttributeValue)> {
    attrs(&[
        ("conversion", json!(conversion)),
        ("offset", json!(0.0)),
        ("resolution", json!(-1.0)),
        ("unit", json!(unit)),
    ])
}

/// Write `<column>_index`, the VectorIndex of a ragged column, from its end offsets.
fn write_vector_index(w: &mut NwbWriter, column: &str, ends: &[u64]) -> HdmfResult<()> {
    let name = column.rsplit('/').next().unwrap_or(column);
    w.dataset(
        &format!("{column}_index"),
        Some(&common("VectorIndex")),
        &index_dataset(ends),
        &[
            (
                "description".into(),
                v(json!(format!("Index for VectorData '{name}'"))),
            ),
            (
                "target".into(),
                AttributeValue::Reference(Reference::to(column)),
            ),
        ],
        &dims(&["num_rows"]),
    )
}

/// A 1-D or N-d numeric dataset from little-endian bytes.
pub fn numeric(data_type: DataType, shape: Vec<usize>, bytes: Vec<u8>) -> Dataset {
    Dataset {
        shape,
        scalar: false,
        value: DatasetValue::Numeric { data_type, bytes },
    }
}

/// A 1-D float64 dataset.
pub fn f64s(values: &[f64]) -> Dataset {
    numeric(
        DataType::Float64,
        vec![values.len()],
        values.iter().flat_map(|x| x.to_le_bytes()).collect(),
    )
}

/// A 1-D int64 dataset.
pub fn i64s(values: &[i64]) -> Dataset {
    numeric(
        DataType::Int64,
        vec![values.len()],
        values.iter().flat_map(|x| x.to_le_bytes()).collect(),
    )
}

/// A scalar float64 dataset.
pub fn scalar_f64(x: f64) -> Dataset {
    Dataset {
        shape: Vec::new(),
        scalar: true,
        value: DatasetValue::Numeric {
            data_type: DataType::Float64,
            bytes: x.to_le_bytes().to_vec(),
        },
    }
}

/// A scalar text dataset; `bytes` stores it as bytes in the legacy convention (ISO dates).
pub fn scalar_text(text: &str, bytes: bool) -> Dataset {
    Dataset {
        shape: Vec::new(),
        scalar: true,
        value: DatasetValue::Text {
            values: vec![text.to_string()],
            bytes,
        },
    }
}

/// A 1-D text dataset.
pub fn texts(values: &[String], bytes: bool) -> Dataset {
    Dataset {
        shape: vec![values.len()],
        scalar: false,
        value: DatasetValue::Text {
            values: values.to_vec(),
            bytes,
        },
    }
}

/// A 1-D dataset of references.
pub fn references(targets: &[String]) -> Dataset {
    Dataset {
        shape: vec![targets.len()],
        scalar: false,
        value: DatasetValue::References(
            targets
                .iter()
                .map(|t| Some(Reference::to(t.clone())))
                .collect(),
        ),
    }
}

/// The smallest unsigned type that holds every offset of a VectorIndex (as pynwb picks).
fn index_dataset(ends: &[u64]) -> Dataset {
    let max = ends.iter().copied().max().unwrap_or(0);
    let (data_type, bytes): (DataType, Vec<u8>) = if max <= u8::MAX as u64 {
        (DataType::UInt8, ends.iter().map(|&e| e as u8).collect())
    } else if max <= u16::MAX as u64 {
        (
            DataType::UInt16,
            ends.iter()
                .flat_map(|&e| (e as u16).to_le_bytes())
                .collect(),
        )
    } else if max <= u32::MAX as u64 {
        (
            DataType::UInt32,
            ends.iter()
                .flat_map(|&e| (e as u32).to_le_bytes())
                .collect(),
        )
    } else {
        (
            DataType::UInt64,
            ends.iter().flat_map(|&e| e.to_le_bytes()).collect(),
        )
    };
    numeric(data_type, vec![ends.len()], bytes)
}

/// Deterministic pseudo-random numbers (xorshift) so the demo is reproducible.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Write the demo file at `path` (a directory tree, replaced if it exists): the filesystem
/// convenience over [`write_demo_into`].
pub fn write_demo(path: &Path, options: &DemoOptions) -> HdmfResult<DemoSummary> {
    let writer = NwbWriter::create(path, options.convention, options.write.clone())?;
    write_demo_into(writer, options)
}

/// Write the demo file with `writer` (e.g. [`NwbWriter::create_in`] a store prefix) and
/// finish it. `options.convention` and `options.write` are the writer's own; the other
/// options choose the content.
pub fn write_demo_into(mut w: NwbWriter, options: &DemoOptions) -> HdmfResult<DemoSummary> {
    let nwb_version = options
        .namespaces
        .iter()
        .find(|n| n.name == "core")
        .map_or(DEFAULT_NWB_VERSION.to_string(), |n| n.version.clone());
    w.root(&nwb_version, &core("NWBFile"), &[])?;
    // ISO dates are bytes-typed text in the legacy convention, as pynwb writes them.
    let legacy_bytes = true;
    let start = "2024-03-05T09:30:00.000000-05:00";
    for (path, text, is_date) in [
        ("/identifier", "neurochunk-demo-ecephys", false),
        (
            "/session_description",
            "Head-fixed mouse, silicon probe in CA1 during a linear-track task",
            false,
        ),
        ("/session_start_time", start, legacy_bytes),
        ("/timestamps_reference_time", start, legacy_bytes),
    ] {
        w.dataset(
            path,
            None,
            &scalar_text(text, is_date),
            &[],
            &DatasetOptions::default(),
        )?;
    }
    w.dataset(
        "/file_create_date",
        None,
        &texts(
            &["2024-03-05T18:00:00.000000-05:00".to_string()],
            legacy_bytes,
        ),
        &[],
        &dims(&["num_modifications"]),
    )?;
    for g in [
        "/acquisition",
        "/analysis",
        "/processing",
        "/stimulus/presentation",
        "/stimulus/templates",
        "/general/devices",
        "/intervals",
    ] {
        w.group(g, None, &[])?;
    }

    // Probe and electrode groups.
    w.group(
        "/general/devices/probe",
        Some(&core("Device")),
        &attrs(&[(
            "description",
            json!("64-channel silicon probe (NeuroNexus)"),
        )]),
    )?;
    let shanks = ["shank0", "shank1"];
    for (i, shank) in shanks.iter().enumerate() {
        let p = format!("/general/extracellular_ephys/{shank}");
        w.group(
            &p,
            Some(&core("ElectrodeGroup")),
            &attrs(&[
                ("description", json!(format!("electrodes of shank {i}"))),
                ("location", json!("CA1")),
            ]),
        )?;
        w.link(&p, "device", "/general/devices/probe", ".")?;
    }

    // Electrodes table.
    w.group(
        ELECTRODES_PATH,
        Some(&core("ElectrodesTable")),
        &attrs(&[
            ("colnames", json!(["location", "group", "group_name"])),
            (
                "description",
                json!("metadata about extracellular electrodes"),
            ),
        ]),
    )?;
    let ids: Vec<i64> = (0..ELECTRODES as i64).collect();
    w.dataset(
        &format!("{ELECTRODES_PATH}/id"),
        Some(&common("ElementIdentifiers")),
        &i64s(&ids),
        &[],
        &dims(&["num_rows"]),
    )?;
    let shank_of = |e: usize| shanks[e * shanks.len() / ELECTRODES];
    let locations: Vec<String> = (0..ELECTRODES)
        .map(|e| {
            if e % 2 == 0 {
                "CA1".into()
            } else {
                "CA1 stratum oriens".into()
            }
        })
        .collect();
    w.dataset(
        &format!("{ELECTRODES_PATH}/location"),
        Some(&common("VectorData")),
        &texts(&locations, false),
        &attrs(&[("description", json!("Location of the electrode (channel)."))]),
        &dims(&["dim0"]),
    )?;
    let group_targets: Vec<String> = (0..ELECTRODES)
        .map(|e| format!("/general/extracellular_ephys/{}", shank_of(e)))
        .collect();
    w.dataset(
        &format!("{ELECTRODES_PATH}/group"),
        Some(&common("VectorData")),
        &references(&group_targets),
        &attrs(&[("description", json!("Reference to the ElectrodeGroup."))]),
        &dims(&["dim0"]),
    )?;
    let group_names: Vec<String> = (0..ELECTRODES).map(|e| shank_of(e).to_string()).collect();
    w.dataset(
        &format!("{ELECTRODES_PATH}/group_name"),
        Some(&common("VectorData")),
        &texts(&group_names, false),
        &attrs(&[("description", json!("Name of the ElectrodeGroup."))]),
        &dims(&["dim0"]),
    )?;

    // The raw recording.
    w.group(
        SERIES_PATH,
        Some(&core("ElectricalSeries")),
        &series_attrs("wide-band signal, all channels"),
    )?;
    let mut noise = Noise(0x5eed_1234_abcd_0001);
    let mut raw = Vec::with_capacity(SAMPLES * ELECTRODES * 2);
    for t in 0..SAMPLES {
        for c in 0..ELECTRODES {
            let phase = t as f64 / RATE * 2.0 * std::f64::consts::PI * (8.0 + c as f64);
            let x = 400.0 * phase.sin() + 60.0 * (noise.next() - 0.5);
            raw.extend_from_slice(&(x.round() as i16).to_le_bytes());
        }
    }
    w.dataset(
        &format!("{SERIES_PATH}/data"),
        None,
        &numeric(DataType::Int16, vec![SAMPLES, ELECTRODES], raw),
        &series_data_attrs(1.95e-7, "volts"),
        &dims(&["num_times", "num_channels"]),
    )?;
    w.dataset(
        &format!("{SERIES_PATH}/electrodes"),
        Some(&common("DynamicTableRegion")),
        &i64s(&ids),
        &[
            ("description".into(), v(json!("all electrodes"))),
            (
                "table".into(),
                AttributeValue::Reference(Reference::to(ELECTRODES_PATH)),
            ),
        ],
        &dims(&["num_rows"]),
    )?;
    w.dataset(
        &format!("{SERIES_PATH}/starting_time"),
        None,
        &scalar_f64(0.0),
        &attrs(&[("rate", json!(RATE)), ("unit", json!("seconds"))]),
        &DatasetOptions::default(),
    )?;

    // Position, with the y series sharing the x series' timestamps through a link.
    let stamps: Vec<f64> = (0..POSITIONS).map(|i| i as f64 * 0.001).collect();
    for (axis, name) in ["x", "y"].iter().enumerate() {
        let p = format!("/acquisition/position_{name}");
        w.group(
            &p,
            Some(&core("TimeSeries")),
            &series_attrs(&format!("{name} position on the track")),
        )?;
        let values: Vec<f64> = (0..POSITIONS)
            .map(|i| (i as f64 * 0.05 + axis as f64).sin() * 20.0)
            .collect();
        w.dataset(
            &format!("{p}/data"),
            None,
            &f64s(&values),
            &series_data_attrs(1.0, "cm"),
            &dims(&["num_times"]),
        )?;
        if axis == 0 {
            w.dataset(
                &format!("{p}/timestamps"),
                None,
                &f64s(&stamps),
                &attrs(&[("interval", json!(1)), ("unit", json!("seconds"))]),
                &dims(&["num_times"]),
            )?;
        } else {
            w.link(&p, "timestamps", "/acquisition/position_x/timestamps", ".")?;
        }
    }

    // Sorted units with ragged spike times.
    let units = 5usize;
    let mut spikes = Vec::new();
    let mut ends = Vec::new();
    for u in 0..units {
        let count = 3 + 2 * u;
        for k in 0..count {
            spikes.push((k as f64 + noise.next()) * (SAMPLES as f64 / RATE) / count as f64);
        }
        ends.push(spikes.len() as u64);
    }
    w.group(
        "/units",
        Some(&core("Units")),
        &attrs(&[
            ("colnames", json!(["spike_times", "electrode_group"])),
            ("description", json!("units from spike sorting")),
        ]),
    )?;
    let unit_ids: Vec<i64> = (0..units as i64).collect();
    w.dataset(
        "/units/id",
        Some(&common("ElementIdentifiers")),
        &i64s(&unit_ids),
        &[],
        &dims(&["num_rows"]),
    )?;
    w.dataset(
        "/units/spike_times",
        Some(&common("VectorData")),
        &f64s(&spikes),
        &attrs(&[
            (
                "description",
                json!("the spike times for each unit in seconds"),
            ),
            ("resolution", json!(1.0 / RATE)),
        ]),
        &dims(&["dim0"]),
    )?;
    write_vector_index(&mut w, "/units/spike_times", &ends)?;
    let unit_groups: Vec<String> = (0..units)
        .map(|u| format!("/general/extracellular_ephys/{}", shanks[u % shanks.len()]))
        .collect();
    w.dataset(
        "/units/electrode_group",
        Some(&common("VectorData")),
        &references(&unit_groups),
        &attrs(&[(
            "description",
            json!("the electrode group that each spike unit came from"),
        )]),
        &dims(&["dim0"]),
    )?;

    // Trials referencing slices of the recording.
    let trials = 4usize;
    let per = SAMPLES / trials;
    w.group(
        "/intervals/trials",
        Some(&core("TimeIntervals")),
        &attrs(&[
            ("colnames", json!(["start_time", "stop_time", "timeseries"])),
            ("description", json!("experimental trials")),
        ]),
    )?;
    let trial_ids: Vec<i64> = (0..trials as i64).collect();
    w.dataset(
        "/intervals/trials/id",
        Some(&common("ElementIdentifiers")),
        &i64s(&trial_ids),
        &[],
        &dims(&["num_rows"]),
    )?;
    let starts: Vec<f64> = (0..trials).map(|t| (t * per) as f64 / RATE).collect();
    let stops: Vec<f64> = (0..trials).map(|t| ((t + 1) * per) as f64 / RATE).collect();
    w.dataset(
        "/intervals/trials/start_time",
        Some(&common("VectorData")),
        &f64s(&starts),
        &attrs(&[("description", json!("Start time of epoch, in seconds"))]),
        &dims(&["dim0"]),
    )?;
    w.dataset(
        "/intervals/trials/stop_time",
        Some(&common("VectorData")),
        &f64s(&stops),
        &attrs(&[("description", json!("Stop time of epoch, in seconds"))]),
        &dims(&["dim0"]),
    )?;
    let rows: Vec<Vec<FieldValue>> = (0..trials)
        .map(|t| {
            vec![
                FieldValue::Number(json!((t * per) as i32)),
                FieldValue::Number(json!(per as i32)),
                FieldValue::Reference(Some(Reference::to(SERIES_PATH))),
            ]
        })
        .collect();
    let compound = Dataset {
        shape: vec![trials],
        scalar: false,
        value: DatasetValue::Compound {
            fields: vec![
                CompoundField {
                    name: "idx_start".into(),
                    kind: FieldKind::Numeric(DataType::Int32),
                },
                CompoundField {
                    name: "count".into(),
                    kind: FieldKind::Numeric(DataType::Int32),
                },
                CompoundField {
                    name: "timeseries".into(),
                    kind: FieldKind::Reference,
                },
            ],
            rows,
        },
    };
    w.dataset(
        "/intervals/trials/timeseries",
        Some(&core("TimeSeriesReferenceVectorData")),
        &compound,
        &attrs(&[("description", json!("index into a TimeSeries object"))]),
        &dims(&["dim0"]),
    )?;
    let trial_ends: Vec<u64> = (1..=trials as u64).collect();
    write_vector_index(&mut w, "/intervals/trials/timeseries", &trial_ends)?;

    // Many small typed series, for large-file work.
    if options.scale > 0 {
        w.group(
            "/processing/scaled",
            Some(&core("ProcessingModule")),
            &attrs(&[("description", json!("many small series"))]),
        )?;
        for i in 0..options.scale {
            let p = format!("/processing/scaled/series_{i:06}");
            w.group(
                &p,
                Some(&core("TimeSeries")),
                &series_attrs("no description"),
            )?;
            let values: Vec<u8> = (0..16)
                .flat_map(|k| ((i * 16 + k) as f32).to_le_bytes())
                .collect();
            w.dataset(
                &format!("{p}/data"),
                None,
                &numeric(DataType::Float32, vec![16], values),
                &series_data_attrs(1.0, "a.u."),
                &dims(&["num_times"]),
            )?;
            w.dataset(
                &format!("{p}/starting_time"),
                None,
                &scalar_f64(i as f64),
                &attrs(&[("rate", json!(10.0)), ("unit", json!("seconds"))]),
                &DatasetOptions::default(),
            )?;
        }
    }

    for ns in &options.namespaces {
        w.cache_namespace(ns)?;
    }
    let name = w.finish()?;
    Ok(DemoSummary {
        name,
        electrodes: ELECTRODES,
        samples: SAMPLES,
        units,
        trials,
        extra_series: options.scale,
    })
}
