//! The file primitives the stores are built on: mapped files and fixed-size segments,
//! disk reservation, atomic replacement of small files, the store lock, page warming.

pub mod atomic_file;
pub mod disk_reservation;
pub mod mapped_file;
pub mod page_warmer;
pub mod segment;
pub mod segment_queue;
pub mod store_lock;
