//! Grad mode: a thread-local switch that turns recording of ops on and off.

use std::cell::Cell;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// True if ops on tensors that require grad are recorded (the default).
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(Cell::get)
}

pub(crate) fn set_grad_enabled(on: bool) -> GradModeGuard {
    let prev = GRAD_ENABLED.with(|g| g.replace(on));
    GradModeGuard { prev, _not_send: std::marker::PhantomData }
}

/// Restores the previous grad mode when dropped. Returned by [`no_grad`] and
/// [`enable_grad`].
#[derive(Debug)]
#[must_use = "grad mode is restored when the guard drops"]
pub struct GradModeGuard {
    prev: bool,
    /// The mode is thread-local: the guard must drop on the thread that made it.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        GRAD_ENABLED.with(|g| g.set(self.prev));
    }
}

/// Turns recording off on this thread until the guard drops (PyTorch's `torch.no_grad()`).
///
/// ```
/// # use cotangent::{Tensor, autograd};
/// let x = Tensor::from_vec(vec![1.0f64], 1)?.with_requires_grad(true)?;
/// let y = {
///     let _guard = autograd::no_grad();
///     x.exp()?
/// };
/// assert!(!y.requires_grad());
/// # Ok::<(), cotangent::Error>(())
/// ```
pub fn no_grad() -> GradModeGuard {
    set_grad_enabled(false)
}

/// Turns recording on on this thread until the guard drops (inside a [`no_grad`] block).
pub fn enable_grad() -> GradModeGuard {
    set_grad_enabled(true)
}
