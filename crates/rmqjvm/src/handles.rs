//! Rust objects lent to Java as `long` handles: a boxed value's address, handed back on
//! every native call and freed by exactly one close/free call. Java's wrappers
//! (`NativeDecoder`, `NativeBroker`, the readers) make sure a handle is not used after it
//! is freed and is freed once; these functions are the only place the address is cast.

use jni::sys::jlong;

/// Box `value` and give Java its address.
pub fn lend<T>(value: T) -> jlong {
    lend_box(Box::new(value))
}

/// Give Java the address of an already boxed value.
pub fn lend_box<T>(value: Box<T>) -> jlong {
    Box::into_raw(value) as jlong
}

/// The value behind a handle from `lend`.
///
/// # Safety
/// `handle` came from `lend`/`lend_box` with this `T`, and has not been freed; the
/// reference must not outlive the handle.
pub unsafe fn borrow<'a, T>(handle: jlong) -> &'a T {
    // SAFETY: the caller's contract: a live box of `T`.
    unsafe { &*(handle as *const T) }
}

/// Drop the value behind a handle; 0 (never lent, or already forgotten by Java) is a
/// no-op.
///
/// # Safety
/// A non-zero `handle` came from `lend`/`lend_box` with this `T` and is freed only here,
/// once.
pub unsafe fn free<T>(handle: jlong) {
    if handle != 0 {
        // SAFETY: the caller's contract: a live box of `T`, freed once.
        drop(unsafe { Box::from_raw(handle as *mut T) });
    }
}
