//! Strided iteration over up to a few layouts of one shape.

/// Calls `f` with the storage offsets of every element, in row-major logical order, for
/// `K` layouts sharing `dims` (given by their strides and base offsets). Dims of size 1
/// are dropped and dims that are contiguous in every layout are merged first, so the inner
/// loop is as long as possible.
#[inline]
pub(crate) fn walk<const K: usize>(
    dims: &[usize],
    strides: [&[usize]; K],
    offsets: [usize; K],
    mut f: impl FnMut([usize; K]),
) {
    if dims.contains(&0) {
        return;
    }
    // coalesce
    let mut cd: Vec<usize> = Vec::with_capacity(dims.len());
    let mut cs: Vec<[usize; K]> = Vec::with_capacity(dims.len());
    for (i, &d) in dims.iter().enumerate() {
        if d == 1 {
            continue;
        }
        let s: [usize; K] = std::array::from_fn(|k| strides[k][i]);
        if let (Some(ld), Some(ls)) = (cd.last_mut(), cs.last_mut()) {
            if (0..K).all(|k| ls[k] == s[k] * d) {
                *ld *= d;
                *ls = s;
                continue;
            }
        }
        cd.push(d);
        cs.push(s);
    }
    let rank = cd.len();
    if rank == 0 {
        f(offsets);
        return;
    }
    let inner = cd[rank - 1];
    let inner_s = cs[rank - 1];
    let mut idx = vec![0usize; rank - 1];
    let mut base = offsets;
    loop {
        let mut o = base;
        for _ in 0..inner {
            f(o);
            for k in 0..K {
                o[k] += inner_s[k];
            }
        }
        let mut d = rank - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            for k in 0..K {
                base[k] += cs[d][k];
            }
            if idx[d] < cd[d] {
                break;
            }
            for k in 0..K {
                base[k] -= cs[d][k] * cd[d];
            }
            idx[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::walk;

    #[test]
    fn walks_transposed_and_broadcast_layouts() {
        // a 2x3 transposed view of a 3x2 buffer, and a broadcast row
        let mut seen = Vec::new();
        walk(&[2, 3], [&[1, 2], &[0, 1]], [0, 10], |[a, b]| seen.push((a, b)));
        assert_eq!(seen, vec![(0, 10), (2, 11), (4, 12), (1, 10), (3, 11), (5, 12)]);
        let mut n = 0;
        walk(&[], [&[]], [7], |[o]| {
            assert_eq!(o, 7);
            n += 1;
        });
        assert_eq!(n, 1);
        walk(&[3, 0], [&[0, 1]], [0], |_| unreachable!());
    }
}
