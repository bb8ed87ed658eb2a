//! The engine's segment decoder (`rmqcore::segment_decoder`) for the JVM: the native
//! methods of `rmq.spark.NativeDecoder` (java/rmq/spark/NativeDecoder.java), which the
//! Spark DataSource V2 reader calls once per batch, never per row.
//!
//! This crate only adapts: it opens decoders, decodes batches with the same options the
//! Python binding passes, and tells Java where the column buffers are (`layout`). Handles
//! are boxed Rust values passed to Java as `long`s; Java frees each one exactly once.

pub mod broker;
pub mod errors;
pub mod handles;
pub mod layout;

use std::collections::HashSet;
use std::path::Path;

use jni::objects::{JClass, JLongArray, JObjectArray, JString};
use jni::sys::{jboolean, jint, jlong, jlongArray, jstring, JNI_TRUE};
use jni::JNIEnv;
use rmqcore::error::Error;
use rmqcore::segment_decoder::{
    BatchOptions, ColumnSelection, DecodedBatch, RecordFilter, SegmentDecoder, SegmentEnd,
};

use errors::{guard, Failure};

/// Bits of `decode`'s `columns` argument: which costlier columns to fill.
pub const MSG_ID: jint = 1;
pub const PROPERTIES: jint = 2;
pub const BODY: jint = 4;
pub const HOSTS: jint = 8;

/// The largest batch in record bytes, as the Python binding leaves it (its default).
const MAX_BATCH_BYTES: usize = 4 << 20;

fn decoder<'a>(handle: jlong) -> &'a SegmentDecoder {
    // SAFETY: `handle` came from `open` and Java has not closed it yet (NativeDecoder
    // guards both), so it points at a live boxed decoder.
    unsafe { handles::borrow(handle) }
}

fn batch<'a>(handle: jlong) -> &'a DecodedBatch {
    // SAFETY: as for `decoder`: a live box from `decode`, not yet freed.
    unsafe { handles::borrow(handle) }
}

fn position(value: jlong, name: &'static str) -> Result<usize, Failure> {
    usize::try_from(value).map_err(|_| Error::invalid(name, format!("{value} is negative")).into())
}

/// Open the segment file at `path` whose first byte is at commit-log offset `startOffset`.
#[no_mangle]
pub extern "system" fn Java_rmq_spark_NativeDecoder_open<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    path: JString<'local>,
    start_offset: jlong,
) -> jlong {
    guard(&mut env, 0, |env| {
        let path: String = env.get_string(&path)?.into();
        let start = u64::try_from(start_offset)
            .map_err(|_| Error::invalid("start_offset", format!("{start_offset} is negative")))?;
        let decoder = SegmentDecoder::open_at(Path::new(&path), start)?;
        Ok(handles::lend(decoder))
    })
}

#[no_mangle]
pub extern "system" fn Java_rmq_spark_NativeDecoder_close<'local>(
    _env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
) {
    // SAFETY: a live box from `open`, closed once (NativeDecoder zeroes its handle).
    unsafe { handles::free::<SegmentDecoder>(handle) }
}

#[no_mangle]
pub extern "system" fn Java_rmq_spark_NativeDecoder_size<'local>(
    _env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> jlong {
    decoder(handle).size() as jlong
}

/// Where to cut the segment into parts of about `partSize` bytes (see
/// `SegmentDecoder::split_points`).
#[no_mangle]
pub extern "system" fn Java_rmq_spark_NativeDecoder_splitPoints<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
    part_size: jlong,
) -> jlongArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let points: Vec<jlong> = decoder(handle)
            .split_points(position(part_size, "split_size")?)
            .into_iter()
            .map(|point| point as jlong)
            .collect();
        let array = env.new_long_array(points.len() as i32)?;
        env.set_long_array_region(&array, 0, &points)?;
        Ok(array.into_raw())
    })
}

/// Decode the records starting in `[from, limit)` into a new batch (at most `maxRows`
/// rows), describe it into `out` (`layout`) and return its handle, to be freed with
/// `freeBatch`. `topics` (or null) and the inclusive store-time bounds (`Long.MIN_VALUE`
/// / `Long.MAX_VALUE` for none) select rows, as the Python reader's pushed filters do.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_rmq_spark_NativeDecoder_decode<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
    from: jlong,
    limit: jlong,
    max_rows: jint,
    columns: jint,
    verify_crc: jboolean,
    topics: JObjectArray<'local>,
    store_time_min: jlong,
    store_time_max: jlong,
    out: JLongArray<'local>,
) -> jlong {
    guard(&mut env, 0, |env| {
        let topics = if topics.is_null() {
            None
        } else {
            let mut names = HashSet::new();
            for index in 0..env.get_array_length(&topics)? {
                let name = JString::from(env.get_object_array_element(&topics, index)?);
                names.insert(String::from(env.get_string(&name)?));
            }
            Some(names)
        };
        let options = BatchOptions {
            verify_crc: verify_crc == JNI_TRUE,
            filter: RecordFilter {
                topics,
                store_time_min: (store_time_min != i64::MIN).then_some(store_time_min),
                store_time_max: (store_time_max != i64::MAX).then_some(store_time_max),
            },
            max_rows: usize::try_from(max_rows.max(1)).unwrap_or(1),
            max_bytes: MAX_BATCH_BYTES,
            columns: ColumnSelection {
                msg_id: columns & MSG_ID != 0,
                properties: columns & PROPERTIES != 0,
                body: columns & BODY != 0,
                hosts: columns & HOSTS != 0,
            },
        };
        let decoded = Box::new(decoder(handle).decode_batch(
            position(from, "from")?,
            position(limit, "limit")?,
            &options,
        ));
        env.set_long_array_region(&out, 0, &layout::describe(&decoded))?;
        Ok(handles::lend_box(decoded))
    })
}

/// The message of the invalid record that ended a batch (the engine's `Corrupt` error
/// text, as the Python reader raises it), or null if the batch did not end at one.
#[no_mangle]
pub extern "system" fn Java_rmq_spark_NativeDecoder_invalidRecord<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
    batch_handle: jlong,
) -> jstring {
    guard(&mut env, std::ptr::null_mut(), |env| {
        match &batch(batch_handle).end {
            Some(SegmentEnd::Invalid(invalid)) => {
                let error = invalid.to_error(decoder(handle).path());
                Ok(env.new_string(error.to_string())?.into_raw())
            }
            _ => Ok(std::ptr::null_mut()),
        }
    })
}

#[no_mangle]
pub extern "system" fn Java_rmq_spark_NativeDecoder_freeBatch<'local>(
    _env: JNIEnv<'local>,
    _class: JClass<'local>,
    batch_handle: jlong,
) {
    // SAFETY: a live box from `decode`, freed once (the reader forgets it after).
    unsafe { handles::free::<DecodedBatch>(batch_handle) }
}
