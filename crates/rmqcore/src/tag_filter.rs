//! Filtering a queue by tag: consume-queue entries are first compared by tag hash code
//! (cheap, may collide), then the record's actual tag is compared.

use std::collections::HashSet;

use crate::java_hash::java_string_hash;

#[derive(Debug, Clone)]
pub struct TagFilter {
    tags: HashSet<String>,
    codes: HashSet<i64>,
}

impl TagFilter {
    /// A filter for any of `tags`; `None` when the tags select everything (empty or `*`).
    pub fn new<S: AsRef<str>>(tags: impl IntoIterator<Item = S>) -> Option<TagFilter> {
        let tags: HashSet<String> = tags
            .into_iter()
            .flat_map(|tag| {
                tag.as_ref()
                    .split("||")
                    .map(|t| t.trim().to_string())
                    .collect::<Vec<_>>()
            })
            .filter(|tag| !tag.is_empty())
            .collect();
        if tags.is_empty() || tags.contains("*") {
            return None;
        }
        let codes = tags
            .iter()
            .map(|tag| i64::from(java_string_hash(tag)))
            .collect();
        Some(TagFilter { tags, codes })
    }

    pub fn matches_code(&self, tags_code: i64) -> bool {
        self.codes.contains(&tags_code)
    }

    pub fn matches_tag(&self, tag: Option<&[u8]>) -> bool {
        tag.is_some_and(|tag| self.tags.contains(String::from_utf8_lossy(tag).as_ref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rocketmq_expressions() {
        assert!(TagFilter::new(["*"]).is_none());
        assert!(TagFilter::new(Vec::<String>::new()).is_none());
        let filter = TagFilter::new(["TagA || TagB"]).unwrap();
        assert!(filter.matches_code(2_598_919));
        assert!(filter.matches_tag(Some(b"TagB")));
        assert!(!filter.matches_tag(Some(b"TagC")));
        assert!(!filter.matches_tag(None));
    }
}
