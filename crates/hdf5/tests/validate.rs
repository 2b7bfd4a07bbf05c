//! Validating HDF5 files in place: the problems name the HDF5 objects and file.

use std::path::{Path, PathBuf};

use neurochunk_hdf5::validate::validate_hdf5;
use neurochunk_hdmf::validate::{Rule, ValidateOptions};

fn no_unit() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/1.5.1_timeseries_no_unit.nwb")
}

#[test]
fn an_hdf5_file_is_validated_with_its_object_paths() {
    let report = validate_hdf5(&no_unit(), &ValidateOptions::default()).unwrap();
    assert_eq!(report.file, no_unit().display().to_string());
    let errors: Vec<_> = report.errors().collect();
    assert_eq!(errors.len(), 1, "{}", report.to_text());
    assert_eq!(errors[0].rule, Rule::MissingAttribute);
    assert_eq!(errors[0].path, "/acquisition/test_timeseries/data");
    assert_eq!(errors[0].attribute.as_deref(), Some("unit"));
    let names: Vec<_> = report.namespaces.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["core", "hdmf-common", "hdmf-experimental"]);
}

#[test]
fn a_file_that_is_not_hdf5_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("text.nwb");
    std::fs::write(&path, "not hdf5").unwrap();
    let e = validate_hdf5(&path, &ValidateOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("text.nwb") && e.contains("not an HDF5 file"),
        "{e}"
    );
}
