//! Strided iteration over up to a few layouts of one shape.

use super::pool::{self, Pooled};

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

/// Where a row-major pass over `K` layouts of one shape reads: the dims coalesced as in
/// [`walk`], split into the innermost one (a row of `inner` elements, `steps[k]` apart
/// in operand `k`) and the outer ones, which an odometer steps through row by row.
#[derive(Debug)]
pub(crate) struct Plan<const K: usize> {
    outer: Vec<usize>,
    outer_strides: Vec<[usize; K]>,
    inner: usize,
    steps: [usize; K],
    offsets: [usize; K],
}

impl<const K: usize> Plan<K> {
    /// The plan of a layout-set with at least one element.
    pub(crate) fn new(dims: &[usize], strides: [&[usize]; K], offsets: [usize; K]) -> Plan<K> {
        let mut outer: Vec<usize> = Vec::with_capacity(dims.len());
        let mut outer_strides: Vec<[usize; K]> = Vec::with_capacity(dims.len());
        for (i, &d) in dims.iter().enumerate() {
            if d == 1 {
                continue;
            }
            let s: [usize; K] = std::array::from_fn(|k| strides[k][i]);
            if let (Some(ld), Some(ls)) = (outer.last_mut(), outer_strides.last_mut()) {
                if (0..K).all(|k| ls[k] == s[k] * d) {
                    *ld *= d;
                    *ls = s;
                    continue;
                }
            }
            outer.push(d);
            outer_strides.push(s);
        }
        let (inner, steps) = match (outer.pop(), outer_strides.pop()) {
            (Some(d), Some(s)) => (d, s),
            _ => (1, [0; K]),
        };
        Plan { outer, outer_strides, inner, steps, offsets }
    }

    /// Calls `f` with the operands' offsets of the first element of rows `g0..g1` (in
    /// row-major order; the plan has `numel / inner` rows).
    #[inline]
    pub(crate) fn rows(&self, g0: usize, g1: usize, mut f: impl FnMut([usize; K])) {
        let (dims, strides) = (&self.outer, &self.outer_strides);
        let r = dims.len();
        let mut idx = vec![0usize; r];
        let mut base = self.offsets;
        let mut rest = g0;
        for d in (0..r).rev() {
            idx[d] = rest % dims[d];
            rest /= dims[d];
            for k in 0..K {
                base[k] += idx[d] * strides[d][k];
            }
        }
        for _ in g0..g1 {
            f(base);
            let mut d = r;
            while d > 0 {
                d -= 1;
                idx[d] += 1;
                for k in 0..K {
                    base[k] += strides[d][k];
                }
                if idx[d] < dims[d] {
                    break;
                }
                for k in 0..K {
                    base[k] -= strides[d][k] * dims[d];
                }
                idx[d] = 0;
            }
        }
    }
}

/// Where a row kernel writes: the end of a vector (row-major passes) or the next
/// elements of a slice (a strip of a tiled pass).
pub(crate) trait Sink<U> {
    /// Appends the `len` items of `it`.
    fn put(&mut self, len: usize, it: impl Iterator<Item = U>);
}

impl<U> Sink<U> for Vec<U> {
    #[inline]
    fn put(&mut self, _len: usize, it: impl Iterator<Item = U>) {
        self.extend(it);
    }
}

/// The unwritten rest of an output slice.
struct Slot<'a, U>(&'a mut [U]);

impl<U> Sink<U> for Slot<'_, U> {
    #[inline]
    fn put(&mut self, len: usize, it: impl Iterator<Item = U>) {
        let (head, rest) = std::mem::take(&mut self.0).split_at_mut(len);
        for (o, x) in head.iter_mut().zip(it) {
            *o = x;
        }
        self.0 = rest;
    }
}

/// An elementwise kernel over `K` operands, one output row at a time: the row's `len`
/// elements read operand `k` from `offs[k]`, `steps[k]` apart. Implementations
/// specialise steps 1 and 0 (contiguous and broadcast rows) so those loops vectorise.
pub(crate) trait RowKernel<U, const K: usize>: Sync {
    fn row<S: Sink<U>>(&self, out: &mut S, len: usize, offs: [usize; K], steps: [usize; K]);
}

/// The elements of `K` same-shape layouts combined by `r`, in row-major order, in a
/// (possibly cached) buffer, on the calling thread. (Strided passes stay on one thread,
/// as the walk they replace did: split over rayon's 2 threads, the eigh backward at
/// n = 256, made of many such passes on 65,536 elements, was slower in wall time on a
/// loaded machine; only contiguous passes are split, by the callers.)
pub(crate) fn eval<U, R, const K: usize>(
    dims: &[usize],
    strides: [&[usize]; K],
    offsets: [usize; K],
    r: &R,
) -> Vec<U>
where
    U: Pooled,
    R: RowKernel<U, K>,
{
    let n: usize = dims.iter().product();
    if n == 0 {
        return Vec::new();
    }
    let plan = Plan::new(dims, strides, offsets);
    let (inner, steps) = (plan.inner, plan.steps);
    if plan.tiled() {
        let mut out = pool::overwritten(n, U::default());
        strips(&plan, r, 0, n / inner, &mut out);
        return out;
    }
    let mut out = pool::take(n);
    plan.rows(0, n / inner, |offs| r.row(&mut out, inner, offs, steps));
    out
}

/// Output elements per strip of a tiled pass: one cache line of each of the (at most 8)
/// rows a transposed operand is read from, reused by the next output rows.
const STRIP: usize = 8;

impl<const K: usize> Plan<K> {
    /// True when an operand reads long rows (128 elements or more) with a stride of at
    /// least a cache line (a transposed matrix): the pass then goes strip by strip (see
    /// [`strips`]; on shorter rows the strips cost more than they save). Row by row,
    /// such an operand touches one line per element, and with a power-of-two stride all
    /// those lines fall in a few cache sets and evict each other before the next output
    /// row reuses them.
    fn tiled(&self) -> bool {
        self.inner >= 16 * STRIP && self.steps.iter().any(|&s| s >= STRIP)
    }
}

/// Rows `g0..g1` of `plan` into `out` (their elements in row-major order), in strips of
/// [`STRIP`] columns: all the rows' first columns, then the next ones.
fn strips<U, R: RowKernel<U, K>, const K: usize>(
    plan: &Plan<K>,
    r: &R,
    g0: usize,
    g1: usize,
    out: &mut [U],
) {
    let (inner, steps) = (plan.inner, plan.steps);
    let mut c0 = 0;
    while c0 < inner {
        let len = STRIP.min(inner - c0);
        let mut at = c0;
        plan.rows(g0, g1, |offs| {
            let mut s = Slot(&mut out[at..at + len]);
            r.row(&mut s, len, std::array::from_fn(|k| offs[k] + c0 * steps[k]), steps);
            at += inner;
        });
        c0 += len;
    }
}

/// [`eval`] on one thread into a fresh (uncached) vector: for buffers handed to users.
pub(crate) fn eval_fresh<U, R: RowKernel<U, K>, const K: usize>(
    dims: &[usize],
    strides: [&[usize]; K],
    offsets: [usize; K],
    r: &R,
) -> Vec<U> {
    let n: usize = dims.iter().product();
    let mut out = Vec::with_capacity(n);
    if n > 0 {
        let plan = Plan::new(dims, strides, offsets);
        let (inner, steps) = (plan.inner, plan.steps);
        plan.rows(0, n / inner, |offs| r.row(&mut out, inner, offs, steps));
    }
    out
}

/// The `len` elements of `v` from `o`, `s` apart (`s` > 0).
#[inline]
fn strided_run<T>(v: &[T], o: usize, len: usize, s: usize) -> impl Iterator<Item = &T> {
    v[o..=o + (len - 1) * s].iter().step_by(s)
}

/// `f` of each element of one operand.
pub(crate) struct MapRow<'a, T, F> {
    pub(crate) v: &'a [T],
    pub(crate) f: F,
}

impl<T: Copy + Sync, U: Clone, F: Fn(T) -> U + Sync> RowKernel<U, 1> for MapRow<'_, T, F> {
    #[inline]
    fn row<S: Sink<U>>(&self, out: &mut S, len: usize, [o]: [usize; 1], [s]: [usize; 1]) {
        let (v, f) = (self.v, &self.f);
        match s {
            1 => out.put(len, v[o..o + len].iter().map(|&x| f(x))),
            0 => out.put(len, std::iter::repeat_n(f(v[o]), len)),
            _ => out.put(len, strided_run(v, o, len, s).map(|&x| f(x))),
        }
    }
}

/// `f` of each pair of elements of two operands.
pub(crate) struct ZipRow<'a, T, F> {
    pub(crate) a: &'a [T],
    pub(crate) b: &'a [T],
    pub(crate) f: F,
}

impl<T: Copy + Sync, U, F: Fn(T, T) -> U + Sync> RowKernel<U, 2> for ZipRow<'_, T, F> {
    #[inline]
    fn row<S: Sink<U>>(&self, out: &mut S, len: usize, [i, j]: [usize; 2], st: [usize; 2]) {
        let (a, b, f) = (self.a, self.b, &self.f);
        match st {
            [1, 1] => {
                out.put(len, a[i..i + len].iter().zip(&b[j..j + len]).map(|(&x, &y)| f(x, y)));
            }
            [1, 0] => {
                let y = b[j];
                out.put(len, a[i..i + len].iter().map(|&x| f(x, y)));
            }
            [0, 1] => {
                let x = a[i];
                out.put(len, b[j..j + len].iter().map(|&y| f(x, y)));
            }
            [1, t] => out.put(
                len,
                a[i..i + len].iter().zip(strided_run(b, j, len, t)).map(|(&x, &y)| f(x, y)),
            ),
            [s, 1] => {
                out.put(len, strided_run(a, i, len, s).zip(&b[j..j + len]).map(|(&x, &y)| f(x, y)));
            }
            [s, t] => out.put(len, (0..len).map(|e| f(a[i + e * s], b[j + e * t]))),
        }
    }
}

/// `t` where `c` holds, else `f` (`torch.where`), branch-free so it vectorises.
pub(crate) struct WhereRow<'a, T> {
    pub(crate) c: &'a [bool],
    pub(crate) t: &'a [T],
    pub(crate) f: &'a [T],
}

impl<T: Copy + Sync> RowKernel<T, 3> for WhereRow<'_, T> {
    #[inline]
    fn row<S: Sink<T>>(&self, out: &mut S, len: usize, [i, j, k]: [usize; 3], st: [usize; 3]) {
        let (c, t, f) = (self.c, self.t, self.f);
        // an index, not a branch: the mask is unpredictable
        let pick = |(&c, (&x, &y)): (&bool, (&T, &T))| [y, x][usize::from(c)];
        match st {
            [1, 1, 1] => {
                out.put(
                    len,
                    c[i..i + len].iter().zip(t[j..j + len].iter().zip(&f[k..k + len])).map(pick),
                );
            }
            [1, 1, 0] => {
                let y = f[k];
                out.put(
                    len,
                    c[i..i + len].iter().zip(&t[j..j + len]).map(|(&c, &x)| [y, x][usize::from(c)]),
                );
            }
            [1, 0, 1] => {
                let x = t[j];
                out.put(
                    len,
                    c[i..i + len].iter().zip(&f[k..k + len]).map(|(&c, &y)| [y, x][usize::from(c)]),
                );
            }
            // one branch transposed (the mask and the other branch contiguous)
            [1, b, 1] if b > 1 => out.put(
                len,
                c[i..i + len].iter().zip(strided_run(t, j, len, b).zip(&f[k..k + len])).map(pick),
            ),
            [1, 1, d] if d > 1 => out.put(
                len,
                c[i..i + len]
                    .iter()
                    .zip(t[j..j + len].iter().zip(strided_run(f, k, len, d)))
                    .map(pick),
            ),
            [a, b, d] => out.put(
                len,
                (0..len).map(|e| [f[k + e * d], t[j + e * b]][usize::from(c[i + e * a])]),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{eval, eval_fresh, walk, MapRow, Plan, WhereRow, ZipRow};

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

    #[test]
    fn plans_resume_at_any_row() {
        // a 2x3x4 view with strides (1, 2, 6): no dims merge; rows of 4
        let (dims, st) = ([2, 3, 4], [1, 2, 6]);
        let plan = Plan::new(&dims, [&st], [5]);
        let mut all = Vec::new();
        plan.rows(0, 6, |[o]| all.push(o));
        let mut want = Vec::new();
        walk(&dims[..2], [&st[..2]], [5], |[o]| want.push(o));
        assert_eq!(all, want);
        for g0 in 0..6 {
            for g1 in g0..=6 {
                let mut part = Vec::new();
                plan.rows(g0, g1, |[o]| part.push(o));
                assert_eq!(part, all[g0..g1]);
            }
        }
        // merged dims, size-1 dims dropped, a scalar
        let plan = Plan::new(&[2, 1, 3], [&[3, 7, 1], &[0, 0, 1]], [0, 0]);
        assert_eq!((plan.inner, plan.steps, plan.outer.len()), (3, [1, 1], 1));
        let plan = Plan::new(&[1, 1], [&[4, 4]], [9]);
        assert_eq!((plan.inner, plan.steps, plan.outer.len()), (1, [0], 0));
    }

    #[test]
    fn row_kernels_match_the_walk() {
        let v: Vec<f64> = (0..200).map(|i| f64::from(i) * 0.5 - 3.0).collect();
        let c: Vec<bool> = (0..200).map(|i| i % 3 == 0).collect();
        // (dims, strides of a, strides of b, offsets): transposed, broadcast, stepped
        type Case<'a> = (&'a [usize], [&'a [usize]; 2], [usize; 2]);
        let cases: [Case; 5] = [
            (&[4, 5], [&[1, 4], &[5, 1]], [0, 1]),
            (&[4, 5], [&[0, 1], &[1, 0]], [3, 2]),
            (&[3, 4, 5], [&[40, 2, 8], &[0, 5, 1]], [1, 0]),
            (&[6], [&[3], &[0]], [2, 7]),
            (&[2, 0, 3], [&[1, 1, 1], &[1, 1, 1]], [0, 0]),
        ];
        for (dims, [sa, sb], [oa, ob]) in cases {
            let mut want = Vec::new();
            let mut want_w = Vec::new();
            walk(dims, [sa, sb], [oa, ob], |[i, j]| {
                want.push(v[i] * 3.0 - v[j]);
                want_w.push(if c[j] { v[i] } else { v[j] });
            });
            let zip = ZipRow { a: &v, b: &v, f: |x: f64, y: f64| x * 3.0 - y };
            assert_eq!(eval(dims, [sa, sb], [oa, ob], &zip), want);
            assert_eq!(eval_fresh(dims, [sa, sb], [oa, ob], &zip), want);
            let w = WhereRow { c: &c, t: &v, f: &v };
            assert_eq!(eval(dims, [sb, sa, sb], [ob, oa, ob], &w), want_w);
            let mut want_m = Vec::new();
            walk(dims, [sa], [oa], |[i]| want_m.push(-v[i]));
            assert_eq!(eval(dims, [sa], [oa], &MapRow { v: &v, f: |x: f64| -x }), want_m);
        }
    }
}
