//! A Parquet writer that encodes the columns of each batch in parallel.
//!
//! [`ParallelParquetWriter`] is a drop-in for [`ArrowWriter`]: the same properties, the same
//! file (the Arrow schema in the footer, row groups of at most
//! [`WriterProperties::max_row_group_row_count`] rows), but each batch's columns are encoded,
//! dictionary-interned and compressed by rayon's workers at once rather than one after another.
//! A table of a few wide columns (coordinates, ids) is written about as many times faster as
//! there are cores for its columns. Pages stream into the column writers as batches arrive, so
//! memory is what [`ArrowWriter`] holds: the encoded row group, not the batches.

use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnWriter, ArrowLeafColumn, ArrowRowGroupWriterFactory,
};
use parquet::arrow::ArrowWriter;
use parquet::errors::{ParquetError, Result};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use rayon::prelude::*;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use std::io::Write;

/// The row group being written: one open writer per Parquet leaf column.
struct OpenRowGroup {
    writers: Vec<ArrowColumnWriter>,
    rows: usize,
}

/// A Parquet file writer encoding columns in parallel (see the module documentation).
pub struct ParallelParquetWriter<W: Write + Send> {
    file: SerializedFileWriter<W>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    max_rows: usize,
    open: Option<OpenRowGroup>,
    row_groups: usize,
}

impl<W: Write + Send> ParallelParquetWriter<W> {
    /// A writer of `schema` into `out` with `props` (as [`ArrowWriter::try_new`]).
    pub fn try_new(out: W, schema: SchemaRef, props: WriterProperties) -> Result<Self> {
        let max_rows = props.max_row_group_row_count().unwrap_or(usize::MAX).max(1);
        let (file, factory) =
            ArrowWriter::try_new(out, schema.clone(), Some(props))?.into_serialized_writer()?;
        Ok(ParallelParquetWriter {
            file,
            factory,
            schema,
            max_rows,
            open: None,
            row_groups: 0,
        })
    }

    /// Appends a batch (of the writer's schema), starting new row groups as they fill.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let mut offset = 0;
        while offset < batch.num_rows() {
            if self.open.is_none() {
                self.open = Some(OpenRowGroup {
                    writers: self.factory.create_column_writers(self.row_groups)?,
                    rows: 0,
                });
            }
            let open = self.open.as_mut().ok_or_else(|| {
                ParquetError::General("no row group open after opening one".into())
            })?;
            let take = (self.max_rows - open.rows).min(batch.num_rows() - offset);
            let part = batch.slice(offset, take);
            let mut leaves: Vec<ArrowLeafColumn> = Vec::with_capacity(open.writers.len());
            for (field, column) in self.schema.fields().iter().zip(part.columns()) {
                leaves.extend(compute_leaves(field, column)?);
            }
            if leaves.len() != open.writers.len() {
                return Err(ParquetError::General(format!(
                    "{} leaf columns for {} column writers",
                    leaves.len(),
                    open.writers.len()
                )));
            }
            open.writers
                .par_iter_mut()
                .zip(leaves.par_iter())
                .with_max_len(1)
                .try_for_each(|(writer, leaf)| writer.write(leaf))?;
            open.rows += take;
            offset += take;
            if open.rows >= self.max_rows {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Closes the open row group, its columns finished in parallel and appended in order.
    fn flush(&mut self) -> Result<()> {
        let Some(open) = self.open.take() else {
            return Ok(());
        };
        if open.rows == 0 {
            return Ok(());
        }
        let chunks = open
            .writers
            .into_par_iter()
            .with_max_len(1)
            .map(ArrowColumnWriter::close)
            .collect::<Result<Vec<_>>>()?;
        let mut row_group = self.file.next_row_group()?;
        for chunk in chunks {
            chunk.append_to_row_group(&mut row_group)?;
        }
        row_group.close()?;
        self.row_groups += 1;
        Ok(())
    }

    /// Writes the last row group and the footer, and returns the output.
    pub fn into_inner(mut self) -> Result<W> {
        self.flush()?;
        self.file.into_inner()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{ArrayRef, Float64Array, ListArray, StringArray, UInt64Array};
    use arrow::datatypes::{DataType, Field, Int32Type, Schema};
    use neurochunk_store::Bytes;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use std::collections::HashMap;
    use std::sync::Arc;

    fn batch(schema: &SchemaRef, start: u64, n: usize) -> RecordBatch {
        let ids: Vec<u64> = (start..start + n as u64).collect();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from(ids.clone())),
            Arc::new(Float64Array::from_iter(
                ids.iter().map(|&i| (i % 7 != 3).then_some(i as f64 * 0.5)),
            )),
            Arc::new(StringArray::from_iter_values(
                ids.iter().map(|i| format!("n{}", i % 13)),
            )),
            Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(
                ids.iter()
                    .map(|&i| Some((0..(i % 4) as i32).map(Some).collect::<Vec<_>>())),
            )),
        ];
        RecordBatch::try_new(schema.clone(), columns).unwrap()
    }

    /// Batches cut across row groups read back whole, in order, with the schema metadata
    /// and the row group sizes of the properties.
    #[test]
    fn writes_what_arrow_writer_reads_back() {
        let schema = Arc::new(Schema::new_with_metadata(
            vec![
                Field::new("id", DataType::UInt64, false),
                Field::new("x", DataType::Float64, true),
                Field::new("name", DataType::Utf8, false),
                Field::new(
                    "list",
                    DataType::List(Arc::new(Field::new("item", DataType::Int32, true))),
                    true,
                ),
            ],
            HashMap::from([("context".to_string(), "urn:test".to_string())]),
        ));
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(1000))
            .build();
        let mut w = ParallelParquetWriter::try_new(Vec::new(), schema.clone(), props).unwrap();
        let sizes = [700usize, 700, 1, 0, 2599];
        let mut start = 0u64;
        for n in sizes {
            w.write(&batch(&schema, start, n)).unwrap();
            start += n as u64;
        }
        let bytes = Bytes::from(w.into_inner().unwrap());
        let builder = ParquetRecordBatchReaderBuilder::try_new(bytes).unwrap();
        let groups: Vec<i64> = builder
            .metadata()
            .row_groups()
            .iter()
            .map(|g| g.num_rows())
            .collect();
        assert_eq!(groups, [1000, 1000, 1000, 1000]);
        assert_eq!(builder.schema().metadata()["context"], "urn:test");
        let read: Vec<RecordBatch> = builder.build().unwrap().map(|b| b.unwrap()).collect();
        let read = arrow::compute::concat_batches(&read[0].schema(), &read).unwrap();
        let expected = batch(&schema, 0, 4000);
        assert_eq!(read.num_rows(), 4000);
        for c in 0..schema.fields().len() {
            assert_eq!(
                read.column(c).as_ref(),
                expected.column(c).as_ref(),
                "column {c}"
            );
        }
    }
}
