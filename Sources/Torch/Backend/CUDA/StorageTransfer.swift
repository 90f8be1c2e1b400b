import CCUDAShim

/// Whole storages between host and device, keeping views: checkpoints load to a GPU with tied weights still
/// tied, and save from a GPU through one host copy per storage.
enum StorageTransfer {
    /// A copy of `s` on `device` (the same bytes).
    static func moved(_ s: Storage, to device: Device) -> Storage {
        if s.device == device { return s }
        let out = Storage(byteCount: s.byteCount, device: device)
        if s.byteCount == 0 { return out }
        switch (s.isHost, device) {
        case (true, .cuda(let i)):
            let ctx = CUDARuntime.device(i)
            ctx.bind()
            CUDARuntime.check(stcu_dev_htod(out.deviceAddress, s.data, s.byteCount, ctx.stream), "cuMemcpyHtoDAsync")
        case (false, .cpu):
            guard case .cuda(let i) = s.device else { return out }
            let ctx = CUDARuntime.device(i)
            ctx.bind()
            CUDARuntime.check(stcu_dev_dtoh(out.data, s.deviceAddress, s.byteCount, ctx.stream), "cuMemcpyDtoHAsync")
            CUDARuntime.check(stcu_dev_sync(ctx.stream), "cuStreamSynchronize")
        default:
            return moved(moved(s, to: .cpu), to: device)
        }
        return out
    }

    /// `value` with each tensor's storage on `device(storage)`; tensors that shared a storage share its copy.
    static func mapping(_ value: StateValue, device: (Storage) -> Device) -> StateValue {
        var copies: [ObjectIdentifier: Storage] = [:]
        func map(_ v: StateValue) -> StateValue {
            switch v {
            case .tensor(let t):
                let id = ObjectIdentifier(t.storage)
                let s = copies[id] ?? moved(t.storage, to: device(t.storage))
                copies[id] = s
                let out = Tensor(storage: s, shape: t.shape, strides: t.strides, offset: t.storageOffset, dtype: t.dtype)
                if t.requiresGrad { out.requiresGrad = true }
                return .tensor(out)
            case .list(let l): return .list(l.map(map))
            case .tuple(let l): return .tuple(l.map(map))
            case .dict(let d): return .dict(d.map { (key: $0.key, value: map($0.value)) })
            default: return v
            }
        }
        return map(value)
    }
}
