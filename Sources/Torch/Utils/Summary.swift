/// torchsummary's model table (`from torchsummary import summary`), as `summary(model, (2,))` prints it.
///
/// Runs the model once on a random batch of 2 (so BatchNorm works, as torchsummary does) with a
/// forward hook on every module except containers (`Sequential`, `ModuleList`) and the model
/// itself, then lists each hooked call in call order as `<Type>-<n>` with its output shape
/// (the batch shown as `batchSize`, -1 by default) and its `weight` + `bias` element count.
/// The memory estimates assume 4 bytes a number, like torchsummary.
///
/// ```swift
/// let model = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
/// summary(model, [2])
/// // ----------------------------------------------------------------
/// //         Layer (type)               Output Shape         Param #
/// // ================================================================
/// //             Linear-1                    [-1, 8]              24
/// // ...
/// ```
/// - Parameters:
///   - model: the network; it runs one forward pass (in its current mode, recording autograd,
///     updating BatchNorm statistics in training mode, as torchsummary does).
///   - inputSize: one input's shape without the batch dimension.
///   - batchSize: the batch size shown in the table and used for "Input size" (-1: shown as -1).
///   - device: "cpu" or "cuda"; as torchsummary, "cuda" falls back to the CPU when no GPU is available.
///   - dtypes: the input's dtype (default float32); an integer dtype gives an all-zero input, as
///     torchsummary's `.type(...)` cast of `torch.rand` does.
///   - printed: print the table (the default); it is returned either way.
/// - Returns: the printed text (every line ends with a newline).
@discardableResult
public func summary(_ model: nn.Module, _ inputSize: [Int], batchSize: Int = -1, device: String = "cpu",
                    dtypes: [DType]? = nil, printed: Bool = true) -> String {
    let text = ModelSummary(model, inputSize: inputSize, batchSize: batchSize, device: device,
                            dtype: dtypes?.first ?? .float32).text
    if printed { print(text, terminator: "") }
    return text
}

/// `summary(model, inputSize: [2])`, the labelled spelling of ``summary(_:_:batchSize:device:dtypes:printed:)``.
@discardableResult
public func summary(_ model: nn.Module, inputSize: [Int], batchSize: Int = -1, device: String = "cpu",
                    dtypes: [DType]? = nil, printed: Bool = true) -> String {
    summary(model, inputSize, batchSize: batchSize, device: device, dtypes: dtypes, printed: printed)
}

extension utils {
    /// torchsummary's table; see ``summary(_:_:batchSize:device:dtypes:printed:)``.
    @discardableResult
    public static func summary(_ model: nn.Module, _ inputSize: [Int], batchSize: Int = -1, device: String = "cpu",
                               dtypes: [DType]? = nil, printed: Bool = true) -> String {
        Torch.summary(model, inputSize, batchSize: batchSize, device: device, dtypes: dtypes, printed: printed)
    }
}

/// One run of the model with hooks, and the table built from what the hooks saw.
struct ModelSummary {
    struct Row {
        var name: String
        var outputShape: [Int]
        var params: Int
        /// nil when the module has no `weight` (torchsummary then leaves it out of the trainable count).
        var trainable: Bool?
    }

    var rows: [Row] = []
    let inputSize: [Int]
    let batchSize: Int

    init(_ model: nn.Module, inputSize: [Int], batchSize: Int, device: String, dtype: DType) {
        let dev = device.lowercased()
        precondition(dev == "cuda" || dev == "cpu", "summary: Input device is not valid, please specify 'cuda' or 'cpu' (got '\(device)')")
        precondition(inputSize.allSatisfy { $0 > 0 }, "summary: input size must be positive (got \(inputSize))")
        self.inputSize = inputSize
        self.batchSize = batchSize
        var collected: [Row] = []
        var handles: [nn.RemovableHandle] = []
        for m in model.modules() where m !== model && !(m is nn.Sequential) && !(m is nn.ModuleList) {
            handles.append(m.registerForwardHook { module, _, output in
                var shape = output.shape
                if !shape.isEmpty { shape[0] = batchSize }
                let own = Dictionary(module.localParameters().map { ($0.0, $0.1 as Tensor) } + module.localBuffers(),
                                     uniquingKeysWith: { a, _ in a })
                var params = 0
                var trainable: Bool?
                if let w = own["weight"] { params += w.numel; trainable = w.requiresGrad }
                if let b = own["bias"] { params += b.numel }
                collected.append(Row(name: "\(module.typeName)-\(collected.count + 1)", outputShape: shape,
                                     params: params, trainable: trainable))
                return nil
            })
        }
        defer { handles.forEach { $0.remove() } }
        // A batch of 2 for BatchNorm, as torchsummary.
        let x = torch.rand([2] + inputSize).to(dtype)
        _ = model(x)
        rows = collected
    }

    var text: String {
        let rule = String(repeating: "-", count: 64) + "\n", doubleRule = String(repeating: "=", count: 64) + "\n"
        func line(_ a: String, _ b: String, _ c: String) -> String { pad(a, 20) + "  " + pad(b, 25) + " " + pad(c, 15) + "\n" }
        var s = rule + line("Layer (type)", "Output Shape", "Param #") + doubleRule
        var totalParams = 0, trainableParams = 0, totalOutput = 0
        for r in rows {
            s += line(r.name, "[" + r.outputShape.map(String.init).joined(separator: ", ") + "]", groupedThousands(r.params))
            totalParams += r.params
            totalOutput += r.outputShape.reduce(1, *)
            if r.trainable == true { trainableParams += r.params }
        }
        let mb = 1024.0 * 1024.0
        let inputMB = Swift.abs(Double(inputSize.reduce(1, *) * batchSize) * 4.0 / mb)
        let outputMB = Swift.abs(2.0 * Double(totalOutput) * 4.0 / mb)
        let paramsMB = Swift.abs(Double(totalParams) * 4.0 / mb)
        let totalMB = paramsMB + outputMB + inputMB
        s += doubleRule
        s += "Total params: \(groupedThousands(totalParams))\n"
        s += "Trainable params: \(groupedThousands(trainableParams))\n"
        s += "Non-trainable params: \(groupedThousands(totalParams - trainableParams))\n"
        s += rule
        s += "Input size (MB): \(fixed2(inputMB))\n"
        s += "Forward/backward pass size (MB): \(fixed2(outputMB))\n"
        s += "Params size (MB): \(fixed2(paramsMB))\n"
        s += "Estimated Total Size (MB): \(fixed2(totalMB))\n"
        s += rule
        return s
    }
}

/// Right-aligns `s` in `width` columns (Python's `{:>width}`; longer strings are kept whole).
func pad(_ s: String, _ width: Int) -> String {
    s.count >= width ? s : String(repeating: " ", count: width - s.count) + s
}

/// Python's `"{:,}".format(n)`: 1234567 → "1,234,567".
func groupedThousands(_ n: Int) -> String {
    let digits = String(n.magnitude)
    var out = ""
    for (i, c) in digits.enumerated() {
        if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
        out.append(c)
    }
    return n < 0 ? "-" + out : out
}

/// Python's `"%0.2f" % x`.
func fixed2(_ x: Double) -> String { String(cFormat: "%0.2f", x) }
