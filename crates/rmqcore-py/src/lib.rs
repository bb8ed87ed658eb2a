//! `rmq._rmqcore`: the PyO3 binding of the rmq engine. Type conversion and error mapping
//! only; the storage logic lives in the `rmqcore` crate.

use pyo3::prelude::*;

mod attached_thread;
mod batch_child;
mod body_batch;
mod body_iterator;
mod body_places;
mod body_view;
mod column_buffer;
mod decoder;
mod errors;
mod functions;
mod lease_book;
mod message;
mod message_fields;
mod producer_core;
mod pull_columns;
mod put_result;
mod read_records;
mod received_message;
mod recovery_report;
mod retention_report;
mod send_batch_future;
mod send_future;
mod send_result;
mod shard_server;
mod store;
mod tier_reader;
mod transport;
mod verify_report;

#[pymodule]
fn _rmqcore(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add("RETRYABLE_STATUS_CODES", rmqnet::client::RETRYABLE.to_vec())?;
    module.add_class::<message::PyMessage>()?;
    module.add_class::<put_result::PyPutResult>()?;
    module.add_class::<put_result::PyPutResults>()?;
    module.add_class::<put_result::PyPutResultIter>()?;
    module.add_class::<store::PyStore>()?;
    store::put_fast_call::install(module.py())?;
    module.add_class::<store::PyPullResult>()?;
    module.add_class::<store::PyEncodedPull>()?;
    module.add_class::<body_batch::PyBodyBatch>()?;
    body_view::add_type(module)?;
    body_iterator::make_type(module.py())?;
    module.add_class::<producer_core::PyProducerCore>()?;
    module.add_class::<transport::PyTransport>()?;
    module.add_class::<transport::PyPendingCall>()?;
    module.add_class::<send_future::PySendFuture>()?;
    module.add_class::<send_batch_future::PySendBatchFuture>()?;
    module.add_class::<send_result::PySendResult>()?;
    module.add_class::<received_message::PyReceivedMessage>()?;
    module.add_class::<recovery_report::PyRecoveryReport>()?;
    module.add_class::<verify_report::PyVerifyReport>()?;
    module.add_class::<retention_report::PyRetentionReport>()?;
    module.add_class::<retention_report::PyDiskUsage>()?;
    module.add_class::<tier_reader::PyTierReader>()?;
    module.add_class::<shard_server::PyShardServer>()?;
    module.add_class::<lease_book::PyLeaseBook>()?;
    module.add_function(wrap_pyfunction!(lease_book::decode_receipt, module)?)?;
    module.add_function(wrap_pyfunction!(shard_server::native_status_codes, module)?)?;
    module.add_function(wrap_pyfunction!(
        shard_server::native_rocketmq_status_codes,
        module
    )?)?;
    module.add_function(wrap_pyfunction!(
        shard_server::native_rocketmq_system_properties,
        module
    )?)?;
    module.add_class::<decoder::PySegmentDecoder>()?;
    module.add_class::<decoder::PyDecodedBatch>()?;
    module.add_class::<column_buffer::PyColumnBuffer>()?;
    module.add_class::<pull_columns::PyPulledColumns>()?;
    module.add_function(wrap_pyfunction!(pull_columns::decode_pull_columns, module)?)?;
    module.add_function(wrap_pyfunction!(functions::java_string_hash, module)?)?;
    module.add_function(wrap_pyfunction!(functions::body_crc, module)?)?;
    module.add_function(wrap_pyfunction!(functions::validate_topic, module)?)?;
    module.add_function(wrap_pyfunction!(functions::validate_group, module)?)?;
    module.add_function(wrap_pyfunction!(errors::broker_error, module)?)?;
    module.add_function(wrap_pyfunction!(
        received_message::decode_pull_response,
        module
    )?)?;
    Ok(())
}

#[cfg(test)]
mod codec_agreement;
