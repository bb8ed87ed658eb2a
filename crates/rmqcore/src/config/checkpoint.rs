//! The `checkpoint` file (format §4.1): 4096 bytes holding big-endian i64 timestamps and
//! offsets. rmq writes RocketMQ's fields and, in bytes RocketMQ leaves unused, its own
//! record of the commit log's flushed offset, marked by a magic word so that a RocketMQ
//! store (which lacks it) is recognised and recovered by RocketMQ's timestamp rule.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::big_endian::{read_i64, write_i64};
use crate::error::{IoContext, Result};

pub const CHECKPOINT_SIZE: usize = 4096;
const PHYSIC_MSG_TIMESTAMP_AT: usize = 0;
const LOGICS_MSG_TIMESTAMP_AT: usize = 8;
const INDEX_MSG_TIMESTAMP_AT: usize = 16;
const MASTER_FLUSHED_OFFSET_AT: usize = 24;
const CONFIRM_PHY_OFFSET_AT: usize = 32;
/// rmq's own fields start well past every field RocketMQ defines.
const RMQ_MAGIC_AT: usize = 512;
const RMQ_FLUSHED_OFFSET_AT: usize = RMQ_MAGIC_AT + 8;
const RMQ_RECORD_CRC_AT: usize = RMQ_FLUSHED_OFFSET_AT + 8;
/// A copy of the physic timestamp at 0: when a RocketMQ broker has written the store since
/// rmq did, the two differ and rmq's fields are stale.
const RMQ_WITNESS_AT: usize = RMQ_RECORD_CRC_AT + 8;
const RMQ_MAGIC: i64 = i64::from_be_bytes(*b"RMQCKPT2");
/// Written by rmq before the witness: trusted as it is.
const RMQ_MAGIC_WITHOUT_WITNESS: i64 = i64::from_be_bytes(*b"RMQCKPT1");

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checkpoint {
    /// Store time of the last commit-log message known to be flushed.
    pub physic_msg_timestamp: i64,
    /// Store time of the last message dispatched to consume queues and flushed.
    pub logics_msg_timestamp: i64,
    /// End time of the last full, flushed index file.
    pub index_msg_timestamp: i64,
    /// RocketMQ 5's HA field (the master's flushed offset); rmq writes 0.
    pub master_flushed_offset: i64,
    pub confirm_phy_offset: i64,
    /// rmq only: every commit-log byte below this offset was flushed, and the consume
    /// queues and index were flushed up to it too. `None` in a RocketMQ-written file.
    pub flushed_offset: Option<i64>,
    /// rmq only: every record written after `flushed_offset` carries the whole-record CRC
    /// property, so recovery can treat one without it as damaged.
    pub records_carry_crc: bool,
}

impl Checkpoint {
    pub fn path(root: &Path) -> PathBuf {
        root.join("checkpoint")
    }

    pub fn encode(&self) -> [u8; CHECKPOINT_SIZE] {
        let mut bytes = [0u8; CHECKPOINT_SIZE];
        write_i64(
            &mut bytes,
            PHYSIC_MSG_TIMESTAMP_AT,
            self.physic_msg_timestamp,
        );
        write_i64(
            &mut bytes,
            LOGICS_MSG_TIMESTAMP_AT,
            self.logics_msg_timestamp,
        );
        write_i64(&mut bytes, INDEX_MSG_TIMESTAMP_AT, self.index_msg_timestamp);
        write_i64(
            &mut bytes,
            MASTER_FLUSHED_OFFSET_AT,
            self.master_flushed_offset,
        );
        write_i64(&mut bytes, CONFIRM_PHY_OFFSET_AT, self.confirm_phy_offset);
        if let Some(offset) = self.flushed_offset {
            write_i64(&mut bytes, RMQ_MAGIC_AT, RMQ_MAGIC);
            write_i64(&mut bytes, RMQ_FLUSHED_OFFSET_AT, offset);
            write_i64(&mut bytes, RMQ_WITNESS_AT, self.physic_msg_timestamp);
            write_i64(
                &mut bytes,
                RMQ_RECORD_CRC_AT,
                i64::from(self.records_carry_crc),
            );
        }
        bytes
    }

    /// Missing or short files read as zeros, which RocketMQ treats as "recover from the
    /// start".
    pub fn decode(bytes: &[u8]) -> Self {
        let field = |at: usize| {
            if bytes.len() >= at + 8 {
                read_i64(bytes, at)
            } else {
                0
            }
        };
        let physic_msg_timestamp = field(PHYSIC_MSG_TIMESTAMP_AT);
        // rmq's fields count only while they describe the store as it is: not after a
        // RocketMQ broker wrote to it (the timestamp at 0 moved, the witness did not).
        let rmq_fields_current = match field(RMQ_MAGIC_AT) {
            RMQ_MAGIC => field(RMQ_WITNESS_AT) == physic_msg_timestamp,
            RMQ_MAGIC_WITHOUT_WITNESS => true,
            _ => false,
        };
        Checkpoint {
            physic_msg_timestamp,
            logics_msg_timestamp: field(LOGICS_MSG_TIMESTAMP_AT),
            index_msg_timestamp: field(INDEX_MSG_TIMESTAMP_AT),
            master_flushed_offset: field(MASTER_FLUSHED_OFFSET_AT),
            confirm_phy_offset: field(CONFIRM_PHY_OFFSET_AT),
            records_carry_crc: rmq_fields_current && field(RMQ_RECORD_CRC_AT) == 1,
            flushed_offset: rmq_fields_current.then(|| field(RMQ_FLUSHED_OFFSET_AT)),
        }
    }

    pub fn load(root: &Path) -> Result<Self> {
        let path = Self::path(root);
        match fs::read(&path) {
            Ok(bytes) => Ok(Self::decode(&bytes)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Checkpoint::default()),
            Err(error) => Err(crate::error::Error::io(path, error)),
        }
    }

    /// RocketMQ's `getMinTimestamp`: the older of the two store times, less 3 s of slack.
    pub fn min_timestamp(&self) -> i64 {
        (self.physic_msg_timestamp.min(self.logics_msg_timestamp) - 3000).max(0)
    }

    /// Overwrite the file in place and fsync it. The fields a crash could tear are each
    /// one aligned 8-byte word inside one 4 KiB page.
    pub fn store(&self, root: &Path) -> Result<()> {
        let path = Self::path(root);
        let mut file: File = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .at(&path)?;
        file.write_all(&self.encode()).at(&path)?;
        file.sync_data().at(&path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_reads_missing_as_zero() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Checkpoint::load(dir.path()).unwrap(), Checkpoint::default());
        let checkpoint = Checkpoint {
            physic_msg_timestamp: 5000,
            logics_msg_timestamp: 4000,
            index_msg_timestamp: 1,
            master_flushed_offset: 77,
            confirm_phy_offset: 0,
            flushed_offset: Some(4096),
            records_carry_crc: true,
        };
        checkpoint.store(dir.path()).unwrap();
        assert_eq!(
            std::fs::metadata(Checkpoint::path(dir.path()))
                .unwrap()
                .len(),
            4096
        );
        assert_eq!(Checkpoint::load(dir.path()).unwrap(), checkpoint);
        assert_eq!(checkpoint.min_timestamp(), 1000);
    }

    #[test]
    fn fields_a_rocketmq_broker_made_stale_are_ignored() {
        let rmq = Checkpoint {
            physic_msg_timestamp: 1_700_000_000_000,
            logics_msg_timestamp: 1_700_000_000_000,
            flushed_offset: Some(4096),
            records_carry_crc: true,
            ..Checkpoint::default()
        };
        let mut bytes = rmq.encode();
        assert_eq!(Checkpoint::decode(&bytes), rmq);
        // RocketMQ's StoreCheckpoint.flush rewrites bytes 0-39 only.
        write_i64(&mut bytes, PHYSIC_MSG_TIMESTAMP_AT, 1_700_000_009_000);
        let after = Checkpoint::decode(&bytes);
        assert_eq!(
            (after.flushed_offset, after.records_carry_crc),
            (None, false)
        );
        // A file from an rmq before the witness is trusted as before.
        let mut old = rmq.encode();
        write_i64(&mut old, RMQ_MAGIC_AT, RMQ_MAGIC_WITHOUT_WITNESS);
        write_i64(&mut old, RMQ_WITNESS_AT, 0);
        assert_eq!(Checkpoint::decode(&old).flushed_offset, Some(4096));
    }
}
