//! Where a store's tier lives: `s3://bucket/prefix`, and the object names under it
//! (format §7).

use object_store::path::Path as ObjectPath;

use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TierLocation {
    pub bucket: String,
    /// No leading or trailing `/`; may be empty.
    pub prefix: String,
}

impl TierLocation {
    pub fn parse(url: &str) -> Result<Self> {
        let invalid = |reason: &str| Error::invalid("tier_url", format!("{url:?}: {reason}"));
        let rest = url
            .strip_prefix("s3://")
            .ok_or_else(|| invalid("expected s3://bucket/prefix"))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.len() < 3 || bucket.len() > 63 {
            return Err(invalid("a bucket name has 3 to 63 characters"));
        }
        if !bucket
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        {
            return Err(invalid(
                "a bucket name has lowercase letters, digits, '-' and '.' only",
            ));
        }
        let prefix = prefix.trim_matches('/').to_string();
        if prefix.split('/').any(|part| part == "." || part == "..") {
            return Err(invalid("the prefix may not contain '.' or '..' parts"));
        }
        Ok(TierLocation {
            bucket: bucket.to_string(),
            prefix,
        })
    }

    pub fn url(&self) -> String {
        if self.prefix.is_empty() {
            format!("s3://{}", self.bucket)
        } else {
            format!("s3://{}/{}", self.bucket, self.prefix)
        }
    }

    fn under_prefix(&self, name: &str) -> ObjectPath {
        if self.prefix.is_empty() {
            ObjectPath::from(name)
        } else {
            ObjectPath::from(format!("{}/{name}", self.prefix))
        }
    }

    /// A commit-log segment keeps its local name (its 20-digit start offset).
    pub fn segment(&self, start_offset: u64) -> ObjectPath {
        self.under_prefix(&format!("commitlog/{start_offset:020}"))
    }

    /// A compacted index file keeps its name (its creation time, format §3.1).
    pub fn index_file(&self, name: &str) -> ObjectPath {
        self.under_prefix(&format!("index/{name}"))
    }

    /// A consume-queue file keeps its path under `consumequeue/`
    /// (`TieredQueueFile::key`).
    pub fn queue_file(&self, key: &str) -> ObjectPath {
        self.under_prefix(&format!("consumequeue/{key}"))
    }

    pub fn segments_prefix(&self) -> ObjectPath {
        self.under_prefix("commitlog")
    }

    /// How errors and status name an object.
    pub fn describe(&self, object: &ObjectPath) -> String {
        format!("s3://{}/{object}", self.bucket)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_into_bucket_and_prefix() {
        let location = TierLocation::parse("s3://my-bucket/shards/0/").unwrap();
        assert_eq!(location.bucket, "my-bucket");
        assert_eq!(location.prefix, "shards/0");
        assert_eq!(
            location.segment(1 << 30).to_string(),
            "shards/0/commitlog/00000000001073741824"
        );
        let bare = TierLocation::parse("s3://bucket").unwrap();
        assert_eq!(
            bare.segment(0).to_string(),
            "commitlog/00000000000000000000"
        );
        assert_eq!(bare.url(), "s3://bucket");
    }

    #[test]
    fn bad_urls_are_refused_with_the_reason() {
        for url in [
            "http://b/x",
            "s3://",
            "s3://UPPER/x",
            "s3://ab",
            "s3://bucket/../x",
        ] {
            let error = TierLocation::parse(url).unwrap_err().to_string();
            assert!(error.contains("tier_url"), "{url}: {error}");
        }
    }
}
