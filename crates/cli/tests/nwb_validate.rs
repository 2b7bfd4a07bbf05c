//! `neurochunk nwb validate`: exit status 0 (valid), 1 (invalid) and 2 (unreadable, or nothing
//! to validate against), the text report and the `--json` list, for the demo file against
//! small namespaces given with `--namespace`.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neurochunk"))
        .args(args)
        .output()
        .expect("runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Namespaces `core` (including `common`) that define every type the demo file uses, without
/// constraints; `NWBFile` also needs the attributes in `root_attributes`.
fn write_namespaces(dir: &Path, root_attributes: &[&str]) -> (String, String) {
    let common_ns = dir.join("common.namespace.yaml");
    std::fs::write(
        &common_ns,
        "namespaces:\n- name: hdmf-common\n  version: 1.0.0\n  schema:\n  - source: common.yaml\n",
    )
    .expect("write");
    std::fs::write(
        dir.join("common.yaml"),
        "datasets:\n- data_type_def: VectorData\n- data_type_def: VectorIndex\n  data_type_inc: VectorData\n\
         - data_type_def: ElementIdentifiers\n- data_type_def: DynamicTableRegion\n  data_type_inc: VectorData\n",
    )
    .expect("write");
    let core_ns = dir.join("core.namespace.yaml");
    std::fs::write(
        &core_ns,
        "namespaces:\n- name: core\n  version: 9.9.9\n  schema:\n  - namespace: hdmf-common\n  - source: core.yaml\n",
    )
    .expect("write");
    let attributes: String = root_attributes
        .iter()
        .map(|a| format!("  - name: {a}\n    dtype: text\n"))
        .collect();
    let root = if attributes.is_empty() {
        "- neurodata_type_def: NWBFile\n".to_string()
    } else {
        format!("- neurodata_type_def: NWBFile\n  attributes:\n{attributes}")
    };
    let groups: String = [
        "TimeSeries",
        "Device",
        "ElectrodeGroup",
        "ElectrodesTable",
        "TimeIntervals",
        "Units",
    ]
    .iter()
    .map(|t| format!("- neurodata_type_def: {t}\n"))
    .collect();
    std::fs::write(
        dir.join("core.yaml"),
        format!(
            "groups:\n{root}{groups}- neurodata_type_def: ElectricalSeries\n  neurodata_type_inc: TimeSeries\n\
             datasets:\n- neurodata_type_def: TimeSeriesReferenceVectorData\n  neurodata_type_inc: VectorData\n"
        ),
    )
    .expect("write");
    (
        core_ns.display().to_string(),
        common_ns.display().to_string(),
    )
}

#[test]
fn exit_status_reports_and_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let demo = dir.path().join("demo.nwb.zarr");
    let demo = demo.to_str().expect("utf-8");
    let out = run(&["nwb", "demo", demo, "--convention", "zarr3"]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    // No cached specifications and none given: nothing to validate against.
    let out = run(&["nwb", "validate", demo]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("caches no specifications"),
        "{}",
        text(&out.stderr)
    );

    // Every type known, nothing required: valid. The types describe no children, so every
    // child is a warning, which does not make the file invalid.
    let (core, common) = write_namespaces(dir.path(), &[]);
    let out = run(&[
        "nwb",
        "validate",
        demo,
        "--namespace",
        &core,
        "--namespace",
        &common,
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let summary = format!("{demo}: valid: 0 error(s), ");
    assert!(stdout.starts_with(&summary), "{stdout}");
    assert!(
        stdout.contains("(24 typed objects; core 9.9.9, hdmf-common 1.0.0)\nwarnings:\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("\n  warning [unmatched] /units/id (ElementIdentifiers): this dataset is not described by the specification of Units\n"),
        "{stdout}"
    );

    // The root lacks a required attribute: invalid, one line naming path, type and rule.
    let strict = dir.path().join("strict");
    std::fs::create_dir(&strict).expect("mkdir");
    let (core, common) = write_namespaces(&strict, &["lab_notebook"]);
    let out = run(&[
        "nwb",
        "validate",
        demo,
        "--namespace",
        &core,
        "--namespace",
        &common,
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("\nerrors:\n  error [missing-attribute] / (NWBFile): attribute 'lab_notebook': required attribute is missing\n"),
        "{stdout}"
    );

    // JSON: one list for every file; an unreadable file is an entry too, and status 2 wins.
    let missing = dir.path().join("absent.nwb.zarr");
    let missing = missing.to_str().expect("utf-8");
    let out = run(&[
        "nwb",
        "validate",
        demo,
        missing,
        "--json",
        "--namespace",
        &core,
        "--namespace",
        &common,
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let list: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let list = list.as_array().expect("a list");
    let errors: Vec<&Value> = list.iter().filter(|f| f["severity"] == "error").collect();
    assert_eq!(errors.len(), 2, "{list:?}");
    assert_eq!(errors[0]["file"], demo);
    assert_eq!(errors[0]["path"], "/");
    assert_eq!(errors[0]["rule"], "missing-attribute");
    assert_eq!(errors[0]["attribute"], "lab_notebook");
    assert_eq!(errors[0]["type"], "NWBFile");
    assert_eq!(errors[1]["file"], missing);
    assert_eq!(errors[1]["rule"], "unreadable");
    assert!(list
        .iter()
        .all(|f| f["severity"] == "error" || f["rule"] == "unmatched"));
    assert!(
        text(&out.stderr).contains("absent.nwb.zarr"),
        "{}",
        text(&out.stderr)
    );

    // A broken --namespace file is status 2 before anything is validated.
    let out = run(&["nwb", "validate", demo, "--namespace", missing]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--namespace"),
        "{}",
        text(&out.stderr)
    );
}
