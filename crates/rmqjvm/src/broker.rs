//! The broker calls of the JVM stream (`format("rmq")` with `endpoint`): the native
//! methods of `rmq.spark.NativeBroker` (java/rmq/spark/NativeBroker.java) over
//! `rmqnet::client::broker_reads`. A pulled range comes back as column buffers described
//! as the segment decoder's are (`layout`), so the same Java vectors read both.

use std::collections::HashSet;
use std::time::Duration;

use jni::objects::{JClass, JLongArray, JObjectArray, JString};
use jni::sys::{jint, jlong, jlongArray};
use jni::JNIEnv;
use rmqnet::client::broker_reads::{BrokerReads, PulledRange};
use rmqnet::client::pull_columns::RowFilter;

use crate::errors::{guard, Failure};
use crate::handles;
use crate::layout;

fn reads<'a>(handle: jlong) -> &'a BrokerReads {
    // SAFETY: `handle` came from `open` and Java never closes a cached connection while
    // readers use it (NativeBroker keeps them for the JVM's life).
    unsafe { handles::borrow(handle) }
}

fn strings(env: &mut JNIEnv<'_>, array: &JObjectArray<'_>) -> Result<Vec<String>, Failure> {
    let mut values = Vec::new();
    if array.is_null() {
        return Ok(values);
    }
    for index in 0..env.get_array_length(array)? {
        let value = JString::from(env.get_object_array_element(array, index)?);
        values.push(String::from(env.get_string(&value)?));
    }
    Ok(values)
}

fn text(env: &mut JNIEnv<'_>, value: &JString<'_>) -> Result<String, Failure> {
    Ok(env.get_string(value)?.into())
}

/// Calls to the broker whose supervisor is `supervisor`, with `token` (or null), retried
/// for up to `retryMillis` while retryable.
#[no_mangle]
pub extern "system" fn Java_rmq_spark_NativeBroker_open<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    supervisor: JString<'local>,
    token: JString<'local>,
    retry_millis: jlong,
) -> jlong {
    guard(&mut env, 0, |env| {
        let supervisor = text(env, &supervisor)?;
        let token = if token.is_null() {
            None
        } else {
            Some(text(env, &token)?)
        };
        let retry = Duration::from_millis(u64::try_from(retry_millis).unwrap_or(0));
        let reads = BrokerReads::new(&supervisor, token.as_deref(), retry)
            .map_err(|message| rmqcore::error::Error::invalid("endpoint", message))?;
        Ok(handles::lend(reads))
    })
}

#[no_mangle]
pub extern "system" fn Java_rmq_spark_NativeBroker_close<'local>(
    _env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
) {
    // SAFETY: a live box from `open`, closed once by its owner.
    unsafe { handles::free::<BrokerReads>(handle) }
}

/// The topic's queues as `long[]`, five numbers per queue in queue id order: queue id,
/// shard index, first offset, next offset, and the index of its shard's endpoint in
/// `endpoints` (filled with the endpoints' text).
#[no_mangle]
pub extern "system" fn Java_rmq_spark_NativeBroker_describe<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
    topic: JString<'local>,
    endpoints: JObjectArray<'local>,
) -> jlongArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let topic = text(env, &topic)?;
        let queues = reads(handle).describe(&topic)?;
        let mut numbers = Vec::with_capacity(queues.len() * 5);
        let mut seen: Vec<&str> = Vec::new();
        for queue in &queues {
            let index = match seen.iter().position(|known| *known == queue.endpoint) {
                Some(index) => index,
                None => {
                    seen.push(&queue.endpoint);
                    seen.len() - 1
                }
            };
            numbers.extend_from_slice(&[
                i64::from(queue.queue_id),
                i64::from(queue.shard),
                queue.min_offset,
                queue.max_offset,
                index as i64,
            ]);
        }
        let capacity = env.get_array_length(&endpoints)? as usize;
        for (index, endpoint) in seen.iter().enumerate().take(capacity) {
            let value = env.new_string(endpoint)?;
            env.set_object_array_element(&endpoints, index as i32, value)?;
        }
        let array = env.new_long_array(numbers.len() as i32)?;
        env.set_long_array_region(&array, 0, &numbers)?;
        Ok(array.into_raw())
    })
}

/// `{first offset, next offset}` of one queue, asked of its shard.
#[no_mangle]
pub extern "system" fn Java_rmq_spark_NativeBroker_queueOffsets<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
    topic: JString<'local>,
    queue_id: jint,
) -> jlongArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let topic = text(env, &topic)?;
        let (low, high) = reads(handle).queue_offsets(&topic, queue_id)?;
        let array = env.new_long_array(2)?;
        env.set_long_array_region(&array, 0, &[low, high])?;
        Ok(array.into_raw())
    })
}

#[no_mangle]
pub extern "system" fn Java_rmq_spark_NativeBroker_offsetForTime<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
    topic: JString<'local>,
    queue_id: jint,
    timestamp_ms: jlong,
) -> jlong {
    guard(&mut env, 0, |env| {
        let topic = text(env, &topic)?;
        Ok(reads(handle).offset_for_time(&topic, queue_id, timestamp_ms)?)
    })
}

/// Up to `maxRows` messages of the queue from `offset` on, below `end`, with one of `tags`
/// and of `keys` (each: any, if empty or null), into a new batch described into `out`
/// (`layout`; `NEXT_POSITION` is the offset the next pull starts at). Returns the batch's
/// handle, to be freed with `freeBatch`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_rmq_spark_NativeBroker_pull<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    handle: jlong,
    topic: JString<'local>,
    queue_id: jint,
    offset: jlong,
    end: jlong,
    max_rows: jint,
    tags: JObjectArray<'local>,
    keys: JObjectArray<'local>,
    out: JLongArray<'local>,
) -> jlong {
    guard(&mut env, 0, |env| {
        let topic = text(env, &topic)?;
        let tags = strings(env, &tags)?;
        let keys = strings(env, &keys)?;
        let filter = RowFilter {
            end_offset: end,
            keys: keys
                .iter()
                .map(|key| key.as_bytes())
                .collect::<HashSet<_>>(),
        };
        let rows = usize::try_from(max_rows.max(1)).unwrap_or(1);
        let pulled = reads(handle).pull_range(&topic, queue_id, offset, rows, &tags, &filter)?;
        let pulled = Box::new(pulled);
        let slots = layout::describe_columns(&pulled.columns, pulled.next_offset);
        env.set_long_array_region(&out, 0, &slots)?;
        Ok(handles::lend_box(pulled))
    })
}

#[no_mangle]
pub extern "system" fn Java_rmq_spark_NativeBroker_freeBatch<'local>(
    _env: JNIEnv<'local>,
    _class: JClass<'local>,
    batch_handle: jlong,
) {
    // SAFETY: a live box from `pull`, freed once (the reader forgets it after).
    unsafe { handles::free::<PulledRange>(batch_handle) }
}
