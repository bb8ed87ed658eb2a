//! The switch between sending through the Python subclass and sending over the binding's
//! own HTTP/2 connections (`native_sender.rs`): starting the native sender, handing it the
//! batches for one shard, stopping it. Apart from the rest because only this part of the
//! producer owns threads and connections, with a lifetime of their own.

use std::sync::Arc;

use pyo3::prelude::*;

use crate::native_sender::NativeSender;

use super::outgoing_batch::handed_back;
use super::{seconds, PyOutgoingBatch, PyProducerCore};

#[pymethods]
impl PyProducerCore {
    /// From now on send batches over the binding's own HTTP/2 connections (plaintext)
    /// rather than through the subclass: each call is bounded by `timeout` seconds and
    /// carries `metadata`. A batch the shard refuses, or whose call fails, goes back to
    /// the subclass's `_native_refused(batch, code, message)`.
    #[pyo3(signature = (*, timeout, metadata))]
    fn _use_native(
        slf: &Bound<'_, Self>,
        timeout: f64,
        metadata: Vec<(String, String)>,
    ) -> PyResult<()> {
        let timeout = seconds(timeout, "timeout")?;
        let mut native = slf
            .get()
            .native
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if native.is_some() {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "the producer already sends natively; stop that first",
            ));
        }
        let sender = NativeSender::start(
            Arc::clone(&slf.get().core),
            slf.clone().into_any().unbind(),
            timeout,
            &metadata,
        )
        .map_err(pyo3::exceptions::PyValueError::new_err)?;
        *native = Some(sender);
        Ok(())
    }

    /// Send `batches` (all for the shard at `endpoint`) in one SendBatches call over the
    /// native connections.
    fn _send_native(
        &self,
        py: Python<'_>,
        endpoint: String,
        batches: Vec<Bound<'_, PyOutgoingBatch>>,
    ) -> PyResult<()> {
        if batches.iter().any(|batch| batch.borrow().batch.is_none()) {
            return Err(handed_back());
        }
        let native = self
            .native
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(sender) = native.as_ref() else {
            return Err(crate::errors::rmq_error(
                py,
                "StoreClosedError",
                "the producer's native sender is stopped",
            ));
        };
        let taken = batches
            .iter()
            .filter_map(|batch| batch.borrow_mut().batch.take())
            .collect();
        sender.send(endpoint, taken);
        Ok(())
    }

    /// Stop the native sender: wait (without the GIL) up to `timeout` seconds for calls
    /// still in flight, then close its connections and threads.
    #[pyo3(signature = (timeout=None))]
    fn _stop_native(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<()> {
        let timeout = timeout
            .map(|timeout| seconds(timeout.max(0.0), "timeout"))
            .transpose()?;
        let sender = self
            .native
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(sender) = sender {
            py.detach(|| sender.stop(timeout));
        }
        Ok(())
    }
}
