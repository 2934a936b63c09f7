//! [`Layout`]: how a tensor's logical elements map to its storage (shape, strides, offset).
//! Views change only the layout; the storage is shared.

use crate::shape::{Dims, Shape};

/// Shape, strides (in elements) and offset of a tensor in its storage. Strides are
/// non-negative, as in PyTorch; a stride of 0 is a broadcast (expanded) dim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    shape: Shape,
    strides: Dims,
    offset: usize,
}

impl Layout {
    /// The row-major contiguous layout of `shape` at offset 0.
    pub fn contiguous(shape: Shape) -> Layout {
        let strides = shape.strides_contiguous();
        Layout { shape, strides, offset: 0 }
    }

    /// A layout from its parts. The caller guarantees every element is inside the storage.
    pub(crate) fn new(shape: Shape, strides: impl Into<Dims>, offset: usize) -> Layout {
        let strides = strides.into();
        debug_assert_eq!(shape.rank(), strides.len());
        Layout { shape, strides, offset }
    }

    /// The shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The dims.
    pub fn dims(&self) -> &[usize] {
        self.shape.dims()
    }

    /// The strides, in elements.
    pub fn strides(&self) -> &[usize] {
        &self.strides
    }

    /// The offset of the first element, in elements.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The rank.
    pub fn rank(&self) -> usize {
        self.strides.len()
    }

    /// The number of elements.
    pub fn numel(&self) -> usize {
        self.shape.numel()
    }

    /// True if the elements are stored row-major without gaps (dims of size 1 ignored).
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1usize;
        for (&d, &s) in self.shape.dims().iter().zip(self.strides.iter()).rev() {
            if d == 1 {
                continue;
            }
            if d == 0 {
                return true;
            }
            if s != expected {
                return false;
            }
            expected *= d;
        }
        true
    }

    /// If contiguous, the range of storage the elements occupy (`0..0` when empty: an
    /// empty view may have an offset past the end of an empty buffer).
    pub fn contiguous_range(&self) -> Option<std::ops::Range<usize>> {
        let n = self.numel();
        self.is_contiguous().then(|| if n == 0 { 0..0 } else { self.offset..self.offset + n })
    }

    /// True if every element is the one at the offset (all strides zero, not empty): a
    /// scalar expanded, such as the cotangent of a sum.
    pub(crate) fn is_scalar_broadcast(&self) -> bool {
        self.numel() > 0 && self.strides.iter().all(|&s| s == 0)
    }

    /// If the elements fill one block of storage without gaps or overlaps in some order
    /// of the dims (a permuted contiguous layout: a transpose, a column-major matrix),
    /// that block. Contiguous layouts qualify; empty and broadcast ones do not.
    pub(crate) fn dense_range(&self) -> Option<std::ops::Range<usize>> {
        let n = self.numel();
        let dims = self.shape.dims();
        if n == 0 || dims.len() > 64 {
            return None;
        }
        // walk the dims from the smallest stride up: each must start where the ones
        // below it end
        let (mut used, mut expected) = (0u64, 1usize);
        let wanted =
            dims.iter().enumerate().filter(|(_, &d)| d > 1).fold(0u64, |m, (i, _)| m | 1 << i);
        while used != wanted {
            let next = (0..dims.len())
                .find(|&i| wanted & !used & (1 << i) != 0 && self.strides[i] == expected)?;
            used |= 1 << next;
            expected *= dims[next];
        }
        Some(self.offset..self.offset + n)
    }

    /// For a dense but not contiguous layout ([`Layout::dense_range`]): the block as one
    /// flat contiguous dim, and the layout of a fresh buffer that keeps this one's order
    /// (same strides, offset 0). Elementwise kernels run on the flat block and their
    /// result takes the second layout, so a transposed input gives a transposed output.
    pub(crate) fn dense_flat(&self) -> Option<(Layout, Layout)> {
        if self.is_contiguous() {
            return None;
        }
        let r = self.dense_range()?;
        let flat = Layout::new(Shape::from(r.len()), [1], r.start);
        Some((flat, Layout::new(self.shape.clone(), self.strides.clone(), 0)))
    }

    /// One past the largest storage index this layout reaches (0 when empty).
    pub(crate) fn storage_extent(&self) -> usize {
        if self.numel() == 0 {
            return 0;
        }
        self.offset
            + self
                .shape
                .dims()
                .iter()
                .zip(self.strides.iter())
                .map(|(&d, &s)| (d - 1) * s)
                .sum::<usize>()
            + 1
    }

    /// Reorders dims: new dim `i` is old dim `perm[i]` (a validated permutation).
    pub(crate) fn permute(&self, perm: &[usize]) -> Layout {
        let dims: Dims = perm.iter().map(|&p| self.shape.dims()[p]).collect();
        let strides: Dims = perm.iter().map(|&p| self.strides[p]).collect();
        Layout::new(Shape::of(dims), strides, self.offset)
    }

    /// Elements `start..start+len` of `dim`, every `step`-th.
    pub(crate) fn slice(&self, dim: usize, start: usize, len: usize, step: usize) -> Layout {
        let mut dims = Dims::from_slice(self.shape.dims());
        let mut strides = self.strides.clone();
        let offset = if len == 0 { self.offset } else { self.offset + start * strides[dim] };
        dims[dim] = len;
        // saturating: a step past the end leaves one element, whose stride is never used
        strides[dim] = strides[dim].saturating_mul(step);
        Layout::new(Shape::of(dims), strides, offset)
    }

    /// Index `index` of `dim`, removing the dim.
    pub(crate) fn select(&self, dim: usize, index: usize) -> Layout {
        let mut dims = Dims::from_slice(self.shape.dims());
        let mut strides = self.strides.clone();
        let offset = self.offset + index * strides[dim];
        dims.remove(dim);
        strides.remove(dim);
        Layout::new(Shape::of(dims), strides, offset)
    }

    /// Broadcast to `shape` (validated): new leading dims and stretched dims of size 1 get
    /// stride 0.
    pub(crate) fn broadcast_to(&self, shape: &Shape) -> Layout {
        let n = shape.rank();
        let k = self.rank();
        let mut strides = Dims::zeros(n);
        for i in 0..k {
            let j = n - k + i;
            if self.shape.dims()[i] == shape.dims()[j] {
                strides[j] = self.strides[i];
            }
        }
        Layout::new(shape.clone(), strides, self.offset)
    }

    /// The diagonal of dims `d1`, `d2` (distinct, resolved) with an offset: a new last dim.
    pub(crate) fn diagonal(&self, offset: isize, d1: usize, d2: usize) -> Layout {
        let (n1, n2) = (self.shape.dims()[d1], self.shape.dims()[d2]);
        let (s1, s2) = (self.strides[d1], self.strides[d2]);
        let (len, start) = if offset >= 0 {
            let o = offset as usize;
            (n1.min(n2.saturating_sub(o)), if n2 > o { o * s2 } else { 0 })
        } else {
            let o = offset.unsigned_abs();
            (n2.min(n1.saturating_sub(o)), if n1 > o { o * s1 } else { 0 })
        };
        let mut dims = Dims::default();
        let mut strides = Dims::default();
        for i in 0..self.rank() {
            if i != d1 && i != d2 {
                dims.push(self.shape.dims()[i]);
                strides.push(self.strides[i]);
            }
        }
        dims.push(len);
        strides.push(s1 + s2);
        let off = if len == 0 { self.offset } else { self.offset + start };
        Layout::new(Shape::of(dims), strides, off)
    }

    /// A view of the same elements with another shape of the same numel, if the strides
    /// allow it (PyTorch's `computeStride`); `None` means a copy is needed.
    pub(crate) fn reshape(&self, shape: &Shape) -> Option<Layout> {
        if self.is_contiguous() {
            return Some(Layout::new(shape.clone(), shape.strides_contiguous(), self.offset));
        }
        let old_d = self.shape.dims();
        let old_s = &self.strides;
        let new_d = shape.dims();
        if self.numel() == 0 {
            return Some(Layout::new(shape.clone(), shape.strides_contiguous(), self.offset));
        }
        let mut new_s = Dims::zeros(new_d.len());
        let mut view_d = new_d.len() as isize - 1;
        let mut chunk_base_stride = *old_s.last().unwrap_or(&1);
        let mut tensor_numel = 1usize;
        let mut view_numel = 1usize;
        for tensor_d in (0..old_d.len()).rev() {
            tensor_numel *= old_d[tensor_d];
            if tensor_d == 0
                || (old_d[tensor_d - 1] != 1
                    && old_s[tensor_d - 1] != tensor_numel * chunk_base_stride)
            {
                while view_d >= 0 && (view_numel < tensor_numel || new_d[view_d as usize] == 1) {
                    new_s[view_d as usize] = view_numel * chunk_base_stride;
                    view_numel *= new_d[view_d as usize];
                    view_d -= 1;
                }
                if view_numel != tensor_numel {
                    return None;
                }
                if tensor_d > 0 {
                    chunk_base_stride = old_s[tensor_d - 1];
                    tensor_numel = 1;
                    view_numel = 1;
                }
            }
        }
        if view_d != -1 {
            return None;
        }
        Some(Layout::new(shape.clone(), new_s, self.offset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transposed_reshape_needs_a_copy() {
        let l = Layout::contiguous(Shape::from((2, 3)));
        let t = l.permute(&[1, 0]);
        assert!(!t.is_contiguous());
        assert!(t.reshape(&Shape::from(6)).is_none());
        // splitting a dim of a transposed layout is still a view
        let r = t.reshape(&Shape::from((3, 2, 1))).unwrap();
        assert_eq!(r.strides()[..2], [1, 3]);
    }

    #[test]
    fn diagonal_with_offsets() {
        let l = Layout::contiguous(Shape::from((3, 4)));
        let d = l.diagonal(1, 0, 1);
        assert_eq!((d.dims(), d.strides(), d.offset()), (&[3][..], &[5][..], 1));
        let d = l.diagonal(-2, 0, 1);
        assert_eq!((d.dims(), d.strides(), d.offset()), (&[1][..], &[5][..], 8));
        let d = l.diagonal(9, 0, 1);
        assert_eq!(d.dims(), &[0]);
    }
}
