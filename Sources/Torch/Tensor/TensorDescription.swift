/// `print(x)` shows PyTorch's repr, e.g. `tensor([1., 2.], requires_grad=True)`.
extension Tensor: CustomStringConvertible, CustomDebugStringConvertible {
    public var description: String {
        var extras: [String] = []
        if let fn = gradFn {
            extras.append("grad_fn=<\(fn.name)>")
        } else if _requiresGrad {
            extras.append("requires_grad=True")
        }
        // A GPU tensor prints from one host copy (the copy waits for the device, as PyTorch's printing does).
        let host = device == .cpu ? self : torch.noGrad { contiguousCopyToHost() }
        let intElement: ((Int) -> Int64)? = dtype == .int64 ? { i in
            host.storage.data.assumingMemoryBound(to: Int64.self)[host.storageOffset(ofLinearIndex: i)]
        } : nil
        let repr = TensorFormatter.repr(shape: shape, dtype: dtype, options: PrintOptions.current,
                                        element: { i in host.element(atLinearIndex: i) },
                                        intElement: intElement, extras: extras, device: device)
        return self is nn.Parameter ? "Parameter containing:\n" + repr : repr
    }

    public var debugDescription: String { description }
}

extension torch {
    /// Sets printing options like `torch.set_printoptions`.
    public static func setPrintOptions(precision: Int? = nil, threshold: Int? = nil, edgeItems: Int? = nil,
                                       lineWidth: Int? = nil, sciMode: Bool?? = nil) {
        var o = PrintOptions.current
        if let precision { o.precision = precision }
        if let threshold { o.threshold = threshold }
        if let edgeItems { o.edgeItems = edgeItems }
        if let lineWidth { o.lineWidth = lineWidth }
        if let sciMode { o.sciMode = sciMode }
        PrintOptions.current = o
    }
}
