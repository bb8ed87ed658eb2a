//! `rmq._rmqcore.decode_pull_columns`: an encoded `rmq.v1.PullResponse` straight into the
//! column buffers `SegmentDecoder.decode` hands out (Arrow's layouts), for the Spark
//! stream source reading from a broker. `decode_pull_response` makes a Python object per
//! message, and the source then made Python lists per column from them: per row that cost
//! more than the rest of a micro-batch. Here no Python object is made per message.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use rmqcore::segment_decoder::ColumnBatch;
use rmqnet::client::pull_columns::{append_pull_columns, Malformed, RowFilter};

use crate::decoder::columns_dict;

/// The rows of one Pull response that `decode_pull_columns` kept, as Arrow buffers.
#[pyclass(name = "PulledColumns", module = "rmq._rmqcore", frozen)]
pub struct PyPulledColumns {
    #[pyo3(get)]
    num_rows: usize,
    /// The response's `next_offset` (where the next pull starts, filters aside).
    #[pyo3(get)]
    next_offset: i64,
    /// As `DecodedBatch.columns`; `body_crc_ok` is all null (a pull does not report it).
    #[pyo3(get)]
    columns: Py<PyDict>,
}

#[pymethods]
impl PyPulledColumns {
    fn __len__(&self) -> usize {
        self.num_rows
    }

    fn __repr__(&self) -> String {
        format!(
            "PulledColumns(num_rows={}, next_offset={})",
            self.num_rows, self.next_offset
        )
    }
}

fn malformed(error: Malformed) -> PyErr {
    PyValueError::new_err(error.to_string())
}

/// The messages of an encoded `rmq.v1.PullResponse` whose queue offset is below
/// `end_offset` and, when `keys` is not empty, that carry one of them, as column buffers
/// (see `PulledColumns`). Text that is not UTF-8 becomes U+FFFD, as in the segment decoder.
#[pyfunction]
#[pyo3(signature = (raw, *, end_offset = i64::MAX, keys = Vec::new()))]
pub fn decode_pull_columns(
    py: Python<'_>,
    raw: &Bound<'_, PyBytes>,
    end_offset: i64,
    keys: Vec<String>,
) -> PyResult<PyPulledColumns> {
    let whole = raw.as_bytes();
    let filter = RowFilter {
        end_offset,
        keys: keys.iter().map(|key| key.as_bytes()).collect(),
    };
    let decode = || -> PyResult<(ColumnBatch, i64)> {
        let mut batch = ColumnBatch::default();
        let next_offset = append_pull_columns(whole, &filter, &mut batch).map_err(malformed)?;
        Ok((batch, next_offset))
    };
    let (batch, next_offset) = py.detach(decode)?;
    Ok(PyPulledColumns {
        num_rows: batch.rows(),
        next_offset,
        columns: columns_dict(py, batch)?,
    })
}
