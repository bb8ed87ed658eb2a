//! The one table from engine errors to the Java exceptions the JVM reader throws, and the
//! guard every native entry point runs its body in (a Rust panic must not unwind into the
//! JVM: it becomes a Java exception too).

use std::panic::{catch_unwind, AssertUnwindSafe};

use jni::objects::JValue;
use jni::JNIEnv;
use rmqcore::error::Error;
use rmqnet::client::CallError;

/// Thrown for bytes that are not a valid record; the JVM reader's counterpart of the
/// Python binding's `CorruptRecordError`, with the same message.
pub const CORRUPT_RECORD: &str = "rmq/spark/CorruptRecordException";
/// Thrown for any other engine error (I/O, a missing file ...).
pub const ENGINE_ERROR: &str = "rmq/spark/RmqException";
const INVALID_ARGUMENT: &str = "java/lang/IllegalArgumentException";
/// Thrown for a failed call to a broker, with its gRPC status code (as
/// `grpc.StatusCode` numbers it): the JVM stream decides on the code (OUT_OF_RANGE is
/// data lost to retention, NOT_FOUND an unknown topic), as the Python source does on the
/// client's exception classes.
pub const BROKER_CALL: &str = "rmq/spark/BrokerCallException";

/// The Java exception class for an engine error. Every error the decoder can raise maps
/// here and nowhere else.
pub fn java_class(error: &Error) -> &'static str {
    match error {
        Error::Corrupt { .. } | Error::TierObjectChanged { .. } => CORRUPT_RECORD,
        Error::InvalidArgument { .. } => INVALID_ARGUMENT,
        _ => ENGINE_ERROR,
    }
}

/// Throw `error` into the JVM (the native method then returns a placeholder value, which
/// the JVM discards because an exception is pending).
pub fn throw(env: &mut JNIEnv<'_>, error: &Error) {
    throw_message(env, java_class(error), &error.to_string());
}

pub fn throw_message(env: &mut JNIEnv<'_>, class: &str, message: &str) {
    // Throwing fails only if the class is missing or an exception is already pending;
    // either way the JVM has an exception to raise.
    let _ = env.throw_new(class, message);
}

/// Throw a broker call's failure as a `BrokerCallException(message, code)`.
pub fn throw_call(env: &mut JNIEnv<'_>, error: &CallError) {
    let thrown = (|| -> jni::errors::Result<()> {
        let message = env.new_string(&error.message)?;
        let exception = env.new_object(
            BROKER_CALL,
            "(Ljava/lang/String;I)V",
            &[JValue::Object(&message), JValue::Int(error.code)],
        )?;
        env.throw(jni::objects::JThrowable::from(exception))
    })();
    if thrown.is_err() && !env.exception_check().unwrap_or(true) {
        throw_message(env, ENGINE_ERROR, &error.message);
    }
}

/// Why a native method failed: the engine refused, a broker call did, or a JNI call did (which mostly means
/// a Java exception is already pending, e.g. an out-of-memory error).
#[derive(Debug)]
pub enum Failure {
    Engine(Error),
    Call(CallError),
    Jni(jni::errors::Error),
}

impl From<CallError> for Failure {
    fn from(error: CallError) -> Self {
        Failure::Call(error)
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure::Engine(error)
    }
}

impl From<jni::errors::Error> for Failure {
    fn from(error: jni::errors::Error) -> Self {
        Failure::Jni(error)
    }
}

/// Run a native method's body: a failure or a panic becomes a pending Java exception and
/// `fallback` is returned.
pub fn guard<T>(
    env: &mut JNIEnv<'_>,
    fallback: T,
    body: impl FnOnce(&mut JNIEnv<'_>) -> Result<T, Failure>,
) -> T {
    match catch_unwind(AssertUnwindSafe(|| body(env))) {
        Ok(Ok(value)) => value,
        Ok(Err(Failure::Engine(error))) => {
            throw(env, &error);
            fallback
        }
        Ok(Err(Failure::Call(error))) => {
            throw_call(env, &error);
            fallback
        }
        Ok(Err(Failure::Jni(error))) => {
            if !env.exception_check().unwrap_or(true) {
                throw_message(env, ENGINE_ERROR, &format!("JNI call failed: {error}"));
            }
            fallback
        }
        Err(panic) => {
            let text = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a panic in the native decoder");
            throw_message(env, ENGINE_ERROR, text);
            fallback
        }
    }
}
