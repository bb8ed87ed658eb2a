//! Reading a tier without its store: what Spark's executors do with a tiered store's
//! sealed segments. Segments are listed from the bucket and fetched whole, each checked
//! against the CRC32 recorded with it at upload, put back in log order when the object is
//! queue-grouped (its footer found and checked: `grouped_object.rs`), then decoded like a
//! local file, in the log's order.

use std::path::PathBuf;

use bytes::Bytes;

use super::grouped_object::Layout;
use super::location::TierLocation;
use super::object_client::{ObjectClient, TierEndpoint};
use crate::error::{Error, Result};
use crate::files::segment::parse_segment_file_name;
use crate::segment_decoder::SegmentDecoder;

#[derive(Debug)]
pub struct TierReader {
    client: ObjectClient,
}

impl TierReader {
    /// Credentials come from the `AWS_*` environment variables; wrong ones, or a missing
    /// bucket, fail here.
    pub fn open(url: &str, endpoint: TierEndpoint) -> Result<Self> {
        let client = ObjectClient::new(TierLocation::parse(url)?, &endpoint, 4)?;
        client.check()?;
        Ok(TierReader { client })
    }

    /// The segments in the bucket, oldest first: (start offset, the object's size).
    pub fn segments(&self) -> Result<Vec<(u64, u64)>> {
        let prefix = self.client.location().segments_prefix();
        let mut segments: Vec<(u64, u64)> = self
            .client
            .list(&prefix)?
            .into_iter()
            .filter_map(|(object, size)| {
                let name = object.filename()?.to_string();
                parse_segment_file_name(&name).map(|start| (start, size))
            })
            .collect();
        segments.sort_unstable();
        Ok(segments)
    }

    /// The segment starting at `start_offset`, fetched whole, checked, in log order.
    pub fn segment(&self, start_offset: u64) -> Result<Bytes> {
        let location = self.client.location();
        let object = location.segment(start_offset);
        let name = location.describe(&object);
        let info = self
            .client
            .head(&object)?
            .ok_or_else(|| Error::NotFound(format!("no segment object {name}")))?;
        let bytes = self.client.get_range(&object, 0..info.size)?;
        let crc = crc32fast::hash(&bytes);
        if bytes.len() as u64 != info.size || info.crc32.is_some_and(|recorded| recorded != crc) {
            return Err(Error::corrupt(
                PathBuf::from(&name),
                0,
                format!(
                    "the object differs from the segment uploaded ({} bytes, CRC32 {:?} \
                     recorded; {} bytes, CRC32 {crc:08x} read)",
                    info.size,
                    info.crc32.map(|c| format!("{c:08x}")),
                    bytes.len()
                ),
            ));
        }
        match Layout::of_object(&bytes) {
            Ok(layout)
                if layout.runs().len() == 1 && layout.segment_size() == bytes.len() as u64 =>
            {
                Ok(bytes)
            }
            Ok(layout) => Ok(Bytes::from(layout.log_order(&bytes))),
            Err(reason) => Err(Error::tier_object_changed(name, 0, reason)),
        }
    }

    /// A decoder over the segment starting at `start_offset`.
    pub fn decoder(&self, start_offset: u64) -> Result<SegmentDecoder> {
        let bytes = self.segment(start_offset)?;
        let location = self.client.location();
        let name = PathBuf::from(location.describe(&location.segment(start_offset)));
        Ok(SegmentDecoder::from_bytes(name, start_offset, bytes))
    }
}
