//! `rmq._rmqcore.TierReader`: a tiered store's segments, read from its bucket (Spark).

use std::sync::Arc;

use pyo3::prelude::*;
use rmqcore::tier::reader::TierReader;
use rmqcore::tier::TierEndpoint;

use crate::decoder::PySegmentDecoder;
use crate::errors::without_gil;

#[pyclass(name = "TierReader", module = "rmq._rmqcore", frozen)]
pub struct PyTierReader {
    inner: Arc<TierReader>,
}

#[pymethods]
impl PyTierReader {
    #[new]
    #[pyo3(signature = (url, *, endpoint = None, region = None))]
    fn new(
        py: Python<'_>,
        url: String,
        endpoint: Option<String>,
        region: Option<String>,
    ) -> PyResult<Self> {
        let inner = without_gil(py, || {
            TierReader::open(&url, TierEndpoint { endpoint, region })
        })?;
        Ok(PyTierReader {
            inner: Arc::new(inner),
        })
    }

    /// The segments in the bucket, oldest first, as ``(start_offset, size)``.
    fn segments(&self, py: Python<'_>) -> PyResult<Vec<(u64, u64)>> {
        let inner = Arc::clone(&self.inner);
        without_gil(py, move || inner.segments())
    }

    /// A decoder over the segment starting at ``start_offset``, fetched whole and
    /// checked against the CRC32 recorded at upload.
    fn decoder(&self, py: Python<'_>, start_offset: u64) -> PyResult<PySegmentDecoder> {
        let inner = Arc::clone(&self.inner);
        let decoder = without_gil(py, move || inner.decoder(start_offset))?;
        Ok(PySegmentDecoder {
            inner: Arc::new(decoder),
        })
    }
}
