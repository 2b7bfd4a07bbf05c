//! Typed element access: [`Element`] ties a Rust number type to the array [`DataType`] it
//! reads and writes, so that regions come back as `Vec<T>` (or an `ndarray::ArrayD<T>` with
//! the `ndarray` feature) instead of untyped bytes.
//!
//! ```
//! use std::sync::Arc;
//! use neurochunk_array::{ArrayBuilder, DataType, MemoryStore, Selection, Store};
//!
//! let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
//! let array = ArrayBuilder::new([4, 6], DataType::Float32)
//!     .chunks([2, 4])
//!     .create(store, "temperature")
//!     .unwrap();
//! let values: Vec<f32> = (0..24).map(|i| i as f32 * 0.5).collect();
//! array.write_elements(&Selection::all(), &values).unwrap();
//! let (shape, row) = array.read_elements::<f32>(&"1, ::2".parse().unwrap()).unwrap();
//! assert_eq!(shape, vec![3]);
//! assert_eq!(row, vec![3.0, 4.0, 5.0]);
//! ```

use neurochunk_codec::ArrayBytes;
use neurochunk_dtype::DataType;

use crate::array::Array;
use crate::error::{ArrayError, ArrayResult};
use crate::selection::Selection;

/// A Rust type whose values are the in-memory elements of one array [`DataType`]
/// (little-endian, packed; `bytemuck::Pod` guarantees any bytes are a valid value).
pub trait Element: bytemuck::Pod + Send + Sync {
    /// The data type an array must have to be read or written as `Self`.
    fn data_type() -> DataType;
}

macro_rules! elements {
    ($($t:ty => $dt:ident),* $(,)?) => {
        $(impl Element for $t {
            fn data_type() -> DataType {
                DataType::$dt
            }
        })*
    };
}

elements! {
    u8 => UInt8, u16 => UInt16, u32 => UInt32, u64 => UInt64,
    i8 => Int8, i16 => Int16, i32 => Int32, i64 => Int64,
    half::f16 => Float16, f32 => Float32, f64 => Float64,
}

/// The in-memory bytes of elements (which are little-endian on every supported target).
fn check_little_endian() {
    #[cfg(target_endian = "big")]
    compile_error!(
        "neurochunk keeps elements little-endian in memory: big-endian targets are not supported"
    );
}

impl Array {
    /// Refuse reading or writing `T` when the array's data type is not `T`'s.
    fn check_element<T: Element>(&self) -> ArrayResult<()> {
        check_little_endian();
        if self.metadata().data_type == T::data_type() {
            Ok(())
        } else {
            Err(ArrayError::Unsupported {
                path: crate::display_path(self.path()),
                message: format!(
                    "is {}, not {} ({})",
                    self.metadata().data_type_name(),
                    T::data_type(),
                    std::any::type_name::<T>()
                ),
            })
        }
    }

    /// Read a region as elements of `T` (which must match the array's data type). Returns the
    /// region's shape (integer-indexed axes dropped) and its elements in C order.
    pub fn read_elements<T: Element>(
        &self,
        selection: &Selection,
    ) -> ArrayResult<(Vec<usize>, Vec<T>)> {
        self.check_element::<T>()?;
        let shape = self.selection_shape(selection)?;
        let count: usize = shape.iter().product();
        self.check_output_fits(count, std::mem::size_of::<T>())?;
        let mut out = vec![T::zeroed(); count];
        self.read_into(selection, &mut out)?;
        Ok((shape, out))
    }

    /// Read a region into `out`, which must hold exactly the region's element count (see
    /// [`Array::selection_shape`]); this is what bindings use to fill a buffer they own.
    pub fn read_into<T: Element>(&self, selection: &Selection, out: &mut [T]) -> ArrayResult<()> {
        self.check_element::<T>()?;
        self.read_bytes_into(selection, bytemuck::cast_slice_mut(out))
    }

    /// Write `data` (C order, shaped like the region) as elements of `T`.
    pub fn write_elements<T: Element>(&self, selection: &Selection, data: &[T]) -> ArrayResult<()> {
        self.check_element::<T>()?;
        self.write(
            selection,
            &ArrayBytes::Fixed(bytemuck::cast_slice(data).to_vec()),
        )
    }

    /// Read a region as an `ndarray` array of `T`, shaped like the region.
    #[cfg(feature = "ndarray")]
    pub fn read_ndarray<T: Element>(
        &self,
        selection: &Selection,
    ) -> ArrayResult<ndarray::ArrayD<T>> {
        let (shape, values) = self.read_elements::<T>(selection)?;
        ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&shape), values).map_err(|e| {
            ArrayError::Unsupported {
                path: crate::display_path(self.path()),
                message: format!("cannot shape the result: {e}"),
            }
        })
    }

    /// Write an `ndarray` view (any memory layout) into a region of the same shape.
    #[cfg(feature = "ndarray")]
    pub fn write_ndarray<T: Element>(
        &self,
        selection: &Selection,
        data: &ndarray::ArrayViewD<'_, T>,
    ) -> ArrayResult<()> {
        let shape = self.selection_shape(selection)?;
        if data.shape() != shape.as_slice() {
            return Err(ArrayError::Selection {
                path: crate::display_path(self.path()),
                message: format!(
                    "data of shape {:?} does not fit the region of shape {shape:?}",
                    data.shape()
                ),
            });
        }
        match data.as_slice() {
            Some(contiguous) => self.write_elements(selection, contiguous),
            None => {
                let values: Vec<T> = data.iter().copied().collect();
                self.write_elements(selection, &values)
            }
        }
    }
}
