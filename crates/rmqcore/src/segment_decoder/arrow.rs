//! Column buffers in Apache Arrow's layouts: variable-length values (offsets and data),
//! validity and boolean bitmaps, lists and maps of child columns.

/// Variable-length values: Arrow's `string` / `binary` layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarColumn {
    pub offsets: Vec<i32>,
    pub data: Vec<u8>,
}

impl Default for VarColumn {
    fn default() -> Self {
        VarColumn {
            offsets: vec![0],
            data: Vec::new(),
        }
    }
}

impl VarColumn {
    pub fn with_capacity(values: usize, bytes: usize) -> Self {
        let mut offsets = Vec::with_capacity(values + 1);
        offsets.push(0);
        VarColumn {
            offsets,
            data: Vec::with_capacity(bytes),
        }
    }

    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn value(&self, index: usize) -> &[u8] {
        let range = self.offsets[index] as usize..self.offsets[index + 1] as usize;
        &self.data[range]
    }

    pub(super) fn close_value(&mut self) {
        let end = i32::try_from(self.data.len()).expect("batch limits keep a column under 2 GiB");
        self.offsets.push(end);
    }

    pub fn push_bytes(&mut self, bytes: &[u8]) {
        self.data.extend_from_slice(bytes);
        self.close_value();
    }

    /// Push bytes as text, replacing invalid UTF-8.
    pub fn push_text(&mut self, bytes: &[u8]) {
        match std::str::from_utf8(bytes) {
            Ok(_) => self.data.extend_from_slice(bytes),
            Err(_) => self
                .data
                .extend_from_slice(String::from_utf8_lossy(bytes).as_bytes()),
        }
        self.close_value();
    }
}

/// Bits, least-significant first within each byte (Arrow's bitmap layout).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bitmap {
    pub bytes: Vec<u8>,
    pub len: usize,
}

impl Bitmap {
    pub fn push(&mut self, bit: bool) {
        if self.len.is_multiple_of(8) {
            self.bytes.push(0);
        }
        if bit {
            *self.bytes.last_mut().expect("a byte was pushed") |= 1 << (self.len % 8);
        }
        self.len += 1;
    }

    pub fn get(&self, index: usize) -> bool {
        self.bytes[index / 8] & (1 << (index % 8)) != 0
    }

    pub fn count_ones(&self) -> usize {
        self.bytes
            .iter()
            .map(|byte| byte.count_ones() as usize)
            .sum()
    }
}

/// A list of text values per row: Arrow's `list<string>` layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListColumn {
    pub offsets: Vec<i32>,
    pub values: VarColumn,
}

impl Default for ListColumn {
    fn default() -> Self {
        ListColumn {
            offsets: vec![0],
            values: VarColumn::default(),
        }
    }
}

impl ListColumn {
    pub fn close_row(&mut self) {
        let end = i32::try_from(self.values.len()).expect("batch limits keep a column under 2 GiB");
        self.offsets.push(end);
    }
}

/// Name/value text pairs per row: Arrow's `map<string, string>` layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapColumn {
    pub offsets: Vec<i32>,
    pub names: VarColumn,
    pub values: VarColumn,
}

impl Default for MapColumn {
    fn default() -> Self {
        MapColumn {
            offsets: vec![0],
            names: VarColumn::default(),
            values: VarColumn::default(),
        }
    }
}

impl MapColumn {
    pub fn close_row(&mut self) {
        let end = i32::try_from(self.names.len()).expect("batch limits keep a column under 2 GiB");
        self.offsets.push(end);
    }
}
