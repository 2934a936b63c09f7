//! The core differentiable ops (non-linalg), one family per file, each op's forward next
//! to its VJP.

pub(crate) mod binary;
pub(crate) mod cast;
pub(crate) mod complex;
pub(crate) mod index;
pub(crate) mod reduce;
pub(crate) mod shape;
pub(crate) mod sugar;
pub(crate) mod unary;
