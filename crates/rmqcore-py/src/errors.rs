//! The one table from engine errors to Python exceptions. The classes live in
//! `rmq/errors.py` (the whole hierarchy in one place); this looks them up by name and
//! fills in their structured fields.

use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyPermissionError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::IntoPyObjectExt;
use rmqcore::Error;

fn raise(py: Python<'_>, class: &str, message: String, fields: &[(&str, Py<PyAny>)]) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let class = py.import("rmq.errors")?.getattr(class)?;
        let kwargs = PyDict::new(py);
        for (name, value) in fields {
            kwargs.set_item(name, value)?;
        }
        let instance = class.call((message,), Some(&kwargs))?;
        Ok(PyErr::from_value(instance))
    };
    build().unwrap_or_else(|error| error)
}

fn object<'py, T: IntoPyObject<'py>>(py: Python<'py>, value: T) -> Py<PyAny> {
    value.into_py_any(py).unwrap_or_else(|_| py.None())
}

pub fn to_py_err(py: Python<'_>, error: Error) -> PyErr {
    let message = error.to_string();
    match error {
        Error::Corrupt {
            file,
            offset,
            queue_offset,
            reason,
        } => raise(
            py,
            "CorruptRecordError",
            message,
            &[
                ("file", object(py, file.display().to_string())),
                ("offset", object(py, offset)),
                ("reason", object(py, reason)),
                ("queue_offset", object(py, queue_offset)),
            ],
        ),
        Error::OffsetOutOfRange {
            offset, min, max, ..
        } => raise(
            py,
            "OffsetOutOfRangeError",
            message,
            &[
                ("offset", object(py, offset)),
                ("min_offset", object(py, min)),
                ("max_offset", object(py, max)),
            ],
        ),
        Error::InvalidArgument { argument, .. } => raise(
            py,
            "InvalidArgumentError",
            message,
            &[("argument", object(py, argument))],
        ),
        Error::NotFound(_) => raise(py, "NotFoundError", message, &[]),
        Error::Closed => raise(py, "StoreClosedError", message, &[]),
        Error::Locked { .. } => raise(py, "StoreLockedError", message, &[]),
        Error::DiskFull {
            path,
            usage,
            threshold,
        } => raise(
            py,
            "DiskFullError",
            message,
            &[
                ("path", object(py, path.display().to_string())),
                ("usage", object(py, usage)),
                ("threshold", object(py, threshold)),
            ],
        ),
        Error::FlushFailed(_) => raise(py, "FlushFailedError", message, &[]),
        Error::ReadOnly => raise(py, "ReadOnlyError", message, &[]),
        Error::Tier {
            object: name,
            reason,
            unreachable,
        } => raise(
            py,
            "TierError",
            message,
            &[
                ("object", object(py, name)),
                ("reason", object(py, reason)),
                ("unreachable", object(py, unreachable)),
            ],
        ),
        Error::TierObjectChanged {
            object: name,
            offset,
            queue_offset,
            resume_offset,
            reason,
        } => raise(
            py,
            "TierObjectChangedError",
            message,
            &[
                ("object", object(py, name)),
                ("offset", object(py, offset)),
                ("reason", object(py, reason)),
                ("queue_offset", object(py, queue_offset)),
                ("resume_offset", object(py, resume_offset)),
            ],
        ),
        Error::Io { path, source } => {
            let errno = source.raw_os_error();
            if matches!(errno, Some(libc_enospc) if libc_enospc == 28 || libc_enospc == 122) {
                return raise(
                    py,
                    "DiskFullError",
                    message,
                    &[
                        ("path", object(py, path.display().to_string())),
                        ("usage", object(py, 1.0)),
                        ("threshold", object(py, 1.0)),
                    ],
                );
            }
            let args = (errno.unwrap_or(0), message, path.display().to_string());
            match source.kind() {
                std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(args),
                std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(args),
                _ => PyOSError::new_err(args),
            }
        }
    }
}

/// Run an engine call with the GIL released and convert its error.
pub fn without_gil<T, F>(py: Python<'_>, call: F) -> PyResult<T>
where
    F: FnOnce() -> rmqcore::Result<T> + Send,
    T: Send,
{
    py.detach(call).map_err(|error| to_py_err(py, error))
}

/// An exception of the class `rmq.errors.<class>` that has no structured fields.
pub fn rmq_error(py: Python<'_>, class: &str, message: &str) -> PyErr {
    raise(py, class, message.to_owned(), &[])
}

/// An argument error raised before calling the engine.
pub fn invalid(py: Python<'_>, argument: &'static str, reason: impl Into<String>) -> PyErr {
    to_py_err(py, Error::invalid(argument, reason))
}

/// The client's exception class for a broker's gRPC status code (numbered as
/// `grpc.StatusCode` numbers it): the one table of the client side, used for the
/// producer's refused batches and, through `broker_error`, by `rmq.client.status`.
fn broker_class(code: i32) -> &'static str {
    match code {
        3 => "BrokerInvalidArgumentError",
        5 => "BrokerNotFoundError",
        11 => "BrokerOutOfRangeError",
        8 => "BrokerResourceExhaustedError",
        15 => "BrokerDataLossError",
        14 | 4 => "BrokerUnavailableError",
        9 => "StaleRouteError",
        16 | 7 => "AuthenticationError",
        _ => "BrokerError",
    }
}

/// The exception for a call a broker answered with status `code` and `message`: the
/// class of the table, carrying the `grpc.StatusCode` itself (an unknown number becomes
/// UNKNOWN) and, for lost data, the `resume_offset` the shard sent beside the status.
#[pyfunction]
#[pyo3(signature = (code, message, resume_offset=None))]
pub fn broker_error(
    py: Python<'_>,
    code: i32,
    message: String,
    resume_offset: Option<i64>,
) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let codes = py.import("grpc")?.getattr("StatusCode")?;
        let mut status = codes.getattr("UNKNOWN")?;
        for member in codes.try_iter()? {
            let member = member?;
            if member.getattr("value")?.get_item(0)?.extract::<i32>()? == code {
                status = member;
                break;
            }
        }
        let class = py.import("rmq.errors")?.getattr(broker_class(code))?;
        let instance = class.call1((message, status))?;
        if resume_offset.is_some() {
            instance.setattr("resume_offset", resume_offset)?;
        }
        Ok(PyErr::from_value(instance))
    };
    build().unwrap_or_else(|error| error)
}
