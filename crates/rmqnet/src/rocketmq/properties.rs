//! The property names a stored v2 message carries besides its user properties, and the
//! check of the user properties a client sent: the names RocketMQ's broker keeps for
//! itself are refused, as are empty values and control characters.

use rmqproto::rocketmq_v2::{Code, Status};

use super::python_text::{has_control, repr};
use super::status::refused;

pub const UNIQ_KEY: &str = "UNIQ_KEY";
pub const MESSAGE_GROUP: &str = "__SHARDINGKEY";
/// Properties RocketMQ's broker keeps for itself: a client may not set them as user
/// properties. The one list: the Python path (`message_codec.SYSTEM_PROPERTIES`) takes it
/// from here through the binding.
pub const SYSTEM_PROPERTIES: &[&str] = &[
    "TAGS",
    "KEYS",
    UNIQ_KEY,
    MESSAGE_GROUP,
    "DELAY",
    "RETRY_TOPIC",
    "REAL_TOPIC",
    "REAL_QID",
    "TRAN_MSG",
    "PGROUP",
    "MIN_OFFSET",
    "MAX_OFFSET",
    "WAIT",
    "__STARTDELIVERTIME",
    "TIMER_DELIVER_MS",
    "TIMER_DELAY_SEC",
    "CLUSTER",
    "MSG_REGION",
    "TRACE_ON",
    "RECONSUME_TIME",
    "MAX_RECONSUME_TIMES",
    "ORIGIN_MESSAGE_ID",
    "__BORNHOST",
];

/// The user properties in name order (a protobuf map has none of its own), each checked
/// in that order.
pub fn user_properties(
    properties: impl IntoIterator<Item = (String, String)>,
) -> Result<Vec<(String, String)>, Status> {
    let mut properties: Vec<(String, String)> = properties.into_iter().collect();
    properties.sort_unstable();
    for (name, value) in &properties {
        if name.is_empty()
            || SYSTEM_PROPERTIES.contains(&name.as_str())
            || has_control(name)
            || has_control(value)
        {
            return Err(refused(
                Code::IllegalMessagePropertyKey,
                format!(
                    "property {} is reserved by the broker or holds a control character",
                    repr(name)
                ),
            ));
        }
        if value.is_empty() {
            return Err(refused(
                Code::IllegalMessagePropertyKey,
                format!("property {} is empty", repr(name)),
            ));
        }
    }
    Ok(properties)
}
