//! Property-style tests: `Array::read` / `Array::write` on random selections, compared with a
//! naive NumPy-like reference (every selected index listed, elements visited one by one), over
//! a `MemoryStore`. Layouts: Zarr v2, v3, v3 sharded, N5 in both axis orders; steps larger
//! than a chunk, negative steps, integer axes, edge chunks, 0-d arrays, non-zero fill values
//! and variable-length strings.

use std::sync::Arc;

use fastrand::Rng;
use neurochunk_array::convert::{derive_metadata, ConvertOptions};
use neurochunk_array::{
    Array, ArrayBytes, ArrayMetadata, AxisSelection, Codec, DataType, IndexRun, MemoryStore,
    N5AxisOrder, Selection, Store, ZarrFormat,
};
use serde_json::Map;

mod common;
use common::{as_u16, meta, string_meta, u16s};

/// The indices one axis selects, by Python's `slice.indices` and NumPy's integer indexing
/// (with the library's rule that an explicit bound beyond the axis is an error), and whether
/// the axis stays in the result.
fn reference_axis(sel: &AxisSelection, n: u64) -> Result<(Vec<u64>, bool), ()> {
    let n = n as i64;
    match *sel {
        AxisSelection::Index(i) => {
            let i = if i < 0 { i + n } else { i };
            if (0..n).contains(&i) {
                Ok((vec![i as u64], false))
            } else {
                Err(())
            }
        }
        AxisSelection::Run(r) => {
            let list: Vec<i64> = (0..r.count as i64)
                .map(|i| r.first as i64 + i * r.step)
                .collect();
            if r.step == 0 || list.iter().any(|&i| !(0..n).contains(&i)) {
                return Err(());
            }
            Ok((list.into_iter().map(|i| i as u64).collect(), !r.dropped))
        }
        AxisSelection::Slice { start, stop, step } => {
            if [start, stop].iter().flatten().any(|&b| b > n || b < -n) {
                return Err(());
            }
            let step = step.unwrap_or(1);
            let (lower, upper) = if step < 0 { (-1, n - 1) } else { (0, n) };
            let clamp = |v: Option<i64>, default: i64| match v {
                None => default,
                Some(v) => {
                    let v = if v < 0 { v + n } else { v };
                    v.clamp(lower, upper)
                }
            };
            let (default_start, default_stop) = if step < 0 {
                (upper, lower)
            } else {
                (lower, upper)
            };
            let start = clamp(start, default_start);
            let stop = clamp(stop, default_stop);
            let mut out = Vec::new();
            let mut i = start;
            while (step > 0 && i < stop) || (step < 0 && i > stop) {
                out.push(i as u64);
                i += step;
            }
            Ok((out, true))
        }
    }
}

/// Every selected index per axis and the result shape, or `Err` for a selection the library
/// must reject.
fn reference_selection(sel: &Selection, shape: &[u64]) -> Result<(Vec<Vec<u64>>, Vec<usize>), ()> {
    if sel.0.len() > shape.len() {
        return Err(());
    }
    let mut indices = Vec::new();
    let mut out_shape = Vec::new();
    for (d, &n) in shape.iter().enumerate() {
        let (list, keep) = reference_axis(sel.0.get(d).unwrap_or(&AxisSelection::ALL), n)?;
        if keep {
            out_shape.push(list.len());
        }
        indices.push(list);
    }
    Ok((indices, out_shape))
}

/// Call `f(linear index in the array, position in the selection)` for every selected
/// element, in C order of the selection.
fn visit(indices: &[Vec<u64>], shape: &[u64], mut f: impl FnMut(usize, usize)) {
    let total: usize = indices.iter().map(Vec::len).product();
    for pos in 0..total {
        let mut rest = pos;
        let mut linear = 0u64;
        let mut stride = 1u64;
        for d in (0..indices.len()).rev() {
            let i = indices[d][rest % indices[d].len()];
            rest /= indices[d].len();
            linear += i * stride;
            stride *= shape[d];
        }
        f(linear as usize, pos);
    }
}

/// A random selection over `shape`: integers, slices with any mix of bounds, steps beyond
/// the chunk size and negative steps; now and then a bound out of range.
fn random_selection(rng: &mut Rng, shape: &[u64], chunks: &[usize]) -> Selection {
    let axes = if rng.u64(..4) == 0 {
        rng.u64(..shape.len() as u64 + 1) as usize
    } else {
        shape.len()
    };
    let mut out = Vec::new();
    for d in 0..axes {
        let n = shape[d] as i64;
        let wild = rng.u64(..25) == 0;
        let bound = |rng: &mut Rng| {
            if wild {
                rng.i64(-n - 2..=n + 2)
            } else {
                rng.i64(-n..=n)
            }
        };
        if n > 0 && rng.u64(..5) == 0 {
            let i = if wild {
                rng.i64(-n - 1..=n)
            } else {
                rng.i64(-n..=n - 1)
            };
            out.push(AxisSelection::Index(i));
            continue;
        }
        let c = chunks[d] as i64;
        let magnitude = [1, 1, 1, 2, 3, c, c + 1, 2 * c + 1, n.max(1) + 1][rng.u64(..9) as usize];
        let step = match rng.u64(..4) {
            0 => None,
            1 => Some(-magnitude),
            _ => Some(magnitude),
        };
        let start = if rng.u64(..3) == 0 {
            None
        } else {
            Some(bound(rng))
        };
        let stop = if rng.u64(..3) == 0 {
            None
        } else {
            Some(bound(rng))
        };
        // Now and then the same axis as a run resolved beforehand (as a binding hands it
        // over), sometimes reaching past the axis.
        if rng.u64(..4) == 0 {
            let step = step.unwrap_or(1);
            let first = rng.u64(..=shape[d]);
            let room = if step > 0 {
                (shape[d].saturating_sub(first)).div_ceil(step as u64)
            } else {
                (first + 1).div_ceil(step.unsigned_abs())
            };
            let count = rng.u64(..=room + u64::from(wild));
            out.push(AxisSelection::Run(IndexRun {
                first,
                step,
                count,
                dropped: false,
            }));
            continue;
        }
        out.push(AxisSelection::Slice { start, stop, step });
    }
    Selection(out)
}

#[derive(Clone, Copy, Debug)]
enum Layout {
    V2,
    V3,
    Sharded,
    N5(N5AxisOrder),
}

fn plain_meta(
    format: ZarrFormat,
    shape: &[u64],
    chunks: &[usize],
    fill: u16,
    compressor: &[Codec],
) -> ArrayMetadata {
    ArrayMetadata {
        fill_value: Some(fill.to_le_bytes().to_vec()),
        ..meta(format, shape, chunks, compressor)
    }
}

/// A random array (and its fill value) of the given layout.
fn random_array(rng: &mut Rng, layout: Layout) -> (Array, Vec<u64>, u16) {
    let min_rank = if matches!(layout, Layout::N5(_)) {
        1
    } else {
        0
    };
    let rank = rng.i64(min_rank..=4) as usize;
    let max_len = [0, 40, 12, 7, 5][rank];
    let shape: Vec<u64> = (0..rank).map(|_| rng.i64(1..=max_len) as u64).collect();
    let chunks: Vec<usize> = shape
        .iter()
        .map(|&n| rng.i64(1..=n as i64 + 1) as usize)
        .collect();
    let fill = if rng.u64(..2) == 0 {
        0
    } else {
        rng.u64(..60000) as u16
    };
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let meta = match layout {
        Layout::V2 => plain_meta(ZarrFormat::V2, &shape, &chunks, fill, &[Codec::zstd(1)]),
        Layout::V3 => plain_meta(ZarrFormat::V3, &shape, &chunks, fill, &[]),
        Layout::Sharded => {
            let shards: Vec<usize> = chunks
                .iter()
                .map(|&c| c * rng.i64(1..=3) as usize)
                .collect();
            let options = ConvertOptions {
                chunks: Some(chunks.clone()),
                shards: Some(shards),
                compressors: Some(if rng.u64(..2) == 0 {
                    vec![Codec::zstd(1)]
                } else {
                    Vec::new()
                }),
                ..Default::default()
            };
            let plain = plain_meta(ZarrFormat::V3, &shape, &chunks, fill, &[]);
            derive_metadata(&plain, &options, "a").unwrap()
        }
        Layout::N5(order) => neurochunk_array::n5::n5_array_metadata(
            shape.clone(),
            chunks.clone(),
            DataType::UInt16,
            None,
            order,
            Map::new(),
            "a",
        )
        .unwrap(),
    };
    let fill = match layout {
        Layout::N5(_) => 0,
        _ => fill,
    };
    (Array::create(store, "a", meta).unwrap(), shape, fill)
}

/// Read `sel` from the array and from the model; both must agree (or both reject it).
fn check_read(array: &Array, model: &[u16], shape: &[u64], sel: &Selection, what: &str) {
    match reference_selection(sel, shape) {
        Err(()) => {
            let err = array.read(sel).expect_err(what).to_string();
            assert!(err.contains("/a"), "{what}: {err}");
        }
        Ok((indices, out_shape)) => {
            let mut expected = vec![0u16; indices.iter().map(Vec::len).product()];
            visit(&indices, shape, |i, p| expected[p] = model[i]);
            let (got_shape, got) = array.read(sel).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(got_shape, out_shape, "{what}");
            assert_eq!(as_u16(&got), expected, "{what}");
        }
    }
}

#[test]
fn random_selections_read_and_write_like_numpy() {
    let mut rng = Rng::with_seed(0x5DEE_CE66_D1CE_4E5B);
    let layouts = [
        Layout::V2,
        Layout::V3,
        Layout::Sharded,
        Layout::N5(N5AxisOrder::Listed),
        Layout::N5(N5AxisOrder::Reversed),
    ];
    for case in 0..400 {
        let layout = layouts[case % layouts.len()];
        let (array, shape, fill) = random_array(&mut rng, layout);
        let chunks = array.metadata().chunk_shape.clone();
        let n: usize = shape.iter().product::<u64>() as usize;
        let mut model = vec![fill; n];
        for step in 0..6 {
            let sel = random_selection(&mut rng, &shape, &chunks);
            let what = format!(
                "case {case} {layout:?} shape {shape:?} chunks {chunks:?} step {step}: {sel:?}"
            );
            match reference_selection(&sel, &shape) {
                Err(()) => {
                    let err = array.write(&sel, &u16s(&[])).expect_err(&what).to_string();
                    assert!(err.contains("/a"), "{what}: {err}");
                }
                Ok((indices, _)) => {
                    let count: usize = indices.iter().map(Vec::len).product();
                    let values: Vec<u16> = (0..count).map(|_| rng.u16(..)).collect();
                    array
                        .write(&sel, &u16s(&values))
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    visit(&indices, &shape, |i, p| model[i] = values[p]);
                }
            }
            for _ in 0..3 {
                let sel = random_selection(&mut rng, &shape, &chunks);
                check_read(
                    &array,
                    &model,
                    &shape,
                    &sel,
                    &format!("{what} / read {sel:?}"),
                );
            }
        }
        // Reopened from the store, the whole array matches the model.
        let open = neurochunk_array::OpenOptions {
            n5_axis_order: match layout {
                Layout::N5(order) => order,
                _ => N5AxisOrder::default(),
            },
        };
        let reopened = Array::open_with(array.store().clone(), "a", &open).unwrap();
        let (_, all) = reopened.read_all().unwrap();
        assert_eq!(as_u16(&all), model, "case {case} {layout:?}: whole array");
    }
}

#[test]
fn steps_beyond_the_array_and_reversed_edge_chunks() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let array = Array::create(
        store,
        "a",
        plain_meta(ZarrFormat::V3, &[10, 7], &[3, 4], 5, &[]),
    )
    .unwrap();
    let values: Vec<u16> = (0..70).collect();
    array.write_all(&u16s(&values)).unwrap();
    let sel = |rows: AxisSelection, cols: AxisSelection| Selection(vec![rows, cols]);
    let slice = |start, stop, step| AxisSelection::Slice { start, stop, step };
    // A step longer than the axis takes the first index only; reversed, the last.
    let (shape, data) = array
        .read(&sel(
            slice(None, None, Some(1000)),
            slice(None, None, Some(-1000)),
        ))
        .unwrap();
    assert_eq!((shape, as_u16(&data)), (vec![1, 1], vec![6]));
    // Reversed across the edge chunk on both axes.
    let (shape, data) = array
        .read(&sel(
            slice(None, Some(4), Some(-4)),
            slice(Some(-1), None, Some(-3)),
        ))
        .unwrap();
    assert_eq!(shape, vec![2, 3]);
    assert_eq!(as_u16(&data), vec![69, 66, 63, 69 - 28, 66 - 28, 63 - 28]);
    // A write through negative steps and an integer axis lands where NumPy puts it.
    array
        .write(
            &sel(AxisSelection::Index(-1), slice(None, None, Some(-2))),
            &u16s(&[1, 2, 3, 4]),
        )
        .unwrap();
    let (_, data) = array
        .read(&sel(AxisSelection::Index(9), AxisSelection::ALL))
        .unwrap();
    assert_eq!(as_u16(&data), vec![4, 64, 3, 66, 2, 68, 1]);
}

fn strings(items: &[String]) -> ArrayBytes {
    let mut data = Vec::new();
    let mut offsets = vec![0];
    for s in items {
        data.extend_from_slice(s.as_bytes());
        offsets.push(data.len());
    }
    ArrayBytes::Variable { data, offsets }
}

fn texts(data: &ArrayBytes) -> Vec<String> {
    let ArrayBytes::Variable { data, offsets } = data else {
        panic!("expected variable-length data")
    };
    offsets
        .windows(2)
        .map(|w| String::from_utf8(data[w[0]..w[1]].to_vec()).unwrap())
        .collect()
}

#[test]
fn random_selections_of_variable_length_strings() {
    let mut rng = Rng::with_seed(0xC0FF_EE00_1234_5678);
    for case in 0..120 {
        let rank = rng.i64(0..=3) as usize;
        let shape: Vec<u64> = (0..rank).map(|_| rng.i64(1..=9) as u64).collect();
        let chunks: Vec<usize> = shape
            .iter()
            .map(|&n| rng.i64(1..=n as i64) as usize)
            .collect();
        let format = if case % 3 == 0 {
            ZarrFormat::V2
        } else {
            ZarrFormat::V3
        };
        let mut meta = string_meta(format, &shape, &chunks);
        let sharded = case % 3 == 2;
        if sharded {
            let options = ConvertOptions {
                chunks: Some(chunks.clone()),
                shards: Some(chunks.iter().map(|c| c * 2).collect()),
                ..Default::default()
            };
            meta = derive_metadata(&meta, &options, "a").unwrap();
        }
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let array = Array::create(store, "a", meta).unwrap();
        let n: usize = shape.iter().product::<u64>() as usize;
        let mut model = vec![String::new(); n];
        for step in 0..5 {
            let what =
                format!("case {case} {format:?} sharded {sharded} shape {shape:?} step {step}");
            let sel = random_selection(&mut rng, &shape, &chunks);
            if let Ok((indices, _)) = reference_selection(&sel, &shape) {
                let count: usize = indices.iter().map(Vec::len).product();
                let values: Vec<String> = (0..count)
                    .map(|_| "é".repeat(rng.u64(..4) as usize) + &rng.u64(..100).to_string())
                    .collect();
                array
                    .write(&sel, &strings(&values))
                    .unwrap_or_else(|e| panic!("{what}: {sel:?}: {e}"));
                visit(&indices, &shape, |i, p| model[i] = values[p].clone());
            }
            let sel = random_selection(&mut rng, &shape, &chunks);
            match reference_selection(&sel, &shape) {
                Err(()) => assert!(array.read(&sel).is_err(), "{what}: {sel:?}"),
                Ok((indices, out_shape)) => {
                    let mut expected = vec![String::new(); indices.iter().map(Vec::len).product()];
                    visit(&indices, &shape, |i, p| expected[p] = model[i].clone());
                    let (got_shape, got) = array.read(&sel).unwrap();
                    assert_eq!(got_shape, out_shape, "{what}: {sel:?}");
                    assert_eq!(texts(&got), expected, "{what}: {sel:?}");
                }
            }
        }
    }
}
