//! The codec floor of the skeleton conversion benchmark
//! (`crates/bench/py/precomputed_skeletons_cloudvolume.py`): the compression work a conversion
//! between a gzip skeleton layer and a Snappy Parquet table cannot avoid, done with the same
//! implementations neurochunk uses (zlib-rs, the `snap` crate) on every core at once.
//!
//! `skeleton_floor SKELETON_DIR TABLE.parquet` prints one JSON line: the seconds to unzip every
//! `*.gz` file of the directory, to Snappy-compress the table's column values (in pages of
//! 1 MiB), and to decompress them again. Files are read into memory
//! first, untimed.

use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use rayon::prelude::*;
use std::io::Read;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, table] = args.as_slice() else {
        return Err("usage: skeleton_floor SKELETON_DIR TABLE.parquet".into());
    };
    let mut zipped = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "gz") {
            zipped.push(std::fs::read(path)?);
        }
    }
    let t0 = Instant::now();
    let unzipped: usize = zipped
        .par_iter()
        .map(|bytes| {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(bytes.as_slice())
                .read_to_end(&mut out)
                .map(|_| out.len())
        })
        .sum::<std::io::Result<usize>>()?;
    let inflate = t0.elapsed().as_secs_f64();

    // The table's column values, in 1 MiB pages: what a writer compresses and a reader
    // decompresses.
    let batches = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(table)?)?
        .with_batch_size(1 << 20)
        .build()?;
    let mut pages: Vec<Vec<u8>> = Vec::new();
    for batch in batches {
        for column in batch?.columns() {
            for buffer in column.to_data().buffers() {
                pages.extend(buffer.as_slice().chunks(1 << 20).map(<[u8]>::to_vec));
            }
        }
    }
    let t0 = Instant::now();
    let packed: Vec<Vec<u8>> = pages
        .par_iter()
        .map(|page| snap::raw::Encoder::new().compress_vec(page))
        .collect::<Result<_, _>>()?;
    let compress = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let unpacked: usize = packed
        .par_iter()
        .map(|page| {
            snap::raw::Decoder::new()
                .decompress_vec(page)
                .map(|p| p.len())
        })
        .sum::<Result<usize, _>>()?;
    let decompress = t0.elapsed().as_secs_f64();
    println!(
        "{}",
        serde_json::json!({
            "files": zipped.len(),
            "unzipped_bytes": unzipped,
            "column_bytes": unpacked,
            "inflate_s": inflate,
            "snappy_compress_s": compress,
            "snappy_decompress_s": decompress,
        })
    );
    Ok(())
}
