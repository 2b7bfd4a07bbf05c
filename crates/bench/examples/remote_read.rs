//! The neurochunk side of the remote benchmark (`crates/bench/py/remote_s3.py`): reads an
//! array at a URL and prints one JSON line with the time of the reads alone (the open
//! included), a checksum of the values, the requests and bytes the remote store counted and
//! the peak RSS.
//!
//! ```text
//! remote_read URL whole
//! remote_read URL box Z,Y,X DZ,DY,DX
//! remote_read URL voxels COORDS.txt      (one "z y x" per line, read one after the other)
//! remote_read URL write VOLUME.npy chunked|sharded
//!                                        (write a uint16 volume as a new Zarr v3 array, zstd 1,
//!                                         in 64³ chunks or 256³ shards of 32³; the .npy is read
//!                                         before the clock starts)
//! remote_read URL icechunk-write VOLUME.npy chunked|sharded
//!                                        (the same into a new Icechunk repository at URL, as
//!                                         its array `volume`, in one session and one commit)
//! remote_read URL nwb                    (open an NWB file, list its typed objects)
//! remote_read URL parquet COL,COL,...    (read these columns of a Parquet file)
//! remote_read make-nwb N DIR             (write the demo NWB file, v3 convention, N extra
//!                                         TimeSeries, to a local directory; not timed)
//! remote_read make-table ROWS FILE       (write the synthetic skeleton table; not timed)
//! ```
//!
//! The S3 endpoint and credentials come from the usual variables (`AWS_ENDPOINT_URL`, …).
//! For `nwb` the checksum is the number of typed objects, for `parquet` the number of rows
//! times the number of columns read, for `write` the sum of the values written.

use std::time::Instant;

use neurochunk_array::{Array, ArrayBytes, Selection};
use neurochunk_hdmf::{NwbFile, ReadOptions};
use neurochunk_store::{open_url, traffic, PrefixStore, RemoteOptions, Store};
use neurochunk_table::io::TableSource;

fn parse3(text: &str) -> Result<Vec<u64>, String> {
    let v: Vec<u64> = text
        .split(',')
        .map(|p| p.trim().parse::<u64>().map_err(|e| format!("{text}: {e}")))
        .collect::<Result<_, _>>()?;
    if v.len() != 3 {
        return Err(format!("{text}: three numbers expected"));
    }
    Ok(v)
}

fn sum_u16(data: &ArrayBytes) -> u64 {
    match data {
        ArrayBytes::Fixed(bytes) => bytes
            .chunks_exact(2)
            .map(|c| u64::from(u16::from_le_bytes([c[0], c[1]])))
            .sum(),
        ArrayBytes::Variable { .. } => 0,
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (url, op) = match args.as_slice() {
        [make, n, _, ..] if make.starts_with("make-") => (n.as_str(), make.as_str()),
        [url, op, ..] => (url.as_str(), op.as_str()),
        _ => return Err("usage: remote_read URL whole|box|voxels|nwb|parquet ...".into()),
    };
    match (op, args.get(2)) {
        ("make-nwb", Some(dir)) | ("make-table", Some(dir)) => {
            let n: usize = url.parse().map_err(|e| format!("{url}: {e}"))?;
            let path = std::path::Path::new(dir);
            if op == "make-nwb" {
                neurochunk_bench::nwb_bench::write(neurochunk_hdmf::Convention::V3, n, path, &[])
                    .map_err(|e| e.to_string())?;
            } else {
                neurochunk_bench::table_bench::write_table(n, (n as u64 / 10_000).max(1), path)?;
            }
            return Ok(());
        }
        _ => {}
    }
    let options = RemoteOptions::from_env()?;
    // A volume to write is read before the clock starts.
    let volume = match (op, args.get(2)) {
        ("write", Some(npy)) => {
            Some(neurochunk_dtype::npy::read_npy(npy).map_err(|e| format!("{npy}: {e}"))?)
        }
        ("icechunk-write", Some(npy)) => {
            Some(neurochunk_dtype::npy::read_npy(npy).map_err(|e| format!("{npy}: {e}"))?)
        }
        ("write" | "icechunk-write", None) => {
            return Err(format!("{op} VOLUME.npy chunked|sharded"))
        }
        _ => None,
    };
    let started = Instant::now();
    if op == "icechunk-write" {
        let (header, data) = volume.ok_or("icechunk-write VOLUME.npy chunked|sharded")?;
        let shape: Vec<u64> = header.shape.iter().map(|&n| n as u64).collect();
        let sum = write_repository(url, &options, &shape, data, args.get(3).map(String::as_str))?;
        return report(started, sum, 0);
    }
    let (store, key) = open_url(url, &options).map_err(|e| e.to_string())?;
    let store: std::sync::Arc<dyn Store> = if key.is_empty() {
        store
    } else {
        std::sync::Arc::new(PrefixStore::new(store, &key).map_err(|e| e.to_string())?)
    };
    let mut sum = 0u64;
    let mut reads = 1u64;
    match op {
        "nwb" => {
            let file = NwbFile::open_store(store, "", ReadOptions::default())
                .map_err(|e| e.to_string())?;
            sum = file.typed_objects().len() as u64;
        }
        "parquet" => {
            // `key` is the file: the table is read from the store of its URL's parent.
            let columns: Vec<String> = args
                .get(2)
                .ok_or("parquet COL,COL,...")?
                .split(',')
                .map(str::to_string)
                .collect();
            let (parent, file) = match url.rsplit_once('/') {
                Some((parent, file)) => (parent, file),
                None => return Err(format!("{url}: not a file URL")),
            };
            let (store, prefix) = open_url(parent, &options).map_err(|e| e.to_string())?;
            let key = if prefix.is_empty() {
                file.to_string()
            } else {
                format!("{}/{file}", prefix.trim_end_matches('/'))
            };
            let table = TableSource::open_store(store, &key).map_err(|e| e.to_string())?;
            for batch in table
                .batches_projected(&columns, 1 << 16)
                .map_err(|e| e.to_string())?
            {
                let batch = batch.map_err(|e| e.to_string())?;
                sum += (batch.num_rows() * batch.num_columns()) as u64;
            }
        }
        "write" => {
            let (header, data) = volume.ok_or("write VOLUME.npy chunked|sharded")?;
            let shape: Vec<u64> = header.shape.iter().map(|&n| n as u64).collect();
            sum = write_array(store, &shape, data, args.get(3).map(String::as_str))?;
            reads = 0;
        }
        _ => sum = read_array(store, op, &args, &mut reads)?,
    }
    report(started, sum, reads)
}

/// Print the run's JSON line: the time since `started`, the checksum, the reads, the remote
/// stores' requests and bytes, and the peak RSS.
fn report(started: Instant, sum: u64, reads: u64) -> Result<(), String> {
    let seconds = started.elapsed().as_secs_f64();
    let t = traffic();
    println!(
        "{{\"seconds\": {seconds:.6}, \"sum\": {sum}, \"reads\": {reads}, \"requests\": {}, \"bytes_read\": {}, \"peak_rss\": {}}}",
        t.requests,
        t.bytes_read,
        neurochunk_bench::rss::peak_bytes().unwrap_or(0)
    );
    Ok(())
}

/// Create an Icechunk repository at `url` and write the volume into it as the array
/// `volume`, through a session committed once (what `neurochunk put --format icechunk`
/// does); returns the sum of the values written.
fn write_repository(
    url: &str,
    options: &RemoteOptions,
    shape: &[u64],
    data: Vec<u8>,
    layout: Option<&str>,
) -> Result<u64, String> {
    use neurochunk_store::icechunk::{Repo, Session};
    use neurochunk_store::StoreLocation;
    let location = StoreLocation::parse(url).map_err(|e| e.to_string())?;
    Repo::create(&location, options).map_err(|e| e.to_string())?;
    let session = Session::begin(&location, "main", options).map_err(|e| e.to_string())?;
    let (store, key) = open_url(&format!("{url}/volume"), options).map_err(|e| e.to_string())?;
    let store = std::sync::Arc::new(PrefixStore::new(store, &key).map_err(|e| e.to_string())?);
    let sum = write_array(store, shape, data, layout)?;
    session
        .commit("benchmark volume")
        .map_err(|e| e.to_string())?;
    Ok(sum)
}

/// Write `data` (a C-order uint16 volume of `shape`) as a new array in `store`, in the
/// `layout` of the benchmark's arrays; returns the sum of the values written.
fn write_array(
    store: std::sync::Arc<dyn Store>,
    shape: &[u64],
    data: Vec<u8>,
    layout: Option<&str>,
) -> Result<u64, String> {
    use neurochunk_array::{ArrayBuilder, Codec, DataType};
    let builder = ArrayBuilder::new(shape.to_vec(), DataType::UInt16).codecs([Codec::zstd(1)]);
    let builder = match layout {
        Some("chunked") => builder.chunks([64, 64, 64]),
        Some("sharded") => builder.chunks([32, 32, 32]).shards([256, 256, 256]),
        other => return Err(format!("layout {other:?}: chunked or sharded")),
    };
    let array = builder.create(store, "").map_err(|e| e.to_string())?;
    let data = ArrayBytes::Fixed(data);
    array
        .write(&Selection::all(), &data)
        .map_err(|e| e.to_string())?;
    Ok(sum_u16(&data))
}

/// The array operations: `whole`, `box` and `voxels`; returns the sum of the values read.
fn read_array(
    store: std::sync::Arc<dyn Store>,
    op: &str,
    args: &[String],
    reads: &mut u64,
) -> Result<u64, String> {
    // Read-only, with the decoded-chunk cache the Python package gives read-only handles
    // (64 MiB; docs/caching.md): repeated voxels of one chunk cost one request.
    let array = Array::open(store, "")
        .map_err(|e| e.to_string())?
        .with_cache_bytes(neurochunk_array::DEFAULT_CACHE_BYTES);
    let mut sum = 0u64;
    match op {
        "whole" => {
            let (_, data) = array.read_all().map_err(|e| e.to_string())?;
            sum = sum_u16(&data);
        }
        "box" => {
            let (origin, extent) = match &args[2..] {
                [o, e] => (parse3(o)?, parse3(e)?),
                _ => return Err("box Z,Y,X DZ,DY,DX".into()),
            };
            let (_, data) = array
                .read(&Selection::from_box(&origin, &extent))
                .map_err(|e| e.to_string())?;
            sum = sum_u16(&data);
        }
        "voxels" => {
            let file = args.get(2).ok_or("voxels COORDS.txt")?;
            let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
            let coords: Vec<Vec<u64>> = text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| parse3(&l.split_whitespace().collect::<Vec<_>>().join(",")))
                .collect::<Result<_, _>>()?;
            *reads = 0;
            for c in &coords {
                let (_, data) = array
                    .read(&Selection::from_box(c, &[1, 1, 1]))
                    .map_err(|e| e.to_string())?;
                sum += sum_u16(&data);
                *reads += 1;
            }
        }
        other => return Err(format!("unknown operation {other}")),
    }
    Ok(sum)
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("remote_read: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
