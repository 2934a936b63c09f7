//! Strided iteration over up to a few layouts of one shape.

use super::par;
use super::pool::{self, Pooled};

/// Calls `f` with the storage offsets of every element, in row-major order, for
/// `K` layouts sharing `dims` (given by their strides and base offsets). Dims of size 1
/// are dropped and dims that are contiguous in every layout are merged first, so the inner
/// loop is as long as possible. Only that inner loop is compiled per caller; the
/// odometer over the outer dims is [`Plan::rows`], compiled once per `K`.
#[inline]
pub(crate) fn walk<const K: usize>(
    dims: &[usize],
    strides: [&[usize]; K],
    offsets: [usize; K],
    mut f: impl FnMut([usize; K]),
) {
    let n: usize = dims.iter().product();
    if n == 0 {
        return;
    }
    let plan = Plan::new(dims, strides, offsets);
    let (inner, steps) = (plan.inner, plan.steps);
    plan.rows(0, n / inner, &mut |mut o| {
        for _ in 0..inner {
            f(o);
            for k in 0..K {
                o[k] += steps[k];
            }
        }
    });
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
    /// row-major order; the plan has `numel / inner` rows). A trait object, so that the
    /// odometer is compiled once per operand count rather than once per kernel.
    pub(crate) fn rows(&self, g0: usize, g1: usize, f: &mut dyn FnMut([usize; K])) {
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

/// An elementwise kernel over `K` operands, one output row at a time: `out` is the row
/// (its length the row's), whose elements read operand `k` from `offs[k]`, `steps[k]`
/// apart. Implementations specialise steps 1 and 0 (contiguous and broadcast rows) so
/// those loops vectorise.
///
/// The passes below take it as a trait object: the kernel's own code (its loops) is the
/// only part compiled once per elementwise function; the iteration over layouts, the
/// tiling and the split over threads are compiled once per operand count and output type.
pub(crate) trait RowKernel<U, const K: usize>: Sync {
    fn row(&self, out: &mut [U], offs: [usize; K], steps: [usize; K]);
}

/// Elements from which a pass that is one contiguous (or broadcast) row runs on all of
/// rayon's threads, when its caller allows it.
const PAR_ELEMS: usize = 1 << 16;

/// Elements per task of such a pass on all threads.
const PAR_CHUNK: usize = 1 << 14;

/// The elements of `K` same-shape layouts combined by `r`, in row-major order, in a
/// (possibly cached) buffer. A pass that is one row (every operand contiguous or
/// broadcast over the whole shape) is split over rayon's threads when `par` is set and
/// it is large; strided passes stay on one thread, as the walk they replace did: split
/// over 2 threads, the eigh backward at n = 256, made of many such passes on 65,536
/// elements, was slower in wall time on a loaded machine.
pub(crate) fn eval<U: Pooled, const K: usize>(
    dims: &[usize],
    strides: [&[usize]; K],
    offsets: [usize; K],
    r: &dyn RowKernel<U, K>,
    par: bool,
) -> Vec<U> {
    let n: usize = dims.iter().product();
    if n == 0 {
        return Vec::new();
    }
    let plan = Plan::new(dims, strides, offsets);
    let mut out = pool::overwritten(n, U::default());
    if plan.outer.is_empty() {
        one_row(&mut out, plan.offsets, plan.steps, r, par);
    } else {
        fill(&plan, r, &mut out);
    }
    out
}

/// [`eval`] for a pass known to be one row: the operands read from `offs`, `steps`
/// apart (each 0 or 1), `n` elements.
pub(crate) fn eval_row<U: Pooled, const K: usize>(
    n: usize,
    offs: [usize; K],
    steps: [usize; K],
    r: &dyn RowKernel<U, K>,
    par: bool,
) -> Vec<U> {
    if n == 0 {
        return Vec::new();
    }
    let mut out = pool::overwritten(n, U::default());
    one_row(&mut out, offs, steps, r, par);
    out
}

/// `out`, one row, on all threads if `par` and it is large.
fn one_row<U: Pooled, const K: usize>(
    out: &mut [U],
    offs: [usize; K],
    steps: [usize; K],
    r: &dyn RowKernel<U, K>,
    par: bool,
) {
    if par && out.len() >= PAR_ELEMS && rayon::current_num_threads() > 1 {
        par::for_each_chunk(out, PAR_CHUNK, |t, o| {
            let at = t * PAR_CHUNK;
            r.row(o, std::array::from_fn(|k| offs[k] + at * steps[k]), steps);
        });
    } else {
        r.row(out, offs, steps);
    }
}

/// Every row of `plan` into `out`, row by row or (see [`Plan::tiled`]) strip by strip.
fn fill<U, const K: usize>(plan: &Plan<K>, r: &dyn RowKernel<U, K>, out: &mut [U]) {
    let (inner, steps) = (plan.inner, plan.steps);
    let rows = out.len() / inner;
    if plan.tiled() {
        strips(plan, r, 0, rows, out);
        return;
    }
    let mut at = 0;
    plan.rows(0, rows, &mut |offs| {
        r.row(&mut out[at..at + inner], offs, steps);
        at += inner;
    });
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
fn strips<U, const K: usize>(
    plan: &Plan<K>,
    r: &dyn RowKernel<U, K>,
    g0: usize,
    g1: usize,
    out: &mut [U],
) {
    let (inner, steps) = (plan.inner, plan.steps);
    let mut c0 = 0;
    while c0 < inner {
        let len = STRIP.min(inner - c0);
        let mut at = c0;
        plan.rows(g0, g1, &mut |offs| {
            let offs = std::array::from_fn(|k| offs[k] + c0 * steps[k]);
            r.row(&mut out[at..at + len], offs, steps);
            at += inner;
        });
        c0 += len;
    }
}

/// [`eval`] on one thread into a fresh (uncached) vector: for buffers handed to users.
pub(crate) fn eval_fresh<U: Copy + Default, const K: usize>(
    dims: &[usize],
    strides: [&[usize]; K],
    offsets: [usize; K],
    r: &dyn RowKernel<U, K>,
) -> Vec<U> {
    let n: usize = dims.iter().product();
    let mut out = vec![U::default(); n];
    if n > 0 {
        let plan = Plan::new(dims, strides, offsets);
        fill(&plan, r, &mut out);
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

impl<T: Copy + Sync, U: Copy, F: Fn(T) -> U + Sync> RowKernel<U, 1> for MapRow<'_, T, F> {
    fn row(&self, out: &mut [U], [o]: [usize; 1], [s]: [usize; 1]) {
        let (v, f, len) = (self.v, &self.f, out.len());
        if len == 0 {
            return;
        }
        match s {
            1 => out.iter_mut().zip(&v[o..o + len]).for_each(|(d, &x)| *d = f(x)),
            0 => out.fill(f(v[o])),
            _ => out.iter_mut().zip(strided_run(v, o, len, s)).for_each(|(d, &x)| *d = f(x)),
        }
    }
}

/// `f` of each pair of elements of two operands.
pub(crate) struct ZipRow<'a, T, F> {
    pub(crate) a: &'a [T],
    pub(crate) b: &'a [T],
    pub(crate) f: F,
}

impl<T: Copy + Sync, U: Copy, F: Fn(T, T) -> U + Sync> RowKernel<U, 2> for ZipRow<'_, T, F> {
    fn row(&self, out: &mut [U], [i, j]: [usize; 2], st: [usize; 2]) {
        let (a, b, f, len) = (self.a, self.b, &self.f, out.len());
        if len == 0 {
            return;
        }
        match st {
            [1, 1] => {
                let (a, b) = (&a[i..i + len], &b[j..j + len]);
                for ((d, &x), &y) in out.iter_mut().zip(a).zip(b) {
                    *d = f(x, y);
                }
            }
            [1, 0] => {
                let y = b[j];
                out.iter_mut().zip(&a[i..i + len]).for_each(|(d, &x)| *d = f(x, y));
            }
            [0, 1] => {
                let x = a[i];
                out.iter_mut().zip(&b[j..j + len]).for_each(|(d, &y)| *d = f(x, y));
            }
            [0, 0] => out.fill(f(a[i], b[j])),
            [1, t] => {
                let b = strided_run(b, j, len, t);
                for ((d, &x), &y) in out.iter_mut().zip(&a[i..i + len]).zip(b) {
                    *d = f(x, y);
                }
            }
            [s, 1] => {
                let a = strided_run(a, i, len, s);
                for ((d, &x), &y) in out.iter_mut().zip(a).zip(&b[j..j + len]) {
                    *d = f(x, y);
                }
            }
            [s, t] => {
                for (e, d) in out.iter_mut().enumerate() {
                    *d = f(a[i + e * s], b[j + e * t]);
                }
            }
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
    fn row(&self, out: &mut [T], [i, j, k]: [usize; 3], st: [usize; 3]) {
        let (c, t, f, len) = (self.c, self.t, self.f, out.len());
        if len == 0 {
            return;
        }
        // an index, not a branch: the mask is unpredictable
        let pick = |(d, (&c, (&x, &y))): (&mut T, (&bool, (&T, &T)))| *d = [y, x][usize::from(c)];
        match st {
            [1, 1, 1] => {
                let (c, t, f) = (&c[i..i + len], &t[j..j + len], &f[k..k + len]);
                out.iter_mut().zip(c.iter().zip(t.iter().zip(f))).for_each(pick);
            }
            [1, 1, 0] => {
                let y = f[k];
                let (c, t) = (&c[i..i + len], &t[j..j + len]);
                for ((d, &c), &x) in out.iter_mut().zip(c).zip(t) {
                    *d = [y, x][usize::from(c)];
                }
            }
            [1, 0, 1] => {
                let x = t[j];
                let (c, f) = (&c[i..i + len], &f[k..k + len]);
                for ((d, &c), &y) in out.iter_mut().zip(c).zip(f) {
                    *d = [y, x][usize::from(c)];
                }
            }
            // one branch transposed (the mask and the other branch contiguous)
            [1, b, 1] if b > 1 => {
                let (c, t, f) = (&c[i..i + len], strided_run(t, j, len, b), &f[k..k + len]);
                out.iter_mut().zip(c.iter().zip(t.zip(f))).for_each(pick);
            }
            [1, 1, e] if e > 1 => {
                let (c, t, f) = (&c[i..i + len], &t[j..j + len], strided_run(f, k, len, e));
                out.iter_mut().zip(c.iter().zip(t.iter().zip(f))).for_each(pick);
            }
            [a, b, e] => {
                for (n, d) in out.iter_mut().enumerate() {
                    *d = [f[k + n * e], t[j + n * b]][usize::from(c[i + n * a])];
                }
            }
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
        plan.rows(0, 6, &mut |[o]| all.push(o));
        let mut want = Vec::new();
        walk(&dims[..2], [&st[..2]], [5], |[o]| want.push(o));
        assert_eq!(all, want);
        for g0 in 0..6 {
            for g1 in g0..=6 {
                let mut part = Vec::new();
                plan.rows(g0, g1, &mut |[o]| part.push(o));
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
            assert_eq!(eval(dims, [sa, sb], [oa, ob], &zip, false), want);
            assert_eq!(eval_fresh(dims, [sa, sb], [oa, ob], &zip), want);
            let w = WhereRow { c: &c, t: &v, f: &v };
            assert_eq!(eval(dims, [sb, sa, sb], [ob, oa, ob], &w, false), want_w);
            let mut want_m = Vec::new();
            walk(dims, [sa], [oa], |[i]| want_m.push(-v[i]));
            assert_eq!(eval(dims, [sa], [oa], &MapRow { v: &v, f: |x: f64| -x }, false), want_m);
        }
    }

    #[test]
    fn tiled_and_threaded_passes_match_the_walk() {
        // a transposed operand with rows of 130 (strips of 8 and a remainder of 2)
        let v: Vec<f64> = (0..2080).map(|i| f64::from(i).sin()).collect();
        let (dims, sa, sb): (&[usize], &[usize], &[usize]) = (&[16, 130], &[1, 16], &[130, 1]);
        let mut want = Vec::new();
        walk(dims, [sa, sb], [0, 0], |[i, j]| want.push(v[i] - 2.0 * v[j]));
        let zip = ZipRow { a: &v, b: &v, f: |x: f64, y: f64| x - 2.0 * y };
        assert_eq!(eval(dims, [sa, sb], [0, 0], &zip, false), want);
        assert_eq!(eval_fresh(dims, [sa, sb], [0, 0], &zip), want);
        // one long contiguous row split over threads, and two broadcast scalars
        let long: Vec<f64> = (0..100_003).map(|i| f64::from(i) * 0.25).collect();
        let m = MapRow { v: &long, f: |x: f64| x * x + 1.0 };
        let par = eval(&[100_003], [&[1]], [0], &m, true);
        assert_eq!(par, long.iter().map(|x| x * x + 1.0).collect::<Vec<_>>());
        let z = ZipRow { a: &long, b: &long, f: |x: f64, y: f64| x - y };
        assert_eq!(eval(&[3, 4], [&[0, 0], &[0, 0]], [7, 2], &z, true), vec![1.25; 12]);
    }
}
