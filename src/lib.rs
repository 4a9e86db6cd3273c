//! sessfs: every AI coding-agent session on the machine as one read-only tree of plain files.
//!
//! The layers, from the disk up:
//! - [`names`], [`terminal`] and [`buf`] are the small helpers beneath both of the next two
//!   (ids as directory names, terminal control out of text, rendered files' buffers);
//! - [`stores`] read native formats into the unified [`model`];
//! - [`render`] turns a session into the bytes of its files (big ones [`spill`] to disk);
//! - [`cache`] keeps rendered files within a byte budget and remembers sizes;
//! - [`tree`] is the virtual filesystem (names, inodes, attributes, reads) with no FUSE types;
//! - [`fuse`] is the thin adapter from the kernel's requests to [`tree`];
//! - [`search`] is the full-text index behind `sessfs search` and `search/`;
//! - [`cost`] aggregates usage over sessions (`sessfs cost`);
//! - [`cli`] is the command line; [`service`] installs the mount at login; [`shell`]
//!   completes its words;
//! - [`alloc`] is the process's allocator (rendered files churn through it).
//!
//! A module imports only those below it (`stores` and `render` never each other);
//! `scripts/check-imports` fails on any circle among them.
//!
//! These docs are for the people who work on sessfs (`cargo doc --document-private-items`),
//! so they link to private items freely.
#![allow(rustdoc::private_intra_doc_links)]

pub mod alloc;
pub mod buf;
pub mod cache;
pub mod cli;
pub mod cost;
pub mod diskcache;
pub mod export;
pub mod fuse;
pub mod model;
pub mod mount;
pub mod names;
pub mod pricing;
pub mod render;
pub mod search;
pub mod service;
pub mod shell;
pub mod spill;
pub mod stores;
pub mod terminal;
pub mod tree;
pub mod watch;

#[global_allocator]
static ALLOC: alloc::Alloc = alloc::Alloc;
