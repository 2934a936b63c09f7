//! Where a tensor lives and is computed: the device that tensors report, errors name,
//! and the backend seam dispatches on.

/// The device a tensor lives on. Only the CPU exists today; the enum is the seam for more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Device {
    /// Host memory, computed by the CPU backend.
    #[default]
    Cpu,
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
        }
    }
}
