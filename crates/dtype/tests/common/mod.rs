//! Helpers shared by the data type tests.

use neurochunk_dtype::DataType;

/// The fixed-size numeric kinds: bool, integers, floats and complex numbers.
pub fn numeric_types() -> Vec<DataType> {
    vec![
        DataType::Bool,
        DataType::Int8,
        DataType::Int16,
        DataType::Int32,
        DataType::Int64,
        DataType::UInt8,
        DataType::UInt16,
        DataType::UInt32,
        DataType::UInt64,
        DataType::Float16,
        DataType::Float32,
        DataType::Float64,
        DataType::Complex64,
        DataType::Complex128,
    ]
}
