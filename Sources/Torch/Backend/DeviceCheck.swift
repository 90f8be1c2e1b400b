/// The one place where ops check that their tensors share a device. Dispatch functions call
/// `checkSameDevice` (or `commonDevice` where a CPU scalar may join a CUDA op) once, then
/// `switch out.device` to the CPU or CUDA kernel of their family (docs/architecture.md §7).

/// PyTorch's message when tensors of one op live on different devices.
func sameDeviceMessage(_ a: Device, _ b: Device) -> String {
    "Expected all tensors to be on the same device, but found at least two devices, \(a) and \(b)!"
}

/// Stops with PyTorch's message unless `a` and `b` live on one device. The all-CPU case is one
/// branch, so tiny CPU ops pay nothing measurable for it.
@inline(__always) func checkSameDevice(_ a: Tensor, _ b: Tensor) {
    if _fastPath(a.storage.isHost && b.storage.isHost) { return }
    if a.device != b.device { preconditionFailure(sameDeviceMessage(a.device, b.device)) }
}

/// `checkSameDevice` for three tensors.
@inline(__always) func checkSameDevice(_ a: Tensor, _ b: Tensor, _ c: Tensor) {
    checkSameDevice(a, b)
    checkSameDevice(a, c)
}

/// `checkSameDevice` for `out` and any number of optional operands (weights, biases, masks).
func checkSameDevice(_ out: Tensor, _ others: [Tensor?]) {
    for case let t? in others { checkSameDevice(out, t) }
}

/// The device an op on `a` and `b` runs on: theirs when they agree; a CPU scalar (0-dim) joins the other's
/// device, as in PyTorch; otherwise PyTorch's error.
@inline(__always) func commonDevice(_ a: Tensor, _ b: Tensor) -> Device {
    if _fastPath(a.storage.isHost && b.storage.isHost) { return .cpu }
    return commonDeviceSlow(a, b)
}

@inline(never) func commonDeviceSlow(_ a: Tensor, _ b: Tensor) -> Device {
    let da = a.device, db = b.device
    if da == db { return da }
    if da == .cpu && a.dim == 0 { return db }
    if db == .cpu && b.dim == 0 { return da }
    preconditionFailure(sameDeviceMessage(da, db))
}
