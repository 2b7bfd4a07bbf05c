//! Validating HDF5 files through an import into scratch storage: the problems name the HDF5
//! objects and file, and nothing of the import remains afterwards.

use std::path::{Path, PathBuf};

use neurochunk_hdf5::validate::{import_scratch, validate_hdf5};
use neurochunk_hdf5::ImportOptions;
use neurochunk_hdmf::validate::{validate_with, Rule, SchemaSet, ValidateOptions};
use neurochunk_hdmf::Convention;

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
fn a_large_file_is_imported_into_a_temporary_directory_removed_afterwards() {
    let options = ImportOptions::new(Convention::Legacy);
    let in_memory = import_scratch(&no_unit(), &options, u64::MAX).unwrap();
    assert!(in_memory.scratch_dir().is_none());
    let on_disk = import_scratch(&no_unit(), &options, 0).unwrap();
    let dir = on_disk
        .scratch_dir()
        .expect("a temporary directory")
        .to_path_buf();
    assert!(dir.join(".zgroup").is_file(), "{}", dir.display());
    // Both give the same verdict.
    let docs =
        neurochunk_hdmf::validate::namespaces_for(&on_disk.file, &ValidateOptions::default())
            .unwrap();
    let schema = SchemaSet::from_namespace_docs(&docs);
    let a = validate_with(&in_memory.file, &schema);
    let b = validate_with(&on_disk.file, &schema);
    assert_eq!(a.findings, b.findings);
    assert_eq!(a.findings.len(), 1);
    drop(on_disk);
    assert!(!dir.exists(), "{} remains", dir.display());
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
