//! The small files beside the logs: `config/topics.json`, `config/consumerOffset.json`
//! (read leniently, as fastjson writes them) and the checkpoint.

pub mod checkpoint;
pub mod consumer_offsets;
pub mod json_file;
pub mod lenient_json;
pub mod topics;
