//! Derived fields (against a naive reference) and SWC import/export.

mod common;

use arrow::array::AsArray;
use arrow::datatypes::{UInt32Type, UInt64Type};
use common::*;
use neurochunk_table::derive::{derive, DeriveOptions};
use neurochunk_table::io::{read_all, write_all, WriteOptions};
use neurochunk_table::swc::{export_swc, import_swc, parse_swc, SwcImportOptions};
use neurochunk_table::synth::{mix, SkeletonSynth};
use neurochunk_table::validate::{validate_path, ValidateOptions};
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

/// Recursive textbook Strahler number.
fn naive_strahler(children: &HashMap<u64, Vec<u64>>, v: u64) -> u32 {
    let kids = children.get(&v).cloned().unwrap_or_default();
    if kids.is_empty() {
        return 1;
    }
    let mut vals: Vec<u32> = kids.iter().map(|&k| naive_strahler(children, k)).collect();
    vals.sort_unstable_by(|a, b| b.cmp(a));
    if vals.len() >= 2 && vals[0] == vals[1] {
        vals[0] + 1
    } else {
        vals[0]
    }
}

#[test]
fn derive_matches_naive_reference_on_random_forest() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("r.skeletons.parquet");
    // Shuffled, sparse ids: exercises the sorted index rather than the dense one.
    let n = 3000u64;
    let perm: Vec<u64> = (0..n).map(|i| mix(i) | (1 << 63)).collect();
    let synth = SkeletonSynth::new(n, 7, 1000, 0, CTX);
    let parent_rows: Vec<Option<u64>> = (0..n).map(|r| synth.parent_of(r)).collect();
    let s = Skel {
        ids: perm.clone(),
        frags: (0..n).map(|r| r / n.div_ceil(7)).collect(),
        parents: parent_rows
            .iter()
            .map(|p| p.map(|p| perm[p as usize]))
            .collect(),
    };
    let b = s.batch(md(&[]));
    write_all(&src, b.schema(), &[b], &WriteOptions::default()).unwrap();
    let out = dir.path().join("o.skeletons.arrow");
    let summary = derive(
        &src,
        &out,
        &DeriveOptions {
            batch_size: 333,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(summary.rows, n);
    let (_, batches) = read_all(&out).unwrap();
    let mut children: HashMap<u64, Vec<u64>> = HashMap::new();
    for (r, p) in parent_rows.iter().enumerate() {
        if let Some(p) = p {
            children.entry(perm[*p as usize]).or_default().push(perm[r]);
        }
    }
    let mut row = 0usize;
    for b in &batches {
        let ids = b
            .column_by_name("sample_id")
            .unwrap()
            .as_primitive::<UInt64Type>();
        let kids = b.column_by_name("child_ids").unwrap().as_list::<i32>();
        let nc = b
            .column_by_name("n_children")
            .unwrap()
            .as_primitive::<UInt32Type>();
        let st = b
            .column_by_name("strahler")
            .unwrap()
            .as_primitive::<UInt32Type>();
        for i in 0..b.num_rows() {
            let id = ids.value(i);
            assert_eq!(id, perm[row]);
            let mut want = children.get(&id).cloned().unwrap_or_default();
            want.sort_unstable();
            let got: Vec<u64> = kids.value(i).as_primitive::<UInt64Type>().values().to_vec();
            assert_eq!(got, want, "row {row}");
            assert_eq!(nc.value(i) as usize, want.len());
            assert_eq!(st.value(i), naive_strahler(&children, id), "row {row}");
            row += 1;
        }
    }
    assert_eq!(row as u64, n);
    let r = validate_path(
        &out,
        &ValidateOptions {
            strict: true,
            ..Default::default()
        },
    );
    assert!(r.is_valid() && r.warnings.is_empty(), "{:?}", r.lines());
}

#[test]
fn derive_connections_and_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let sk = dir.path().join("a.skeletons.parquet");
    let b = Skel::default().batch(md(&[]));
    write_all(&sk, b.schema(), &[b], &WriteOptions::default()).unwrap();
    let c = dir.path().join("c.connections.parquet");
    let b = connections(
        &[3, 4, 77],
        &[11, 10, 1],
        &["synapse", "gap_junction", "synapse"],
        md(&[("unit", None)]),
    );
    write_all(&c, b.schema(), &[b], &WriteOptions::default()).unwrap();
    let out = dir.path().join("o.connections.parquet");
    let e = derive(&c, &out, &DeriveOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("--samples"), "{e}");
    let s = derive(
        &c,
        &out,
        &DeriveOptions {
            samples: vec![sk.clone()],
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(s.unresolved, 1);
    let (_, batches) = read_all(&out).unwrap();
    let sf = batches[0]
        .column_by_name("src_fragment_id")
        .unwrap()
        .as_primitive::<UInt64Type>();
    assert_eq!(sf.iter().collect::<Vec<_>>(), vec![Some(7), Some(7), None]);
    let tf = batches[0]
        .column_by_name("tgt_fragment_id")
        .unwrap()
        .as_primitive::<UInt64Type>();
    assert_eq!(
        tf.iter().collect::<Vec<_>>(),
        vec![Some(9), Some(9), Some(7)]
    );
    // Invalid tree: refused, nothing written.
    let bad = dir.path().join("bad.skeletons.parquet");
    let b = Skel {
        parents: vec![None, None, Some(2), Some(2), None, Some(10)],
        ..Skel::default()
    }
    .batch(md(&[]));
    write_all(&bad, b.schema(), &[b], &WriteOptions::default()).unwrap();
    let o2 = dir.path().join("o2.skeletons.parquet");
    let e = derive(&bad, &o2, &DeriveOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("bad.skeletons.parquet") && e.contains("root"),
        "{e}"
    );
    assert!(!o2.exists());
}

fn swc_rows(text: &str) -> Vec<Vec<f64>> {
    parse_swc(text, Path::new("x.swc"))
        .unwrap()
        .samples
        .iter()
        .map(|s| {
            vec![
                s.id as f64,
                s.type_id as f64,
                s.x,
                s.y,
                s.z,
                s.radius,
                s.parent.map_or(-1.0, |p| p as f64),
            ]
        })
        .collect()
}

#[test]
fn swc_roundtrip_is_lossless_for_swc_fields() {
    let dir = tempfile::tempdir().unwrap();
    let a = "# header line\n#  second\n1 1 0.1 0.2 0.3 5 -1\n2 3 1e-7 -2.5 3 -1 1\n3 2 1.0000000000000002 2 3 0.25 2\n";
    let b = "1 1 9 9 9 1 -1\n2 4 8 8 8 1 1\n";
    std::fs::write(dir.path().join("10.swc"), a).unwrap();
    std::fs::write(dir.path().join("20.swc"), b).unwrap();
    let out = dir.path().join("n.skeletons.parquet");
    let opts = SwcImportOptions {
        context: CTX.into(),
        ..Default::default()
    };
    let s = import_swc(
        &[dir.path().join("10.swc"), dir.path().join("20.swc")],
        &out,
        &opts,
        &WriteOptions::default(),
    )
    .unwrap();
    assert_eq!(s.rows, 5);
    assert_eq!(
        s.fragments.iter().map(|f| f.1).collect::<Vec<_>>(),
        [10, 20]
    );
    assert!(
        s.notes.iter().any(|n| n.contains("shifted by 4")),
        "{:?}",
        s.notes
    );
    let r = validate_path(
        &out,
        &ValidateOptions {
            strict: true,
            ..Default::default()
        },
    );
    assert!(r.is_valid() && r.warnings.is_empty(), "{:?}", r.lines());
    let exported = dir.path().join("back");
    let files = export_swc(&out, &exported, None).unwrap();
    assert_eq!(files.len(), 2);
    let back_a = std::fs::read_to_string(exported.join("10.swc")).unwrap();
    let back_b = std::fs::read_to_string(exported.join("20.swc")).unwrap();
    assert_eq!(swc_rows(&back_a), swc_rows(a));
    assert_eq!(swc_rows(&back_b), swc_rows(b));
    assert!(back_a.starts_with("# header line\n#  second\n"), "{back_a}");
    assert!(export_swc(&out, &dir.path().join("one.swc"), None).is_err());
    export_swc(&out, &dir.path().join("one.swc"), Some(20)).unwrap();
    assert_eq!(
        swc_rows(&std::fs::read_to_string(dir.path().join("one.swc")).unwrap()),
        swc_rows(b)
    );
}

#[test]
fn swc_requires_context() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.swc"), "1 1 0 0 0 1 -1\n").unwrap();
    let e = import_swc(
        &[dir.path().join("a.swc")],
        &dir.path().join("o.skeletons.parquet"),
        &SwcImportOptions::default(),
        &WriteOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("context"), "{e}");
}

#[test]
fn swc_files_that_are_not_one_tree_are_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "cycle",
            "1 1 0 0 0 1 2\n2 3 1 0 0 1 1\n",
            "1 cycle(s) (through samples 1 -> 2)",
        ),
        (
            "duplicate",
            "1 1 0 0 0 1 -1\n2 3 1 0 0 1 1\n2 3 2 0 0 1 1\n",
            "duplicate sample numbers (2)",
        ),
        (
            "dangling",
            "1 1 0 0 0 1 -1\n2 3 1 0 0 1 7\n",
            "parents that are not in the file (sample 2 -> 7)",
        ),
        (
            "two-roots-and-a-dangling-parent",
            "1 1 0 0 0 1 -1\n2 3 1 0 0 1 -1\n3 3 1 0 0 1 9\n",
            "2 roots",
        ),
        ("no-root", "1 1 0 0 0 1 1\n", "no root"),
    ];
    for (name, text, problem) in cases {
        let swc = dir.path().join(format!("{name}.swc"));
        std::fs::write(&swc, text).unwrap();
        let out = dir.path().join(format!("{name}.skeletons.parquet"));
        let mut opts = SwcImportOptions {
            context: CTX.into(),
            ..Default::default()
        };
        let err = import_swc(
            std::slice::from_ref(&swc),
            &out,
            &opts,
            &WriteOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains(&format!("{name}.swc")) && err.contains(problem),
            "{name}: {err}"
        );
        assert!(!out.exists(), "{name}: written although refused");

        opts.allow_invalid = true;
        let summary = import_swc(&[swc], &out, &opts, &WriteOptions::default()).unwrap();
        assert!(out.exists(), "{name}");
        assert!(
            summary.notes.iter().any(|n| n.contains(problem)),
            "{name}: {:?}",
            summary.notes
        );
    }
}

#[test]
fn swc_forests_become_one_fragment_per_tree() {
    // Real files holding several trees (tests/data/swc/README.md): MorphIO's
    // multiple_soma.swc and disconnected_neurite.swc (roots 1 and 10 each) and navis' hemibrain
    // neuron 754538881 (4,881 samples, roots 1 and 1945).
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/swc");
    let dir = tempfile::tempdir().unwrap();
    let mut navis = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(data.join("754538881.swc.gz")).unwrap())
        .read_to_string(&mut navis)
        .unwrap();
    std::fs::write(dir.path().join("754538881.swc"), &navis).unwrap();
    let inputs = [
        data.join("multiple_soma.swc"),
        data.join("disconnected_neurite.swc"),
        dir.path().join("754538881.swc"),
    ];
    let out = dir.path().join("forest.skeletons.parquet");
    let opts = SwcImportOptions {
        context: CTX.into(),
        ..Default::default()
    };
    let s = import_swc(&inputs, &out, &opts, &WriteOptions::default()).unwrap();
    assert_eq!(s.rows, 10 + 10 + 4881, "every sample is kept");
    // The first tree keeps the file's fragment (its position, or its numeric stem); the others
    // are numbered after the largest of those.
    let frags: Vec<u64> = s.fragments.iter().map(|f| f.1).collect();
    assert_eq!(frags, [0, 754538882, 1, 754538883, 754538881, 754538884]);
    assert!(
        s.notes.iter().any(|n| n.contains("754538881.swc: 2 trees, one fragment each (sample 1 -> fragment 754538881, sample 1945 -> fragment 754538884)")),
        "{:?}",
        s.notes
    );
    let report = validate_path(
        &out,
        &ValidateOptions {
            strict: true,
            ..Default::default()
        },
    );
    assert!(report.is_valid(), "{:?}", report.lines());
    // Each fragment is the tree of its root, with the file's sample numbers.
    let back = dir.path().join("back");
    let files = export_swc(&out, &back, None).unwrap();
    assert_eq!(files.len(), 6);
    let soma = std::fs::read_to_string(data.join("multiple_soma.swc")).unwrap();
    let rows = swc_rows(&soma);
    assert_eq!(
        swc_rows(&std::fs::read_to_string(back.join("0.swc")).unwrap()),
        rows[..9]
    );
    assert_eq!(
        swc_rows(&std::fs::read_to_string(back.join("754538882.swc")).unwrap()),
        rows[9..]
    );
    let neuron = swc_rows(&navis);
    let first = swc_rows(&std::fs::read_to_string(back.join("754538881.swc")).unwrap());
    let second = swc_rows(&std::fs::read_to_string(back.join("754538884.swc")).unwrap());
    assert_eq!(first.len() + second.len(), neuron.len());
    assert_eq!(second[0][0], 1945.0);
    let mut joined = [first, second].concat();
    joined.sort_by(|a, b| a[0].total_cmp(&b[0]));
    let mut expected = neuron.clone();
    expected.sort_by(|a, b| a[0].total_cmp(&b[0]));
    assert_eq!(joined, expected);
}
