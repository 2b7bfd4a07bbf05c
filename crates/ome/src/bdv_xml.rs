//! The BigDataViewer XML that belongs to an N5 container but lives beside it.
//!
//! BigDataViewer and BigStitcher write `dataset.xml` next to `dataset.n5`; its `ImageLoader`
//! (format `bdv.n5`) names the container, relative to the XML's folder or absolute, and its
//! view setups hold the voxel size the container's own attributes may lack. A store rooted at
//! the container cannot see that file: [`bdv_xml_beside`] finds it on a local disk, and
//! [`bdv_xml_container`] goes the other way (the container an XML file names), so a caller
//! can lay the XML over the container's store ([`BdvXml::overlay`]) where the multiscale
//! reader looks for it; [`bdv_xml_for`] does both for a local path.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use neurochunk_store::{Bytes, OverlayStore, Store};

use crate::error::{OmeError, OmeResult};

/// XML files larger than this are not BigDataViewer descriptions worth reading.
const MAX_XML_BYTES: u64 = 64 << 20;

/// The container path the `bdv.n5` `ImageLoader` of the XML `text` names, resolved against
/// `xml_dir`; `None` when the XML has no such loader.
fn loader_container(text: &str, xml_dir: &Path) -> Option<PathBuf> {
    let loader_start = text.find("<ImageLoader")?;
    let loader = &text[loader_start..];
    let head_end = loader.find('>')?;
    if !loader[..head_end].contains("bdv.n5") {
        return None;
    }
    let n5_start = loader.find("<n5")?;
    let n5 = &loader[n5_start..];
    let open_end = n5.find('>')?;
    let close = n5.find("</n5>")?;
    let named = n5.get(open_end + 1..close)?.trim();
    if named.is_empty() {
        return None;
    }
    let path = Path::new(named);
    if n5[..open_end].contains("absolute") || path.is_absolute() {
        Some(path.to_path_buf())
    } else {
        Some(xml_dir.join(path))
    }
}

fn same_place(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The BigDataViewer XML file beside the N5 container at `container` that describes it: an
/// `.xml` file in the container's parent folder whose `bdv.n5` loader names the container
/// (the first by name when several do), with its contents. `None` when the container holds an
/// `.xml` file at its root itself (the reader uses that one), or when no such file exists.
pub fn bdv_xml_beside(container: &Path) -> Option<(PathBuf, Vec<u8>)> {
    let has_own = std::fs::read_dir(container)
        .ok()?
        .flatten()
        .any(|e| is_xml(&e.path()));
    if has_own {
        return None;
    }
    let parent = container
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut candidates: Vec<PathBuf> = std::fs::read_dir(parent)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| is_xml(p) && p.is_file())
        .collect();
    candidates.sort();
    candidates.into_iter().find_map(|xml| {
        let size = std::fs::metadata(&xml).ok()?.len();
        if size > MAX_XML_BYTES {
            return None;
        }
        let bytes = std::fs::read(&xml).ok()?;
        let named = loader_container(&String::from_utf8_lossy(&bytes), parent)?;
        same_place(&named, container).then_some((xml, bytes))
    })
}

/// The N5 container the BigDataViewer XML file at `xml` describes (its `bdv.n5` loader),
/// resolved against the file's folder.
pub fn bdv_xml_container(xml: &Path) -> OmeResult<PathBuf> {
    let shown = xml.display().to_string();
    let size = std::fs::metadata(xml)
        .map_err(|e| OmeError::invalid(&shown, e.to_string()))?
        .len();
    if size > MAX_XML_BYTES {
        return Err(OmeError::invalid(
            &shown,
            format!("{size} bytes: too large for a BigDataViewer XML file"),
        ));
    }
    let bytes = std::fs::read(xml).map_err(|e| OmeError::invalid(&shown, e.to_string()))?;
    let dir = xml
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    loader_container(&String::from_utf8_lossy(&bytes), dir).ok_or_else(|| {
        OmeError::invalid(
            &shown,
            "not a BigDataViewer XML file with an N5 image loader (ImageLoader format \
             \"bdv.n5\" naming the container)",
        )
    })
}

/// A BigDataViewer XML file and the N5 container it describes (see [`bdv_xml_for`]).
#[derive(Debug, Clone)]
pub struct BdvXml {
    /// The container's folder.
    pub container: PathBuf,
    /// The XML file.
    pub xml: PathBuf,
    /// The XML file's contents.
    pub bytes: Vec<u8>,
}

impl BdvXml {
    /// `store` (the container's) with the XML laid over its root under the file's name, where
    /// the multiscale reader looks for the voxel size.
    pub fn overlay(&self, store: Arc<dyn Store>) -> OmeResult<Arc<dyn Store>> {
        let name = self
            .xml
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("dataset.xml")
            .to_string();
        let bytes = Bytes::from(self.bytes.clone());
        Ok(Arc::new(OverlayStore::new(store, [(name, bytes)])?))
    }
}

/// The BigDataViewer description of a local `path`: for an `.xml` file, the N5 container its
/// loader names (an error when it names none); for the root folder of an N5 container with
/// the XML beside it ([`bdv_xml_beside`]), that XML; otherwise `None`.
pub fn bdv_xml_for(path: &Path) -> OmeResult<Option<BdvXml>> {
    if path.is_file() && is_xml(path) {
        let container = bdv_xml_container(path)?;
        let bytes = std::fs::read(path)
            .map_err(|e| OmeError::invalid(&path.display().to_string(), e.to_string()))?;
        return Ok(Some(BdvXml {
            container,
            xml: path.to_path_buf(),
            bytes,
        }));
    }
    if !is_n5_root(path) {
        return Ok(None);
    }
    Ok(bdv_xml_beside(path).map(|(xml, bytes)| BdvXml {
        container: path.to_path_buf(),
        xml,
        bytes,
    }))
}

/// A local `path` to read with its BigDataViewer XML, when one is involved: an XML file, or a
/// path below one (`dataset.xml/setup0/timepoint0/s0`), reads as the N5 container the file
/// names; the root of a container with such a file beside it reads with the file laid over
/// its root ([`BdvXml::overlay`]). The store is the container's (read-only) and the key the
/// node's path inside it; `None` when no BigDataViewer XML is involved.
pub fn open_bdv_path(path: &Path) -> OmeResult<Option<(Arc<dyn Store>, String)>> {
    let xml_file = path.ancestors().find(|a| is_xml(a) && a.is_file());
    let (described, key) = match xml_file {
        Some(file) => {
            let key = path
                .strip_prefix(file)
                .map(|rest| rest.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            (bdv_xml_for(file)?, key)
        }
        None => (bdv_xml_for(path)?, String::new()),
    };
    let Some(bdv) = described else {
        return Ok(None);
    };
    let container: Arc<dyn Store> =
        Arc::new(neurochunk_store::FsStore::read_only(bdv.container.clone()));
    Ok(Some((bdv.overlay(container)?, key)))
}

/// Open a location for reading as multiscale images are read: a local path with its
/// BigDataViewer XML ([`open_bdv_path`]), any other path or URL as
/// [`StoreLocation::open_for`](neurochunk_store::StoreLocation::open_for) opens it. The one
/// place the command line and the Python package turn a location into a store to read.
#[cfg(feature = "remote")]
pub fn open_location_read(
    location: &neurochunk_store::StoreLocation,
    options: &neurochunk_store::RemoteOptions,
) -> OmeResult<neurochunk_store::remote::OpenedLocation> {
    let display = location.display();
    if let Some(path) = location.local_path() {
        // A Neuroglancer precomputed scale directory is read through its layer's `info`.
        if let Some((layer, key)) = neurochunk_array::precomputed::local_scale_dir(path) {
            return Ok(neurochunk_store::remote::OpenedLocation {
                store: Arc::new(neurochunk_store::FsStore::new(layer)),
                key,
                display,
            });
        }
        if let Some((store, key)) = open_bdv_path(path)? {
            return Ok(neurochunk_store::remote::OpenedLocation {
                store,
                key,
                display,
            });
        }
    }
    location
        .open_for(options, neurochunk_store::remote::Access::Read)
        .map_err(OmeError::from)
}

/// Whether `dir` is the root of an N5 container (`attributes.json` with the `n5` version).
fn is_n5_root(dir: &Path) -> bool {
    std::fs::read(dir.join("attributes.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .is_some_and(|doc| doc.get("n5").is_some())
}

/// Whether `path` names an `.xml` file.
pub fn is_xml(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("xml"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const XML: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<SpimData version="0.2">
  <BasePath type="relative">.</BasePath>
  <SequenceDescription>
    <ImageLoader format="bdv.n5" version="1.0">
      <n5 type="relative">dataset.n5</n5>
    </ImageLoader>
  </SequenceDescription>
</SpimData>"#;

    #[test]
    fn finds_the_xml_naming_the_container() {
        let dir = tempfile::tempdir().unwrap();
        let container = dir.path().join("dataset.n5");
        std::fs::create_dir(&container).unwrap();
        assert!(bdv_xml_beside(&container).is_none());
        // An XML naming another container is not taken.
        std::fs::write(
            dir.path().join("a-other.xml"),
            XML.replace("dataset.n5", "other.n5"),
        )
        .unwrap();
        assert!(bdv_xml_beside(&container).is_none());
        std::fs::write(dir.path().join("dataset.xml"), XML).unwrap();
        let (path, bytes) = bdv_xml_beside(&container).unwrap();
        assert_eq!(path, dir.path().join("dataset.xml"));
        assert_eq!(bytes, XML.as_bytes());
        assert_eq!(
            bdv_xml_container(&path).unwrap(),
            dir.path().join("dataset.n5")
        );
        // An XML inside the container wins: nothing is laid over it.
        std::fs::write(container.join("dataset.xml"), XML).unwrap();
        assert!(bdv_xml_beside(&container).is_none());

        std::fs::write(dir.path().join("plain.xml"), "<a/>").unwrap();
        let err = bdv_xml_container(&dir.path().join("plain.xml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("plain.xml") && err.contains("bdv.n5"), "{err}");
    }
}
