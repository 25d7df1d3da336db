"""The IWR-Bench task format: records, on-disk layout, validation, frames and media."""
